use super::*;

/// A little-endian dump written record by record, as perf's jitdump specification lays it
/// out.
struct Writer(Vec<u8>);

impl Writer {
    fn new(machine: u32) -> Writer {
        let mut b = Vec::new();
        b.extend_from_slice(&0x4A69_5444u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&40u32.to_le_bytes());
        b.extend_from_slice(&machine.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&4242u32.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        Writer(b)
    }

    fn record(&mut self, kind: u32, time: u64, body: &[u8]) -> &mut Self {
        self.0.extend_from_slice(&kind.to_le_bytes());
        self.0
            .extend_from_slice(&(16 + body.len() as u32).to_le_bytes());
        self.0.extend_from_slice(&time.to_le_bytes());
        self.0.extend_from_slice(body);
        self
    }

    fn load(&mut self, time: u64, name: &str, addr: u64, code: &[u8], index: u64) -> &mut Self {
        let mut b = Vec::new();
        b.extend_from_slice(&4242u32.to_le_bytes());
        b.extend_from_slice(&4243u32.to_le_bytes());
        for v in [addr, addr, code.len() as u64, index] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        b.extend_from_slice(code);
        self.record(0, time, &b)
    }

    fn moved(&mut self, time: u64, old: u64, new: u64, size: u64, index: u64) -> &mut Self {
        let mut b = Vec::new();
        b.extend_from_slice(&4242u32.to_le_bytes());
        b.extend_from_slice(&4243u32.to_le_bytes());
        for v in [new, old, new, size, index] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        self.record(1, time, &b)
    }

    fn debug_info(&mut self, time: u64, addr: u64, lines: &[(u64, u32, &[u8])]) -> &mut Self {
        let mut b = Vec::new();
        b.extend_from_slice(&addr.to_le_bytes());
        b.extend_from_slice(&(lines.len() as u64).to_le_bytes());
        for (at, line, file) in lines {
            b.extend_from_slice(&at.to_le_bytes());
            b.extend_from_slice(&line.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes());
            b.extend_from_slice(file);
            b.push(0);
        }
        self.record(2, time, &b)
    }

    /// Unwinding info as perf, CPython and V8 lay it out: `.eh_frame`, then its header.
    fn unwinding_info(&mut self, time: u64, eh_frame: &[u8], hdr: &[u8]) -> &mut Self {
        let mut b = Vec::new();
        let size = (eh_frame.len() + hdr.len()) as u64;
        for v in [size, hdr.len() as u64, size] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(eh_frame);
        b.extend_from_slice(hdr);
        self.record(4, time, &b)
    }
}

/// CPython 3.13.0's trampoline (`sub $8,%rsp; call *%rcx; add $8,%rsp; ret`) and the unwind
/// data `-X perf_jit` wrote for it, byte for byte from a dump of this machine: a CIE, an FDE
/// whose code starts 16 bytes before the table (the code's 11 bytes rounded up to 16), then
/// the `.eh_frame_hdr`.
const TRAMPOLINE: [u8; 11] = [
    0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3,
];
const CPYTHON_EH_FRAME: &str = "1400000000000000017a5200017810011b0c070890010000\
                                140000001c000000d0ffffff0b00000000440e10460e0800";
const CPYTHON_EH_FRAME_HDR: &str = "011b033bccffffff01000000c0ffffffe8ffffff";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn loaded(dump: &JitDump) -> Vec<(u64, String, u64)> {
    dump.events
        .iter()
        .filter_map(|e| match &e.change {
            JitChange::Load(f) => Some((e.time, f.name.to_string(), f.addr)),
            JitChange::Unload(_) => None,
        })
        .collect()
}

#[test]
fn loads_moves_lines_and_unwind_tables_are_read_in_order() {
    let mut w = Writer::new(0);
    w.unwinding_info(10, &unhex(CPYTHON_EH_FRAME), &unhex(CPYTHON_EH_FRAME_HDR))
        .load(11, "py::fib:/app/fib.py", 0x7000, &TRAMPOLINE, 1)
        .debug_info(
            12,
            0x8000,
            &[
                (0x8000, 3, b"fib.js"),
                (0x8004, 4, b"\xff"),
                (0x8006, 5, b"\xee[\x01"),
            ],
        )
        .load(13, "JS:*fib /app/fib.js:1:13", 0x8000, &[0x90; 8], 2)
        .moved(20, 0x8000, 0x9000, 8, 2)
        .record(3, 30, &[]);
    let dump = JitDump::parse(&w.0).unwrap();
    assert_eq!(
        (dump.pid, dump.machine, dump.problem.clone()),
        (4242, 0, None)
    );
    assert_eq!(
        loaded(&dump),
        [
            (11, "py::fib:/app/fib.py".into(), 0x7000),
            (13, "JS:*fib /app/fib.js:1:13".into(), 0x8000),
            (20, "JS:*fib /app/fib.js:1:13".into(), 0x9000),
        ]
    );
    assert!(dump.reuses_code, "a move is a reuse");
    let JitChange::Load(trampoline) = &dump.events[0].change else {
        panic!("first event is the load");
    };
    assert_eq!(&*trampoline.code, &TRAMPOLINE);
    // The table lies 16 bytes after the code (the FDE's start is 16 bytes before it).
    assert_eq!(trampoline.unwind.as_ref().unwrap().eh_frame_offset, 16);
    assert_eq!(trampoline.unwind.as_ref().unwrap().eh_frame.len(), 48);
    // The lines moved with the code: offsets from the function's start.
    let JitChange::Load(moved) = &dump.events[3].change else {
        panic!("the move's load");
    };
    assert_eq!(moved.line_at(0x9005).map(|l| l.line), Some(4));
    // V8's "same file as the entry before".
    assert_eq!(moved.line_at(0x9005).map(|l| &*l.file), Some("fib.js"));
    assert_eq!(moved.line_at(0x9003).map(|l| l.line), Some(3));
    assert_eq!(moved.line_at(0x8005), None);
    // A file name that is no name (node 20's optimised code): the code from there on has
    // no line, rather than the line before or a made-up file.
    assert_eq!(moved.line_at(0x9006), None);
    assert!(matches!(&dump.events[2].change, JitChange::Unload(r) if *r == (0x8000..0x8008)));
}

#[test]
fn a_dump_cut_short_keeps_what_came_before_and_says_where() {
    let mut w = Writer::new(62);
    w.load(1, "first", 0x1000, &[0xc3], 1)
        .load(2, "second", 0x2000, &[0xc3; 4], 2);
    let whole = w.0.clone();
    let second_at = 40 + (16 + 40 + 6 + 1) as u64;
    for cut in [
        whole.len() - 1,
        second_at as usize + 10,
        second_at as usize + 20,
    ] {
        let dump = JitDump::parse(&whole[..cut]).unwrap();
        assert_eq!(loaded(&dump), [(1, "first".into(), 0x1000)], "cut at {cut}");
        let (offset, why) = dump.problem.unwrap();
        assert_eq!(offset, second_at, "{why}");
    }
    assert_eq!(
        JitDump::parse(&whole[..39]).err(),
        Some(JitDumpError::NotJitDump)
    );
    assert_eq!(
        JitDump::parse(b"ELF...").err(),
        Some(JitDumpError::NotJitDump)
    );
}

#[test]
fn hostile_sizes_are_refused_before_anything_is_reserved() {
    // A debug info record claiming 2^60 entries in a few bytes.
    let mut body = Vec::new();
    body.extend_from_slice(&0x1000u64.to_le_bytes());
    body.extend_from_slice(&(1u64 << 60).to_le_bytes());
    body.extend_from_slice(&[0; 20]);
    let mut w = Writer::new(62);
    w.record(2, 1, &body);
    let dump = JitDump::parse(&w.0).unwrap();
    assert!(dump.problem.unwrap().1.contains("claiming"));
    // A record whose size is smaller than its header, or larger than the file.
    for size in [3u32, 1 << 30] {
        let mut w = Writer::new(62);
        w.0.extend_from_slice(&0u32.to_le_bytes());
        w.0.extend_from_slice(&size.to_le_bytes());
        w.0.extend_from_slice(&[0; 24]);
        let dump = JitDump::parse(&w.0).unwrap();
        assert_eq!(dump.problem.as_ref().map(|p| p.0), Some(40));
    }
    // A load whose code size passes the record's end.
    let mut w = Writer::new(62);
    w.load(1, "f", 0x1000, &[0xc3; 4], 1);
    let size_at = 40 + 16 + 4 + 4 + 8 + 8;
    w.0[size_at..size_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(JitDump::parse(&w.0).unwrap().problem.is_some());
}

#[test]
fn code_loaded_over_other_code_is_a_reuse() {
    let mut w = Writer::new(62);
    w.load(1, "old", 0x1000, &[0x90; 16], 1)
        .load(2, "other", 0x2000, &[0x90; 16], 2);
    assert!(!JitDump::parse(&w.0).unwrap().reuses_code);
    w.load(3, "new", 0x1008, &[0x90; 4], 3);
    assert!(JitDump::parse(&w.0).unwrap().reuses_code);
}

#[test]
fn dump_names() {
    assert!(is_dump_name("jit-1234.dump"));
    for name in [
        "jit-.dump",
        "jit-12a.dump",
        "jit-12.dump.bak",
        "perf-12.map",
        "jit-12.map",
    ] {
        assert!(!is_dump_name(name), "{name}");
    }
}

/// The unwind data node 20 (`--perf-prof --perf-prof-unwinding-info`) wrote for a 384-byte
/// optimised JS function, from a dump of this machine: a CIE with augmentation `zLR` whose
/// LSDA encoding is 0xff (omitted), which gimli refuses to read FDEs of, and one FDE.
const V8_EH_FRAME: &str = "1800000000000000037a4c520001781002ff1b0c070890010000000028000000\
                           200000005cfeffff7e010000004f0e108602430d060304010d07410e08520c06\
                           100000000000000000000000";

#[test]
fn v8s_tables_with_an_omitted_lsda_are_read_and_unwind() {
    use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
    use framehop::{FrameAddress, Unwinder};
    let unwind = JitUnwind::new(&unhex(V8_EH_FRAME)).expect("V8's table is read");
    // The table lies right after the code (384 bytes).
    assert_eq!(unwind.eh_frame_offset, 384);
    let code = 0x7f00_0000_0000u64;
    let mut unwinder = UnwinderX86_64::new();
    unwinder.add_module(unwind.framehop_module("fib", code..code + 384).unwrap());
    let sp = 0x7ffd_0000_0000u64;
    let stack: Vec<u64> = (0..16).map(|i| 0x1000 + i).collect();
    let mut read = |addr: u64| -> Result<u64, ()> {
        let i = usize::try_from((addr.checked_sub(sp).ok_or(())?) / 8).map_err(|_| ())?;
        stack.get(i).copied().ok_or(())
    };
    let mut cache = CacheX86_64::new();
    // At the first instruction the return address is at the stack pointer.
    let mut regs = UnwindRegsX86_64::new(code, sp, 0);
    let first = FrameAddress::from_instruction_pointer(code);
    assert_eq!(
        unwinder.unwind_frame(first, &mut regs, &mut cache, &mut read),
        Ok(Some(0x1000))
    );
    // Past `push %rbp; mov %rsp,%rbp` (the table's rules from offset 0x52): by the frame
    // pointer the table names, rbp + 8.
    let mut regs = UnwindRegsX86_64::new(code + 0x60, sp, sp + 32);
    let later = FrameAddress::from_return_address(code + 0x61).unwrap();
    assert_eq!(
        unwinder.unwind_frame(later, &mut regs, &mut cache, &mut read),
        Ok(Some(0x1005))
    );
}

#[test]
fn the_lsda_rewrite_keeps_every_other_table_as_it_is() {
    let cpython = unhex(CPYTHON_EH_FRAME);
    assert!(matches!(
        without_omitted_lsda(&cpython),
        std::borrow::Cow::Borrowed(_)
    ));
    let v8 = unhex(V8_EH_FRAME);
    let fixed = without_omitted_lsda(&v8);
    assert_eq!(fixed.len(), v8.len());
    // The CIE says zR now, its augmentation data one byte (the R encoding).
    assert_eq!(&fixed[9..12], b"zR\0");
    assert_eq!(&fixed[12..17], &[0x01, 0x78, 0x10, 0x01, 0x1b]);
    // The FDE after it is untouched.
    assert_eq!(&fixed[28..], &v8[28..]);
}
