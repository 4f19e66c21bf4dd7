//! The resolver run on a [`Source`] held in memory: binaries, debug files, kernel symbols,
//! JIT maps, the vDSO and the machine's identity are all given by the test, so the names it
//! expects are exact, and a file from another host is shown to be named from nothing of this
//! one's.
//!
//! The binary is a tiny C program compiled at test time (`cc -g -O1`); it is served under
//! paths that do not exist on this machine, so every name found came through the source.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cpiflame_perf_data::abi::{callchain, misc, sample};
use cpiflame_perf_data::write::{sample_record, SampleFields, HOST_PID};
use cpiflame_perf_data::{
    parse_sample_record, BuildIdEntry, Endian, EventAttr, Meta, MmapRecord, RecordKind,
};
use cpiflame_unwind::address::{Avma, EntryAddress, StackFrame};
use cpiflame_unwind::{
    FrameKind, Machine, Options, Resolver, SharedBytes, Source, StackEntry, Unnamed,
};
use object::{Object, ObjectSymbol};

const PROGRAM: &str = r#"
static inline __attribute__((always_inline)) long twice(long x) { return x * 2 + 1; }
__attribute__((noinline)) long outer(long x) { return twice(x); }
__attribute__((noinline)) long leaf(long x) { return x ^ 0x5a; }
int main(int argc, char **argv) { (void)argv; return (int)(outer(argc) + leaf(argc)); }
"#;

/// Where the program is said to be; nothing is there on this machine.
const APP: &str = "/opt/cpiflame-memory-source/bin/tiny";
const PID: i32 = 4242;

/// Files and facts given by the test; records which paths the resolver asked for.
#[derive(Default)]
struct MemorySource {
    files: HashMap<PathBuf, Vec<u8>>,
    vdso: Option<Vec<u8>>,
    machine: Machine,
    asked: Mutex<Vec<PathBuf>>,
    /// Processes in a container: pid to (mount namespace, root).
    roots: HashMap<i32, (u64, PathBuf)>,
}

impl MemorySource {
    fn with(mut self, path: &str, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.insert(PathBuf::from(path), bytes.into());
        self
    }

    fn bytes(&self, path: &Path) -> io::Result<&[u8]> {
        self.asked.lock().unwrap().push(path.to_path_buf());
        self.files
            .get(path)
            .map(Vec::as_slice)
            .ok_or_else(|| io::ErrorKind::NotFound.into())
    }

    fn was_asked_for(&self, path: &str) -> bool {
        self.times_asked_for(path) > 0
    }

    fn times_asked_for(&self, path: &str) -> usize {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .filter(|p| *p == Path::new(path))
            .count()
    }
}

impl Source for MemorySource {
    fn map(&self, path: &Path) -> io::Result<SharedBytes> {
        Ok(SharedBytes::owned(self.bytes(path)?.to_vec()))
    }
    fn read_text(&self, path: &Path) -> io::Result<String> {
        String::from_utf8(self.bytes(path)?.to_vec())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
    fn vdso(&self) -> Option<SharedBytes> {
        self.vdso.clone().map(SharedBytes::owned)
    }
    fn machine(&self) -> Machine {
        self.machine.clone()
    }
    fn process_root(&self, pid: i32) -> Option<(u64, PathBuf)> {
        self.roots.get(&pid).cloned()
    }
}

fn this_machine() -> Machine {
    Machine {
        hostname: Some("memory-host".into()),
        os_release: Some("6.1.0-memory".into()),
        kernel_build_id: None,
    }
}

/// Header metadata of a recording made on `host`.
fn meta_from(host: &str) -> Meta {
    Meta {
        hostname: Some(host.into()),
        os_release: Some("6.1.0-memory".into()),
        arch: Some("x86_64".into()),
        ..Meta::default()
    }
}

/// The program, built into a fresh directory, and what to do with it: `None` when there is
/// no C compiler on this machine.
struct Built {
    dir: PathBuf,
    binary: Vec<u8>,
}

impl Drop for Built {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn build(test: &str) -> Option<Built> {
    let dir = std::env::temp_dir().join(format!(
        "cpiflame-unwind-memory-{}-{test}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tiny.c"), PROGRAM).unwrap();
    let status = std::process::Command::new("cc")
        .args(["-g", "-O1", "-Wl,--build-id", "-o", "tiny", "tiny.c"])
        .current_dir(&dir)
        .status();
    match status {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let _ = std::fs::remove_dir_all(&dir);
            // Skips locally, fails under CI=true (scripts/test.sh installs cc: package gcc).
            cpiflame_testkit::unavailable("no cc on this machine (package gcc)");
            return None;
        }
        Err(e) => panic!("cc: {e}"),
        Ok(s) => assert!(s.success(), "cc failed"),
    }
    let binary = std::fs::read(dir.join("tiny")).unwrap();
    Some(Built { dir, binary })
}

impl Built {
    /// Runs `tool args... ` in the build directory and returns the bytes of `output`.
    fn derive(&self, tool: &str, args: &[&str], output: &str) -> Vec<u8> {
        let status = std::process::Command::new(tool)
            .args(args)
            .current_dir(&self.dir)
            .status()
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(status.success(), "{tool} failed");
        std::fs::read(self.dir.join(output)).unwrap()
    }
}

/// The stated address (SVMA) of symbol `name`.
fn symbol(binary: &[u8], name: &str) -> u64 {
    let file = object::File::parse(binary).unwrap();
    file.symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("no symbol {name}"))
        .address()
}

fn build_id(binary: &[u8]) -> Vec<u8> {
    let file = object::File::parse(binary).unwrap();
    file.build_id().unwrap().expect("a build id").to_vec()
}

/// The code segment of the program (PIE: file offset 0x1000 at SVMA 0x1000) mapped at
/// `start`, as the kernel records it.
fn map_code(resolver: &mut Resolver, path: &[u8], start: u64) {
    resolver.observe(&code_mapping(path, start));
}

/// The record of [`map_code`].
fn code_mapping(path: &[u8], start: u64) -> RecordKind<'_> {
    RecordKind::Mmap(MmapRecord {
        pid: PID,
        tid: PID,
        addr: start,
        len: 0x1000,
        pgoff: 0x1000,
        path,
        build_id: None,
        prot: 5,
        executable: true,
        cpumode: misc::USER,
    })
}

/// Resolves a sample whose kernel-recorded call chain is `chain` (context markers included).
fn resolve(resolver: &mut Resolver, chain: &[u64]) -> Vec<StackEntry> {
    resolve_in(resolver, PID, chain)
}

/// [`resolve`] for a sample of process `pid`.
fn resolve_in(resolver: &mut Resolver, pid: i32, chain: &[u64]) -> Vec<StackEntry> {
    let spec = EventAttr {
        sample_type: sample::IP | sample::TID | sample::CALLCHAIN,
        ..EventAttr::default()
    };
    let fields = SampleFields {
        ip: chain.get(1).copied().unwrap_or(0),
        pid,
        tid: pid,
        callchain: chain.to_vec(),
        misc: if chain.first() == Some(&callchain::KERNEL) {
            misc::KERNEL
        } else {
            misc::USER
        },
        ..SampleFields::default()
    };
    let record = sample_record(&spec, &fields).unwrap();
    let sample = parse_sample_record(&record, 0, &spec, Endian::Little).unwrap();
    let mut out = Vec::new();
    resolver.resolve(&sample, &mut out);
    out
}

/// Each entry as (name, module, kind, address), after the final names are given.
fn named(resolver: &mut Resolver, stack: &[StackEntry]) -> Vec<(String, String, FrameKind, u64)> {
    resolver.finish_names();
    stack
        .iter()
        .map(|e| {
            let f = resolver.frame(e.frame);
            (
                f.name.to_string(),
                f.module.to_string(),
                f.kind,
                e.address.address().0,
            )
        })
        .collect()
}

fn frame(
    name: &str,
    module: &str,
    kind: FrameKind,
    address: u64,
) -> (String, String, FrameKind, u64) {
    (name.into(), module.into(), kind, address)
}

const START: u64 = 0x7f12_3456_7000;
/// The AVMA of SVMA 0: the mapping starts at file offset 0x1000, which the code segment
/// states at 0x1000.
const BASE: u64 = START - 0x1000;

#[test]
fn names_user_frames_of_a_binary_given_in_memory() {
    let Some(built) = build("binary") else { return };
    let (outer, leaf) = (
        symbol(&built.binary, "outer"),
        symbol(&built.binary, "leaf"),
    );
    let source = Arc::new(
        MemorySource {
            machine: this_machine(),
            ..MemorySource::default()
        }
        .with(APP, built.binary.clone()),
    );
    let mut resolver = Resolver::with_source(
        &meta_from("memory-host"),
        Options::default(),
        source.clone(),
    );
    map_code(&mut resolver, APP.as_bytes(), START);
    // The leaf in `leaf`; a return address just after `outer`'s first instruction (the
    // byte before it is looked up: the inlined `twice`, then `outer` itself).
    let stack = resolve(
        &mut resolver,
        &[callchain::USER, BASE + leaf + 2, BASE + outer + 1],
    );
    assert_eq!(
        named(&mut resolver, &stack),
        [
            frame("leaf", "tiny", FrameKind::User, BASE + leaf + 2),
            frame("twice", "tiny", FrameKind::Inline, BASE + outer + 1),
            frame("outer", "tiny", FrameKind::User, BASE + outer + 1),
        ]
    );
    // The entries say what kind of address each is: the leaf's instruction, named as it is,
    // and a return address (twice for its inlined frame), named by the byte before it.
    let kinds: Vec<EntryAddress> = stack.iter().map(|e| e.address).collect();
    let caller = EntryAddress::User(StackFrame::ReturnAddress(Avma(BASE + outer + 1)));
    assert_eq!(
        kinds,
        [
            EntryAddress::User(StackFrame::Instruction(Avma(BASE + leaf + 2))),
            caller,
            caller,
        ]
    );
    assert_eq!(caller.lookup(), Avma(BASE + outer));
    // Source lines are looked up where naming looked: one per frame named there, so an
    // export can pair them (the leaf; `twice`'s line in `outer`, then `outer`'s).
    for (entry, frames) in [(stack[0], 1), (stack[1], 2)] {
        let EntryAddress::User(frame) = entry.address else {
            panic!("a user frame")
        };
        let lines = resolver.source_lines(PID, frame);
        assert_eq!(lines.len(), frames, "{frame:?}");
        for line in lines {
            assert!(line.file.as_deref().is_some_and(|f| f.ends_with("tiny.c")));
            assert!(line.line.is_some_and(|l| l > 0));
        }
    }
    assert!(source.was_asked_for(APP));
    assert!(resolver.unnamed().is_empty());
}

#[test]
fn a_stripped_binary_is_named_from_its_debug_file_found_by_build_id() {
    let Some(built) = build("debug") else { return };
    let stripped = built.derive(
        "strip",
        &["--strip-all", "-o", "tiny.stripped", "tiny"],
        "tiny.stripped",
    );
    let debug = built.derive(
        "objcopy",
        &["--only-keep-debug", "tiny", "tiny.debug"],
        "tiny.debug",
    );
    let outer = symbol(&built.binary, "outer");
    let id = build_id(&stripped);
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let debug_path = format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..]);
    let source = Arc::new(
        MemorySource {
            machine: this_machine(),
            ..MemorySource::default()
        }
        .with(APP, stripped)
        .with(&debug_path, debug),
    );
    let mut meta = meta_from("memory-host");
    meta.build_ids.push(BuildIdEntry {
        pid: HOST_PID,
        misc: misc::USER,
        path: APP.as_bytes().to_vec(),
        build_id: id,
    });
    let mut resolver = Resolver::with_source(&meta, Options::default(), source.clone());
    map_code(&mut resolver, APP.as_bytes(), START);
    let stack = resolve(&mut resolver, &[callchain::USER, BASE + outer]);
    assert_eq!(
        named(&mut resolver, &stack),
        [
            frame("twice", "tiny", FrameKind::Inline, BASE + outer),
            frame("outer", "tiny", FrameKind::User, BASE + outer),
        ]
    );
    assert!(source.was_asked_for(&debug_path));
}

#[test]
fn unusable_files_give_module_and_file_offset() {
    let Some(built) = build("offsets") else {
        return;
    };
    let outer = symbol(&built.binary, "outer");
    let source = Arc::new(
        MemorySource {
            machine: this_machine(),
            ..MemorySource::default()
        }
        .with(APP, built.binary.clone()),
    );
    // The recording's build id is not the file's: the file must not name anything.
    let mut meta = meta_from("memory-host");
    meta.build_ids.push(BuildIdEntry {
        pid: HOST_PID,
        misc: misc::USER,
        path: APP.as_bytes().to_vec(),
        build_id: vec![0xee; 20],
    });
    let mut resolver = Resolver::with_source(&meta, Options::default(), source);
    map_code(&mut resolver, APP.as_bytes(), START);
    let gone = "/opt/cpiflame-memory-source/lib/libgone.so";
    map_code(&mut resolver, gone.as_bytes(), START + 0x10_0000);
    let stack = resolve(
        &mut resolver,
        &[callchain::USER, BASE + outer, START + 0x10_0000 + 0x234 + 1],
    );
    // The offset is in the file (mapping start + pgoff), of the address itself.
    assert_eq!(
        named(&mut resolver, &stack),
        [
            frame(
                &format!("tiny+{:#x}", outer),
                "tiny",
                FrameKind::User,
                BASE + outer
            ),
            frame(
                "libgone.so+0x1235",
                "libgone.so",
                FrameKind::User,
                START + 0x10_0235
            ),
        ]
    );
    assert_eq!(
        resolver.unnamed(),
        [
            Unnamed {
                path: APP.into(),
                reason: "build id does not match the recording".into(),
                frames: 1,
            },
            Unnamed {
                path: gone.into(),
                reason: "not found".into(),
                frames: 1,
            },
        ]
    );
}

const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81000100 t memory_helper
ffffffff81000200 D memory_data
ffffffffc0000000 t memory_mod_fn\t[memfs]
";

#[test]
fn kernel_frames_are_named_from_kallsyms_given_in_memory() {
    let source = Arc::new(
        MemorySource {
            machine: this_machine(),
            ..MemorySource::default()
        }
        .with("/proc/kallsyms", KALLSYMS),
    );
    let mut resolver = Resolver::with_source(
        &meta_from("memory-host"),
        Options::default(),
        source.clone(),
    );
    assert!(resolver.recorded_here());
    let stack = resolve(
        &mut resolver,
        &[
            callchain::KERNEL,
            0xffff_ffff_c000_0010,
            0xffff_ffff_8100_0101,
        ],
    );
    // The return address's byte before (0x...100) is still in memory_helper.
    assert_eq!(
        named(&mut resolver, &stack),
        [
            frame(
                "memory_mod_fn",
                "[memfs]",
                FrameKind::Kernel,
                0xffff_ffff_c000_0010
            ),
            frame(
                "memory_helper",
                "[kernel.kallsyms]",
                FrameKind::Kernel,
                0xffff_ffff_8100_0101
            ),
        ]
    );
    // Kernel addresses are named as they are, return addresses too.
    let kernel = stack[1].address;
    assert_eq!(kernel, EntryAddress::Kernel(Avma(0xffff_ffff_8100_0101)));
    assert_eq!(kernel.lookup(), kernel.address());
    assert!(source.was_asked_for("/proc/kallsyms"));
}

#[test]
fn a_file_from_another_host_is_named_from_nothing_of_this_one() {
    let Some(built) = build("elsewhere") else {
        return;
    };
    let leaf = symbol(&built.binary, "leaf");
    let jit = format!("/tmp/perf-{PID}.map");
    let source = Arc::new(
        MemorySource {
            machine: this_machine(),
            vdso: Some(built.binary.clone()),
            ..MemorySource::default()
        }
        .with("/proc/kallsyms", KALLSYMS)
        .with(&jit, "7f0000001000 40 jitted_fn\n"),
    );
    let mut resolver =
        Resolver::with_source(&meta_from("other-host"), Options::default(), source.clone());
    assert!(!resolver.recorded_here());
    map_code(&mut resolver, b"[vdso]", START);
    let stack = resolve(
        &mut resolver,
        &[
            callchain::KERNEL,
            0xffff_ffff_8100_0150,
            callchain::USER,
            BASE + leaf,
            0x7f00_0000_1011,
        ],
    );
    assert_eq!(
        named(&mut resolver, &stack),
        [
            frame(
                "[kernel]+0xffffffff81000150",
                "[kernel.kallsyms]",
                FrameKind::Kernel,
                0xffff_ffff_8100_0150
            ),
            frame(
                &format!("[vdso]+{:#x}", leaf),
                "[vdso]",
                FrameKind::User,
                BASE + leaf
            ),
            frame("[unknown]", "", FrameKind::User, 0x7f00_0000_1011),
        ]
    );
    assert!(!source.was_asked_for("/proc/kallsyms"));
    assert!(!source.was_asked_for(&jit));
}

#[test]
fn this_hosts_vdso_and_jit_map_name_a_file_recorded_here() {
    let Some(built) = build("here") else { return };
    let leaf = symbol(&built.binary, "leaf");
    let source = Arc::new(
        MemorySource {
            machine: this_machine(),
            vdso: Some(built.binary.clone()),
            ..MemorySource::default()
        }
        .with(
            &format!("/tmp/perf-{PID}.map"),
            "7f0000001000 40 jitted_fn\n",
        ),
    );
    let mut resolver = Resolver::with_source(&meta_from("memory-host"), Options::default(), source);
    map_code(&mut resolver, b"[vdso]", START);
    let stack = resolve(
        &mut resolver,
        &[callchain::USER, BASE + leaf, 0x7f00_0000_1011],
    );
    assert_eq!(
        named(&mut resolver, &stack),
        [
            frame("leaf", "[vdso]", FrameKind::User, BASE + leaf),
            frame(
                "jitted_fn",
                &format!("perf-{PID}.map"),
                FrameKind::Jit,
                0x7f00_0000_1011
            ),
        ]
    );
}

/// A process's JIT map is read once, when its first frame outside every mapping is named; a
/// process forked after that has its parent's memory and names from the parent's map (it has
/// none of its own here, and is not asked for one); an exec starts a new program, whose map
/// is read again.
#[test]
fn jit_maps_are_read_once_per_program_and_forks_keep_their_parents() {
    const CHILD: i32 = PID + 1;
    let parent_map = format!("/tmp/perf-{PID}.map");
    let child_map = format!("/tmp/perf-{CHILD}.map");
    let source = Arc::new(
        MemorySource {
            machine: this_machine(),
            ..MemorySource::default()
        }
        .with(&parent_map, "7f0000001000 40 jitted_fn\n"),
    );
    let mut resolver = Resolver::with_source(
        &meta_from("memory-host"),
        Options::default(),
        source.clone(),
    );
    let jitted = |resolver: &mut Resolver, pid: i32| {
        let stack = resolve_in(resolver, pid, &[callchain::USER, 0x7f00_0000_1010]);
        named(resolver, &stack)[0].0.clone()
    };
    assert_eq!(jitted(&mut resolver, PID), "jitted_fn");
    assert_eq!(jitted(&mut resolver, PID), "jitted_fn");
    assert_eq!(source.times_asked_for(&parent_map), 1);

    resolver.observe(&RecordKind::Fork {
        pid: CHILD,
        ppid: PID,
        tid: CHILD,
        ptid: PID,
    });
    assert_eq!(jitted(&mut resolver, CHILD), "jitted_fn");
    assert!(!source.was_asked_for(&child_map));

    resolver.observe(&RecordKind::Comm {
        pid: PID,
        tid: PID,
        name: b"tiny",
        exec: true,
    });
    assert_eq!(jitted(&mut resolver, PID), "jitted_fn");
    assert_eq!(source.times_asked_for(&parent_map), 2);
    // The child's exec: its own map now, which it does not have.
    resolver.observe(&RecordKind::Comm {
        pid: CHILD,
        tid: CHILD,
        name: b"tiny",
        exec: true,
    });
    assert_eq!(jitted(&mut resolver, CHILD), "[unknown]");
    assert!(source.was_asked_for(&child_map));
}

/// The name of kernel address 0xffffffff81000150 in a recording made on `host` whose kernel
/// (build id 0xab..) was mapped at `kernel_map`, with perf's build-id cache at `/cache`; and
/// whether `/proc/kallsyms` was read.
fn kernel_name_with(source: MemorySource, host: &str, kernel_map: Option<u64>) -> (String, bool) {
    let source = Arc::new(MemorySource {
        machine: this_machine(),
        ..source
    });
    let mut meta = meta_from(host);
    meta.build_ids.push(BuildIdEntry {
        pid: -1,
        misc: misc::KERNEL,
        path: b"[kernel.kallsyms]".to_vec(),
        build_id: vec![0xab; 20],
    });
    let options = Options {
        buildid_cache: Some(PathBuf::from("/cache")),
        ..Options::default()
    };
    let mut resolver = Resolver::with_source(&meta, options, source.clone());
    if let Some(start) = kernel_map {
        // perf's kernel map: from _text, at file offset _text.
        resolver.observe(&RecordKind::Mmap(MmapRecord {
            pid: -1,
            tid: 0,
            addr: start,
            len: u64::MAX - start,
            pgoff: start,
            path: b"[kernel.kallsyms]_text",
            build_id: None,
            prot: 0,
            executable: true,
            cpumode: misc::KERNEL,
        }));
    }
    let stack = resolve(&mut resolver, &[callchain::KERNEL, 0xffff_ffff_8100_0150]);
    let name = named(&mut resolver, &stack)[0].0.clone();
    (name, source.was_asked_for("/proc/kallsyms"))
}

#[test]
fn kernel_symbols_come_from_the_buildid_cache_only_when_it_matches_the_recording() {
    const CACHE: &str =
        "/cache/[kernel.kallsyms]/abababababababababababababababababababab/kallsyms";
    let running = "ffffffff81000000 T _text\nffffffff81000100 t running_helper\n";
    let cached = "ffffffff81000000 T _text\nffffffff81000100 t cached_helper\n";
    let with_module = format!("{cached}ffffffffc0000000 t memory_mod_fn\t[memfs]\n");
    let host = || MemorySource::default().with("/proc/kallsyms", running);

    // Recorded here, the cache's _text where the recording's kernel map starts, no modules:
    // the cached copy, and the kernel is not asked to generate /proc/kallsyms.
    let (name, asked) = kernel_name_with(
        host().with(CACHE, cached),
        "memory-host",
        Some(0xffff_ffff_8100_0000),
    );
    assert_eq!((name.as_str(), asked), ("cached_helper", false));
    // Another boot's copy (KASLR put _text elsewhere): the running kernel's symbols.
    let (name, asked) = kernel_name_with(
        host().with(CACHE, cached),
        "memory-host",
        Some(0xffff_ffff_9100_0000),
    );
    assert_eq!((name.as_str(), asked), ("running_helper", true));
    // No kernel map in the recording: nothing to check the copy against.
    let (name, _) = kernel_name_with(host().with(CACHE, cached), "memory-host", None);
    assert_eq!(name, "running_helper");
    // The copy has a module that is not loaded now: stale.
    let (name, _) = kernel_name_with(
        host().with(CACHE, with_module.as_str()),
        "memory-host",
        Some(0xffff_ffff_8100_0000),
    );
    assert_eq!(name, "running_helper");
    // ... or loaded elsewhere now.
    let elsewhere = "memfs 4096 0 - Live 0xffffffffc1000000\n";
    let (name, _) = kernel_name_with(
        host()
            .with(CACHE, with_module.as_str())
            .with("/proc/modules", elsewhere),
        "memory-host",
        Some(0xffff_ffff_8100_0000),
    );
    assert_eq!(name, "running_helper");
    // Addresses hidden (no privilege): where the module is cannot be checked.
    let hidden = "memfs 4096 0 - Live 0x0000000000000000\n";
    let (name, _) = kernel_name_with(
        host()
            .with(CACHE, with_module.as_str())
            .with("/proc/modules", hidden),
        "memory-host",
        Some(0xffff_ffff_8100_0000),
    );
    assert_eq!(name, "running_helper");
    // Loaded where the copy says: the copy.
    let same = "memfs 4096 0 - Live 0xffffffffc0000000\n";
    let (name, _) = kernel_name_with(
        host()
            .with(CACHE, with_module.as_str())
            .with("/proc/modules", same),
        "memory-host",
        Some(0xffff_ffff_8100_0000),
    );
    assert_eq!(name, "cached_helper");
    // A file from another host: this machine's copy says nothing of where that machine had
    // its modules; unnamed unless the user gives `--kallsyms`, even where `_text` matches.
    let (name, asked) = kernel_name_with(
        host().with(CACHE, cached),
        "other-host",
        Some(0xffff_ffff_8100_0000),
    );
    assert_eq!(
        (name.as_str(), asked),
        ("[kernel]+0xffffffff81000150", false)
    );
}

/// A container's process (in another mount namespace, still running): its binary is read
/// under its root (`/proc/PID/root/PATH`; nothing is at PATH on the host) when the recording's
/// build id checks it, and not without one (the pid may be another process's by now); its
/// JIT map is its own `/tmp/perf-NSPID.map`, by its pid in its pid namespace.
#[test]
fn a_containers_files_are_read_under_its_root() {
    let Some(built) = build("container") else {
        return;
    };
    let leaf = symbol(&built.binary, "leaf");
    let root = format!("/proc/{PID}/root");
    let inside = format!("{root}{APP}");
    let source = || {
        Arc::new(
            MemorySource {
                machine: this_machine(),
                roots: [(PID, (4026532000, PathBuf::from(&root)))].into(),
                ..MemorySource::default()
            }
            .with(&inside, built.binary.clone())
            .with(
                &format!("/proc/{PID}/status"),
                "Name:\tapp\nNSpid:\t4242\t7\n",
            )
            .with(
                &format!("{root}/tmp/perf-7.map"),
                "7f0000001000 40 jitted_in_container\n",
            ),
        )
    };
    let mut meta = meta_from("memory-host");
    meta.build_ids.push(BuildIdEntry {
        pid: HOST_PID,
        misc: misc::USER,
        build_id: build_id(&built.binary),
        path: APP.as_bytes().to_vec(),
    });
    let mut resolver = Resolver::with_source(&meta, Options::default(), source());
    map_code(&mut resolver, APP.as_bytes(), START);
    let stack = resolve(
        &mut resolver,
        &[callchain::USER, BASE + leaf, 0x7f00_0000_1011],
    );
    assert_eq!(
        named(&mut resolver, &stack),
        [
            frame("leaf", "tiny", FrameKind::User, BASE + leaf),
            frame(
                "jitted_in_container",
                &format!("perf-{PID}.map"),
                FrameKind::Jit,
                0x7f00_0000_1011
            ),
        ]
    );

    // Without a build id to check it, the file under the root is not read.
    let unchecked = source();
    let mut resolver = Resolver::with_source(
        &meta_from("memory-host"),
        Options::default(),
        unchecked.clone(),
    );
    map_code(&mut resolver, APP.as_bytes(), START);
    let stack = resolve(&mut resolver, &[callchain::USER, BASE + leaf]);
    assert_ne!(named(&mut resolver, &stack)[0].0, "leaf");
    assert!(!unchecked.was_asked_for(&inside));
    // While recording (the recorder's unwinder) it is.
    let recording = source();
    let mut unwinder = cpiflame_unwind::Unwinder::with_source(
        &meta_from("memory-host"),
        Options {
            unwind_only: true,
            recording_now: true,
            ..Options::default()
        },
        recording.clone(),
    );
    unwinder.observe(&code_mapping(APP.as_bytes(), START));
    assert!(recording.was_asked_for(&inside));
}
