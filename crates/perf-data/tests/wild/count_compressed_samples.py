# Independent count of the records in a perf -z file (file or pipe mode): the
# payloads of COMPRESSED (81) / COMPRESSED2 (83) records concatenated, decompressed by the
# zstd tool, the records walked. See README.md.
import struct,sys,subprocess
f=open(sys.argv[1],'rb').read()
pipe = struct.unpack_from('<Q',f,8)[0]==16
if pipe: pos=16; end=len(f)
else:
    pos,size=struct.unpack_from('<QQ',f,40); end=pos+size
comp=b''; plain=0
while pos+8<=end:
    t,m,s=struct.unpack_from('<IHH',f,pos)
    if t==81: comp+=f[pos+8:pos+s]
    elif t==83: comp+=f[pos+16:pos+16+struct.unpack_from('<Q',f,pos+8)[0]]
    elif t==9: plain+=1
    if t==66 and pipe: s+= struct.unpack_from('<I',f,pos+8)[0]
    pos+=s
r=subprocess.run(['zstd','-dc'],input=comp,capture_output=True)
d=r.stdout
p=0; n={}
while p+8<=len(d):
    t,m,s=struct.unpack_from('<IHH',d,p)
    if s<8: break
    n[t]=n.get(t,0)+1
    p+=s
print(sys.argv[1], 'decompressed',len(d),'walked to',p,'zstd rc',r.returncode,'types',sorted(n.items()),'plain samples',plain)
