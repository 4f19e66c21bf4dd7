"""Python ctypes smoke test of the C ABI: python3 smoke.py LIBRARY EVENTS."""
import ctypes
import json
import sys

lib = ctypes.CDLL(sys.argv[1])
events = sys.argv[2].encode()
u64, u32, c_int = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int
lib.cpiflame_markers_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(u64)]
lib.cpiflame_markers_register.argtypes = [u64, ctypes.c_char_p, ctypes.POINTER(u32)]
for f in ("start", "stop", "lap"):
    getattr(lib, f"cpiflame_markers_{f}").argtypes = [u64, u32]
lib.cpiflame_markers_stop_named.argtypes = [u64, ctypes.c_char_p]
lib.cpiflame_markers_report.argtypes = [
    u64, c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
lib.cpiflame_markers_close.argtypes = [u64]
lib.cpiflame_markers_last_error.restype = ctypes.c_char_p


def check(code, what):
    if code != 0:
        raise SystemExit(f"{what}: {code}: {lib.cpiflame_markers_last_error().decode()}")


m = u64()
check(lib.cpiflame_markers_open(events, ctypes.byref(m)), "open")
region = u32()
check(lib.cpiflame_markers_register(m, b"py-loop", ctypes.byref(region)), "register")
for i in range(100):
    check(lib.cpiflame_markers_start(m, region), "start")
    sum(range(1000))
    check(lib.cpiflame_markers_stop(m, region), "stop")

code = lib.cpiflame_markers_stop_named(m, b"never-started")
print(f"stop_named(never-started) => {code} | {lib.cpiflame_markers_last_error().decode()}")

needed = ctypes.c_size_t()
check(lib.cpiflame_markers_report(m, 1, None, 0, ctypes.byref(needed)), "report size")
buf = ctypes.create_string_buffer(needed.value)
check(lib.cpiflame_markers_report(m, 1, buf, needed.value, ctypes.byref(needed)), "report")
report = json.loads(buf.value)
loop = next(r for r in report["regions"] if r["name"] == "py-loop")
print(f"py-loop samples: {loop['samples']}")
print(f"events: {','.join(report['events'])}")
check(lib.cpiflame_markers_close(m), "close")
code = lib.cpiflame_markers_start(m, region)
print(f"start after close => {code} | {lib.cpiflame_markers_last_error().decode()}")
