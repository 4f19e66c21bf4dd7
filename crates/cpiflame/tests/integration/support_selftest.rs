//! Tests of the shared test support module: the `perf script` parser on
//! output captured on the reference machine (tests/integration/support/data/), and, where
//! perf works, the build/record/script helpers end to end.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use support::{parse_perf_script, perf_script_args, ScriptFrame, ScriptOptions, ScriptSample};

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/integration/support/data")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn parse(name: &str) -> Vec<ScriptSample> {
    parse_perf_script(&data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn frame(addr: u64, symbol: &str, dso: &str) -> ScriptFrame {
    ScriptFrame {
        addr,
        symbol: symbol.to_string(),
        dso: dso.to_string(),
        inlined: false,
    }
}

fn inlined(addr: u64, symbol: &str) -> ScriptFrame {
    ScriptFrame {
        addr,
        symbol: symbol.to_string(),
        dso: String::new(),
        inlined: true,
    }
}

const THREADS: &str = "/tmp/cpiflame-fixtures/threads";
const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";

#[test]
fn threads_inline_counts_and_headers() {
    let samples = parse("threads_inline.txt");
    assert_eq!(samples.len(), 30);
    let mut per_event: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &samples {
        *per_event.entry(s.event.as_str()).or_default() += 1;
        assert_eq!(s.pid, 21628);
        assert!(!s.frames.is_empty());
    }
    assert_eq!(per_event.get("cpu-clock"), Some(&15));
    assert_eq!(per_event.get("task-clock"), Some(&15));

    let first = &samples[0];
    assert_eq!(first.comm, "bigframe");
    assert_eq!((first.pid, first.tid), (21628, 21648));
    assert_eq!(first.time_ns, 994_678_019_380);
    assert_eq!(first.event, "cpu-clock");
    let second = &samples[1];
    assert_eq!(second.event, "task-clock");
    assert_eq!(second.time_ns, 994_678_027_492);

    let comms: Vec<&str> = samples.iter().map(|s| s.comm.as_str()).collect();
    for name in ["bigframe", "threads", "recurse", "heavy", "light"] {
        assert!(comms.contains(&name), "no sample of thread {name}");
    }
    // Times are non-decreasing in perf script order.
    assert!(samples.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
}

#[test]
fn threads_truncated_big_frame_stack() {
    let samples = parse("threads_inline.txt");
    let first = &samples[0];
    assert_eq!(
        first.frames,
        vec![
            frame(0x155f, "big_frame_leaf", THREADS),
            frame(0x15ae, "big_frame", THREADS),
            frame(0xffff_ffff_ffff_ffff, "[unknown]", "[unknown]"),
        ]
    );
    assert!(first.ends_unknown());
    assert!(first.frames[2].is_unknown());
    assert!(!first.frames[2].is_kernel());
    // Every bigframe sample is cut at the 16 KiB frame.
    for s in samples.iter().filter(|s| s.comm == "bigframe") {
        assert!(s.ends_unknown(), "{s:?}");
    }
}

#[test]
fn threads_inlined_helper_and_libc_alias() {
    let samples = parse("threads_inline.txt");
    let s = &samples[2];
    assert_eq!(
        (s.comm.as_str(), s.tid, s.event.as_str()),
        ("threads", 21628, "cpu-clock")
    );
    assert_eq!(
        s.frames,
        vec![
            inlined(0x1526, "inline_helper"),
            frame(0x1526, "inline_caller", THREADS),
            frame(0x1183, "main", THREADS),
            frame(0x27249, "__libc_start_call_main", LIBC),
            // perf 6.1 quirk: libc's DWARF name differs from its symbol, so
            // this real frame is printed only as "inlined".
            inlined(0x27304, "__libc_start_main_impl"),
            frame(0x1270, "_start", THREADS),
        ]
    );
    let physical: Vec<&str> = s.physical_frames().map(|f| f.symbol.as_str()).collect();
    assert_eq!(
        physical,
        ["inline_caller", "main", "__libc_start_call_main", "_start"]
    );
    assert_eq!(
        s.user_leaf().map(|f| f.symbol.as_str()),
        Some("inline_helper")
    );
}

#[test]
fn threads_recursion_depth() {
    let samples = parse("threads_inline.txt");
    let s = samples
        .iter()
        .find(|s| s.comm == "recurse" && s.event == "cpu-clock")
        .expect("a recurse sample");
    assert_eq!(s.time_ns, 994_708_792_894);
    assert_eq!(s.frames[0], frame(0x1466, "recurse_leaf", THREADS));
    // Depth 8 down to 0: nine recurse frames, the innermost returning to
    // 0x1490 (printed as return address - 1), the others to 0x14b8.
    let recurse: Vec<u64> = s
        .frames
        .iter()
        .filter(|f| f.symbol == "recurse")
        .map(|f| f.addr)
        .collect();
    assert_eq!(recurse.len(), 9);
    assert_eq!(recurse[0], 0x148f);
    assert!(recurse[1..].iter().all(|&a| a == 0x14b7));
    assert_eq!(
        s.symbols()[10..],
        ["thread_recurse", "start_thread", "clone3"]
    );
    assert_eq!(s.frames.len(), 13);
}

#[test]
fn threads_kernel_frames_then_user() {
    let samples = parse("threads_inline.txt");
    let s = samples
        .iter()
        .find(|s| s.frames.iter().any(ScriptFrame::is_kernel))
        .expect("a sample with kernel frames");
    assert_eq!((s.comm.as_str(), s.tid), ("recurse", 21644));
    assert_eq!(
        s.frames[..3],
        [
            frame(
                0xffff_ffff_8136_d200,
                "__x64_sys_rt_sigprocmask",
                "[kernel.kallsyms]"
            ),
            frame(0xffff_ffff_821e_d511, "do_syscall_64", "[kernel.kallsyms]"),
            frame(
                0xffff_ffff_8100_0130,
                "entry_SYSCALL_64_after_hwframe",
                "[kernel.kallsyms]"
            ),
        ]
    );
    let user: Vec<&ScriptFrame> = s.user_frames().collect();
    assert_eq!(
        user,
        [
            &frame(0x89099, "start_thread", LIBC),
            &frame(0x1098eb, "clone3", LIBC)
        ]
    );
}

#[test]
fn threads_workers_reach_clone3() {
    let samples = parse("threads_inline.txt");
    let mut leaves: BTreeMap<&str, usize> = BTreeMap::new();
    for s in samples
        .iter()
        .filter(|s| s.comm == "heavy" || s.comm == "light")
    {
        assert_eq!(s.frames.len(), 4, "{s:?}");
        assert_eq!(s.frames[2], frame(0x891f4, "start_thread", LIBC));
        assert_eq!(s.frames[3], frame(0x1098eb, "clone3", LIBC));
        *leaves.entry(s.frames[0].symbol.as_str()).or_default() += 1;
    }
    assert_eq!(leaves.get("worker_heavy"), Some(&14));
    assert_eq!(leaves.get("worker_light"), Some(&4));
}

#[test]
fn symoff_is_stripped_and_cut_sample_kept() {
    let samples = parse("threads_symoff_head.txt");
    assert_eq!(samples.len(), 3);
    let plain = parse("threads_inline.txt");
    assert_eq!(samples[0], plain[0]);
    assert_eq!(samples[1], plain[1]);
    // The file stops in the middle of the third sample (no blank line).
    assert_eq!(samples[2].frames.len(), 5);
    assert_eq!(samples[2].frames[..], plain[2].frames[..5]);
    assert_eq!(
        samples[2].frames[4],
        inlined(0x27304, "__libc_start_main_impl")
    );
}

#[test]
fn no_callchain_frame_on_header_line() {
    let samples = parse("no_callchain_symoff.txt");
    assert_eq!(samples.len(), 12);
    let first = &samples[0];
    assert_eq!(first.comm, "cpu_mem_bound");
    assert_eq!((first.pid, first.tid), (23621, 23621));
    assert_eq!(first.time_ns, 1_017_255_019_153);
    assert_eq!(first.event, "cpu-clock");
    // Without a call chain perf prints the absolute runtime address.
    assert_eq!(
        first.frames,
        vec![frame(
            0x559b_817d_825d,
            "memory_bound",
            "/tmp/cpiflame-fixtures/cpu_mem_bound"
        )]
    );
    let last = &samples[11];
    assert_eq!(last.frames[0].symbol, "cpu_bound");
    assert_eq!(last.frames[0].addr, 0x559b_817d_8297);
}

#[test]
fn mangled_cpp_names() {
    let samples = parse("mangled_inline.txt");
    assert_eq!(samples.len(), 11);
    let dso = "/tmp/cpiflame-fixtures/mangled";
    let mut leaves: BTreeMap<String, usize> = BTreeMap::new();
    for s in &samples {
        assert_eq!(s.comm, "mangled");
        assert_eq!(s.event, "cpu-clock");
        assert_eq!(s.frames[0].dso, dso);
        assert_eq!(s.frames[1], frame(s.frames[1].addr, "main", dso));
        assert_eq!(s.frames.last().unwrap().symbol, "_start");
        *leaves.entry(s.frames[0].symbol.clone()).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = [
        ("cpiflame::fixtures::Accumulator::run", 2),
        ("cpiflame::fixtures::spin<int>", 2),
        ("cpiflame::fixtures::spin<long>", 2),
        ("(anonymous namespace)::hidden_spin", 3),
        ("main::{lambda(unsigned long)#1}::operator()", 2),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(leaves, expected);
    let lambda = samples
        .iter()
        .find(|s| s.frames[0].symbol.starts_with("main::{lambda"))
        .unwrap();
    assert_eq!(lambda.frames[0].addr, 0x12af);
    assert_eq!(lambda.frames[1].addr, 0x1110);
}

#[test]
fn rust_v0_names() {
    let samples = parse("rust_v0_no_inline.txt");
    assert_eq!(samples.len(), 12);
    let dso = "/tmp/cpiflame-fixtures/rust_workload_v0";
    // The main thread's comm is the binary name cut to 15 bytes.
    let main = &samples[0];
    assert_eq!(main.comm, "rust_workload_v");
    assert_eq!(
        main.frames[0],
        frame(0x1a10b, "rust_workload::inline_caller", dso)
    );
    assert_eq!(main.frames[1].symbol, "rust_workload::main");
    assert_eq!(
        main.frames[7],
        frame(0x27304, "__libc_start_main@@GLIBC_2.34", LIBC)
    );
    assert_eq!(main.frames[8], frame(0x19100, "_start", dso));

    let light = &samples[1];
    assert_eq!(light.comm, "light");
    assert_eq!(
        light.symbols(),
        [
            "rust_workload::worker_light",
            "std::sys::backtrace::__rust_begin_short_backtrace::<rust_workload::main::{closure#0}::{closure#0}, u64>",
            "<std::thread::lifecycle::spawn_unchecked<rust_workload::main::{closure#0}::{closure#0}, u64>::{closure#1} as core::ops::function::FnOnce<()>>::call_once::{shim:vtable#0}",
            "<std::sys::thread::unix::Thread>::new::thread_start",
            "start_thread",
            "clone3",
        ]
    );
    assert!(light.frames.iter().all(|f| !f.inlined));

    let recurse = &samples[2];
    assert_eq!(recurse.frames[0].symbol, "rust_workload::recurse_leaf");
    assert_eq!(
        recurse
            .frames
            .iter()
            .filter(|f| f.symbol == "rust_workload::recurse")
            .count(),
        9
    );

    let generic: Vec<&str> = samples
        .iter()
        .filter(|s| s.comm == "generic")
        .map(|s| s.frames[0].symbol.as_str())
        .collect();
    assert!(
        generic.contains(&"rust_workload::generic_spin::<u32>"),
        "{generic:?}"
    );
    assert!(
        generic.contains(&"rust_workload::generic_spin::<u64>"),
        "{generic:?}"
    );
}

#[test]
fn rust_legacy_names() {
    let samples = parse("rust_legacy_no_inline.txt");
    assert_eq!(samples.len(), 8);
    let dso = "/tmp/cpiflame-fixtures/rust_workload";
    let s = &samples[0];
    assert_eq!(
        (s.comm.as_str(), s.event.as_str()),
        ("recurse", "task-clock")
    );
    assert_eq!(
        s.frames[0],
        frame(0x192ab, "rust_workload::recurse_leaf", dso)
    );
    assert_eq!(s.frames[1], frame(0x19a79, "rust_workload::recurse", dso));
    assert_eq!(
        s.frames[11],
        frame(
            0x1a02e,
            "core::ops::function::FnOnce::call_once{{vtable.shim}}",
            dso
        )
    );
    // Legacy symbols carry no generic arguments: both instantiations print
    // the same name.
    let generic = samples.iter().find(|s| s.comm == "generic").unwrap();
    assert_eq!(generic.frames[0].symbol, "rust_workload::generic_spin");
    assert!(samples
        .iter()
        .flat_map(|s| &s.frames)
        .all(|f| !f.symbol.contains("17h") && !f.symbol.starts_with("_ZN")));
}

#[test]
fn frame_line_variants() {
    let text = "\
my prog 7 12/34 5.000001: sched:sched_switch: \n\
\t    ffffffff81000000 func ([kernel.kallsyms])\n\
\t            1000 operator() (/tmp/a b/prog (deleted))\n\
\t            2000 foo(int)::{lambda()#1}::operator()+0x10 (/x)\n\
\t            3000 [unknown] (/usr/lib/libfoo.so)\n\
\t            4000 bar (inlined)\n\
";
    let samples = parse_perf_script(text).unwrap();
    assert_eq!(samples.len(), 1);
    let s = &samples[0];
    assert_eq!(s.comm, "my prog 7");
    assert_eq!((s.pid, s.tid), (12, 34));
    // Microsecond timestamps (no --ns) are scaled to nanoseconds.
    assert_eq!(s.time_ns, 5_000_001_000);
    assert_eq!(s.event, "sched:sched_switch");
    assert_eq!(
        s.frames,
        vec![
            frame(0xffff_ffff_8100_0000, "func", "[kernel.kallsyms]"),
            frame(0x1000, "operator()", "/tmp/a b/prog (deleted)"),
            frame(0x2000, "foo(int)::{lambda()#1}::operator()", "/x"),
            frame(0x3000, "[unknown]", "/usr/lib/libfoo.so"),
            inlined(0x4000, "bar"),
        ]
    );
    assert!(s.frames[0].is_kernel());
    assert!(s.frames[3].is_unknown());
}

#[test]
fn errors_instead_of_panics() {
    let cases = [
        ("\t    1234 foo (/x)\n", "outside a sample"),
        ("this is not perf output\n", "not a sample header"),
        ("a 1/2 3.5: ev: \n\tzz foo (/x)\n", "bad frame address"),
        ("a 1/2 3.5: ev: \n\t1234 foo\n", "(DSO)"),
        ("a 1/2 3.5: ev\n", "does not end with ':'"),
        ("a 1/2 3.5:\n", "without an event name"),
        ("a 1/2 3.5: ev: \n\t1234 (/x)\n", "(DSO)"),
    ];
    for (text, needle) in cases {
        let err = parse_perf_script(text).expect_err(text);
        assert!(err.contains(needle), "{text:?}: {err}");
        assert!(err.starts_with("line "), "{err}");
    }
    // Every prefix and every single-line deletion of real output parses or
    // errors, never panics.
    for name in ["threads_inline.txt", "rust_v0_no_inline.txt"] {
        let text = data(name);
        for cut in (0..text.len())
            .step_by(7)
            .filter(|&i| text.is_char_boundary(i))
        {
            let _ = parse_perf_script(&text[..cut]);
        }
        let lines: Vec<&str> = text.lines().collect();
        for skip in 0..lines.len() {
            let mut mutated: Vec<&str> = lines.clone();
            mutated.remove(skip);
            let _ = parse_perf_script(&mutated.join("\n"));
        }
    }
    assert_eq!(parse_perf_script("").unwrap(), vec![]);
    assert_eq!(parse_perf_script("\n\n").unwrap(), vec![]);
}

#[test]
fn script_args() {
    let args = perf_script_args(Path::new("/tmp/x.data"), &ScriptOptions::default());
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        args,
        [
            "script",
            "-f",
            "-i",
            "/tmp/x.data",
            "-F",
            "comm,pid,tid,time,event,ip,sym,dso",
            "--ns",
            "--inline"
        ]
    );
    let opts = ScriptOptions {
        inline: false,
        demangle: false,
        extra: vec!["--tid".into(), "5".into()],
    };
    let args = perf_script_args(Path::new("d"), &opts);
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(&args[7..], ["--no-inline", "--no-demangle", "--tid", "5"]);
}

#[test]
fn repo_root_holds_fixtures() {
    let root = support::repo_root();
    assert!(root.join("scripts/build-fixtures.sh").is_file());
    assert!(root.join("fixtures/workloads/threads.c").is_file());
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("support-selftest-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// End to end on this machine: build the fixtures, record `threads` and
/// `rust_workload_v0` briefly, and check perf's stacks have the designed
/// shape. Skipped (with a note) where perf cannot record; a failure under CI=true.
#[test]
fn live_record_and_script() {
    if !support::perf_works() {
        cpiflame_testkit::unavailable(
            "perf record does not work here (`perf record -e cpu-clock` fails)",
        );
        return;
    }
    let fx = support::shared_fixtures().unwrap_or_else(|e| panic!("{e}"));
    let dir = scratch("live");

    let data = dir.join("threads.data");
    let threads = fx.threads.to_str().unwrap();
    // A fixed period (1 ms of CPU), not -F: in frequency mode the kernel restarts each new
    // thread at a short period and adapts it, so sample counts of short-lived threads are
    // not proportional to their CPU time (heavy/light came out below 2 about once in three).
    support::perf_record(
        &data,
        "cpu-clock,task-clock",
        &["-c", "1000000"],
        &[threads, "0.1"],
    )
    .unwrap();
    let samples = support::perf_script_samples(&data).unwrap();
    let mut leaves: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for s in &samples {
        let Some(leaf) = s.user_leaf() else { continue };
        *leaves
            .entry((s.event.as_str(), leaf.symbol.as_str()))
            .or_default() += 1;
        match leaf.symbol.as_str() {
            "worker_heavy" | "worker_light" => {
                assert_eq!(s.symbols().last(), Some(&"clone3"), "{s:?}");
            }
            "recurse_leaf" => {
                assert_eq!(s.symbols().iter().filter(|&&n| n == "recurse").count(), 9);
                assert_eq!(s.symbols().last(), Some(&"clone3"), "{s:?}");
            }
            "inline_helper" => {
                // A sample taken in the kernel on the helper's behalf (a page fault, a
                // reschedule) has kernel frames first: look from the user leaf on.
                let user: Vec<&str> = s.user_frames().map(|f| f.symbol.as_str()).collect();
                assert!(leaf.inlined);
                assert_eq!(user[1], "inline_caller", "{s:?}");
                assert_eq!(user[2], "main", "{s:?}");
                assert_eq!(s.symbols().last(), Some(&"_start"), "{s:?}");
            }
            _ => {}
        }
    }
    for event in ["cpu-clock", "task-clock"] {
        let heavy = leaves.get(&(event, "worker_heavy")).copied().unwrap_or(0);
        let light = leaves.get(&(event, "worker_light")).copied().unwrap_or(0);
        for f in [
            "worker_heavy",
            "worker_light",
            "recurse_leaf",
            "inline_helper",
        ] {
            assert!(
                leaves.get(&(event, f)).copied().unwrap_or(0) > 10,
                "{event} {f}: {leaves:?}"
            );
        }
        // Designed 3:1 in work, but CPU time per unit of work is not constant here: on
        // 2 vCPUs shared with the other tests, a thread run while its sibling is busy does
        // less per millisecond (CI once measured 1.80). Swapped or lost samples give < 1.
        let ratio = heavy as f64 / light as f64;
        assert!(
            (1.5..6.0).contains(&ratio),
            "{event} heavy/light {ratio}: {leaves:?}"
        );
    }

    let data = dir.join("rust.data");
    let rust = fx.rust_workload_v0.to_str().unwrap();
    support::perf_record(&data, "cpu-clock", &["-F", "1000"], &[rust, "0.05"]).unwrap();
    let opts = ScriptOptions {
        inline: false,
        ..ScriptOptions::default()
    };
    let samples = support::perf_script_samples_with(&data, &opts).unwrap();
    let leaves: Vec<&str> = samples
        .iter()
        .filter_map(|s| s.user_leaf().map(|f| f.symbol.as_str()))
        .collect();
    for f in [
        "rust_workload::worker_heavy",
        "rust_workload::worker_light",
        "rust_workload::recurse_leaf",
        "rust_workload::generic_spin::<u32>",
        "rust_workload::generic_spin::<u64>",
        "rust_workload::inline_caller",
    ] {
        assert!(leaves.contains(&f), "{f} missing");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
