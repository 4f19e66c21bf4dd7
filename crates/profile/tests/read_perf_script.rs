//! Reading `perf script` text: the layouts perf prints, names and kinds, periods, roots,
//! every error with its line, the sniffing function, and inferno's collapse-perf as the
//! oracle on real perf output kept in the repository.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use cpiflame_profile::perf_script::MAX_LINE;
use cpiflame_profile::{
    looks_folded, looks_like_perf_script, read_perf_script, read_perf_script_with, FrameKind,
    PerfScriptErrorKind, PerfScriptOptions, Profile,
};
use inferno::collapse::perf::{Folder, Options};
use inferno::collapse::Collapse;

/// Folded stacks of `event` as `cpiflame fold` writes them (kinds as `_[k]`/`_[i]`/`_[j]`), with
/// the samples or the period of each.
fn folded(p: &Profile, event: usize, by_period: bool) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for s in &p.stacks {
        let c = s.counts[event];
        let n = if by_period { c.period } else { c.samples };
        if n == 0 {
            continue;
        }
        let names: Vec<String> = s
            .frames
            .iter()
            .map(|&f| {
                let f = p.frame(f);
                match f.kind {
                    FrameKind::Kernel => format!("{}_[k]", f.name),
                    FrameKind::Inline => format!("{}_[i]", f.name),
                    FrameKind::Jit => format!("{}_[j]", f.name),
                    _ => f.name.clone(),
                }
            })
            .collect();
        *out.entry(names.join(";")).or_default() += n;
    }
    out
}

fn read(text: &str) -> Profile {
    read_perf_script(text.as_bytes(), "t.perf").unwrap()
}

fn error(text: &str) -> (usize, PerfScriptErrorKind, String) {
    let e = read_perf_script(text.as_bytes(), "t.perf").unwrap_err();
    let shown = e.to_string();
    (e.line, e.kind, shown)
}

const DEFAULT_LAYOUT: &str = "\
threads 5264/5268 [001]  525.971482594:    250000 cpu-clock: 
\t            145f recurse_leaf+0x1f (/tmp/fx/threads)
\t            148f recurse (/tmp/fx/threads)
\t           891f4 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)

threads 5264/5268 [001]  525.971482600:    750000 task-clock: 
\tffffffff8158c6ae asm_sysvec_apic_timer_interrupt ([kernel.kallsyms])
\t            151f inline_helper (inlined)
\t            151f inline_caller (/tmp/fx/threads)
\t           14a9b [unknown] (/usr/bin/dash)
\tffffffffffffffff [unknown] ([unknown])

threads 5264/5268 [000]  525.971482700:    250000 cpu-clock: 
\t            145f recurse_leaf+0x2a (/tmp/fx/threads)
\t            148f recurse (/tmp/fx/threads)
\t           891f4 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)
";

#[test]
fn default_layout_with_periods_kinds_and_unknown_frames() {
    let p = read(DEFAULT_LAYOUT);
    let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["cpu-clock", "task-clock"]);
    let cpu = folded(&p, 0, false);
    assert_eq!(
        cpu,
        BTreeMap::from([("threads;start_thread;recurse;recurse_leaf".to_string(), 2)])
    );
    assert_eq!(p.total(0).period, 500000);
    let task = folded(&p, 1, true);
    assert_eq!(
        task,
        BTreeMap::from([(
            "threads;[unknown];[dash];inline_caller;inline_helper_[i];asm_sysvec_apic_timer_interrupt_[k]"
                .to_string(),
            750000
        )])
    );
    let kinds: Vec<FrameKind> = p
        .stacks
        .iter()
        .flat_map(|s| &s.frames)
        .map(|&f| p.frame(f).kind)
        .collect();
    assert!(kinds.contains(&FrameKind::Process));
    let modules: Vec<&str> = p.frames.iter().map(|f| f.module.as_str()).collect();
    assert!(modules.contains(&"threads") && modules.contains(&"[kernel.kallsyms]"));
}

#[test]
fn roots_with_pid_and_tid_and_without_kernel_frames() {
    let opts = |pid, tid, kernel| PerfScriptOptions { pid, tid, kernel };
    let with = |o| {
        read_perf_script_with(DEFAULT_LAYOUT.as_bytes(), "t.perf", o)
            .unwrap()
            .profile
    };
    let p = with(opts(true, false, true));
    assert!(folded(&p, 0, false)
        .keys()
        .all(|k| k.starts_with("threads-5264;")));
    let p = with(opts(false, true, false));
    let task = folded(&p, 1, false);
    assert_eq!(
        task.keys().next().unwrap(),
        "threads-5264/5268;[unknown];[dash];inline_caller;inline_helper_[i]"
    );
    // Only a TID on the line: the PID is not known, as stackcollapse-perf writes it.
    let text = "sh 10452  2129.247684: cpu-clock: \n\t 167138 f (/bin/x)\n";
    let p = read_perf_script_with(text.as_bytes(), "t", opts(false, true, true))
        .unwrap()
        .profile;
    assert_eq!(folded(&p, 0, false).keys().next().unwrap(), "sh-?/10452;f");
}

#[test]
fn field_selections_perf_prints() {
    // -F comm,tid,time,event,ip,sym: no DSO, no period.
    let p = read("sh 10452  2129.247684:  cpu-clock: \n\t          167138 __strcmp_evex\n\t           14a9b [unknown]\n\n");
    assert_eq!(
        folded(&p, 0, false),
        BTreeMap::from([("sh;[unknown];__strcmp_evex".to_string(), 1)])
    );
    // -F comm,tid,event,ip,sym,dso: no time.
    let p = read("sh 10452  cpu-clock: \n\t          167138 __strcmp_evex (/usr/lib/libc.so.6)\n");
    assert_eq!(p.total(0).samples, 1);
    // No call chain: the frame is on the (padded) header line, and samples follow without
    // blank lines.
    let text = "\
              sh 10490  2135.659453:    5000000 cpu-clock:      564b80832a97 [unknown] (/usr/bin/dash)
              sh 10490  2135.664493:    5000000 cpu-clock:      7fca667a0158 __strcmp_evex+0x38 (/usr/lib/x86_64-linux-gnu/libc.so.6)
              sh 10490 cpu-clock:      7fca667ae09f __strpbrk_sse42
";
    let p = read(text);
    assert_eq!(
        folded(&p, 0, false),
        BTreeMap::from([
            ("sh;[dash]".to_string(), 1),
            ("sh;__strcmp_evex".to_string(), 1),
            ("sh;__strpbrk_sse42".to_string(), 1)
        ])
    );
    // A period on two samples, none on the third: it counts 1.
    assert_eq!(p.total(0).period, 10000001);
    // A comm with spaces, a tracepoint with arguments and a call chain.
    let text = "V8 WorkerThread 24636/25607 [000] 94564.109216: sched:sched_switch: prev_comm=a prev_pid=1\n\tffffffff81000000 __schedule ([kernel.kallsyms])\n\t 1000 run (/opt/v8)\n";
    let p = read(text);
    assert_eq!(p.events[0].name, "sched:sched_switch");
    assert_eq!(
        folded(&p, 0, false),
        BTreeMap::from([("V8_WorkerThread;run;__schedule_[k]".to_string(), 1)])
    );
}

#[test]
fn header_gives_encodings_and_fixed_periods() {
    let text = "\
# ========
# arch : x86_64
# event : name = cycles, , id = { 5 }, type = 0 (PERF_TYPE_HARDWARE), size = 136, config = 0, { sample_period, sample_freq } = 100003, sample_type = IP|TID|TIME|CALLCHAIN
# event : name = resource_stalls_any, , id = { 6 }, type = 4, size = 136, config = 0x1a2, { sample_period, sample_freq } = 2000, sample_type = IP|TID|TIME|CALLCHAIN
# event : name = instructions, , id = { 7 }, type = 0, size = 136, config = 0x1, { sample_period, sample_freq } = 4000, freq = 1
# ========
#
app 1/1 1.0: cycles:
\t 10 f (/bin/app)

app 1/1 1.1: cycles:
\t 10 f (/bin/app)

app 1/1 1.2: 7 instructions:
\t 10 f (/bin/app)
";
    let s = read_perf_script_with(text.as_bytes(), "t", PerfScriptOptions::default()).unwrap();
    let names: Vec<&str> = s.profile.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["cycles", "resource_stalls_any", "instructions"]);
    assert_eq!(s.arch.as_deref(), Some("x86_64"));
    let h: Vec<_> = s.header.iter().map(|h| h.clone().unwrap()).collect();
    assert_eq!(
        (h[0].type_, h[0].config, h[0].fixed_period),
        (0, 0, Some(100003))
    );
    assert_eq!((h[1].type_, h[1].config), (4, 0x1a2));
    assert_eq!(h[2].fixed_period, None);
    assert_eq!(s.profile.total(0).period, 2 * 100003);
    assert_eq!(s.profile.total(1).samples, 0);
    // A period on the line wins over the header's.
    assert_eq!(s.profile.total(2).period, 7);
}

#[test]
fn every_error_names_its_line() {
    let (line, kind, shown) = error("app 1/1 1.0: cycles:\n\t 10 f (/bin/app)\nthis is not perf\n");
    assert_eq!(line, 3);
    assert!(matches!(kind, PerfScriptErrorKind::NotAHeader));
    assert!(
        shown.starts_with("t.perf: line 3: not a sample header"),
        "{shown}"
    );
    let (line, kind, _) = error("\t 10 f (/bin/app)\n");
    assert_eq!(line, 1);
    assert!(matches!(kind, PerfScriptErrorKind::FrameOutsideSample));
    let (line, kind, _) = error("app 1/1 1.0: cycles:\n\tnot-hex f (/bin/app)\n");
    assert_eq!(line, 2);
    assert!(matches!(kind, PerfScriptErrorKind::NotAFrame));
    let (line, kind, _) = error("app 1/1 1.0: 99999999999999999999 cycles:\n");
    assert_eq!(line, 1);
    assert!(matches!(kind, PerfScriptErrorKind::PeriodTooLarge { .. }));
    let (line, kind, _) =
        error("a 1/1 1.0: 18446744073709551615 cycles:\n\t 1 f\n\na 1/1 1.0: 1 cycles:\n\t 1 f\n");
    assert_eq!(line, 4);
    assert!(matches!(kind, PerfScriptErrorKind::TotalTooLarge { .. }));
    let (line, kind, shown) = error("# only comments\n\n");
    assert_eq!(line, 0);
    assert!(matches!(kind, PerfScriptErrorKind::NoSamples));
    assert_eq!(shown, "t.perf: no samples");
    let long = format!(
        "app 1/1 1.0: cycles:\n\t 10 {} (/bin/app)\n",
        "x".repeat(MAX_LINE)
    );
    let (line, kind, _) = error(&long);
    assert_eq!(line, 2);
    assert!(matches!(kind, PerfScriptErrorKind::LineTooLong));
}

/// A reader that fails after its bytes run out, as a broken pipe would.
struct Failing<'a>(&'a [u8]);

impl Read for Failing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.0.is_empty() {
            return Err(io::Error::other("disk on fire"));
        }
        let n = self.0.len().min(buf.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn read_errors_name_the_line_being_read() {
    let input = io::BufReader::new(Failing(b"app 1/1 1.0: cycles:\n"));
    let e = read_perf_script(input, "pipe").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.to_string().contains("disk on fire"));
}

#[test]
fn sniffing_tells_perf_script_from_folded_and_perf_data() {
    let script = DEFAULT_LAYOUT.as_bytes();
    assert!(looks_like_perf_script(script));
    assert!(!looks_folded(script));
    assert!(looks_like_perf_script(
        b"# ========\n# captured on : today\n"
    ));
    let nocc = b"   cpu_mem_bound 23621/23621  1017.255019153: cpu-clock:      559b817d825d memory_bound+0x1d (/tmp/x)\n";
    assert!(looks_like_perf_script(nocc));
    for not in [
        &b"demo;main;memory_bound 120\n"[..],
        b"demo;main 80 120\n",
        b"# a comment\ndemo;main 1\n",
        b"PERFILE2\x00\x00",
        b"",
        b"\x00\x01\x02",
        b"hello world\n",
    ] {
        assert!(
            !looks_like_perf_script(not),
            "{:?}",
            String::from_utf8_lossy(not)
        );
    }
}

/// inferno-collapse-perf `--all --event-filter EVENT` on `text`.
fn inferno(text: &str, event: &str) -> BTreeMap<String, u64> {
    let mut options = Options::default();
    options.annotate_kernel = true;
    options.annotate_jit = true;
    options.event_filter = Some(event.to_string());
    options.nthreads = 1;
    let mut out = Vec::new();
    Folder::from(options)
        .collapse(text.as_bytes(), &mut out)
        .unwrap();
    let mut map = BTreeMap::new();
    for line in String::from_utf8(out).unwrap().lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        *map.entry(stack.to_string()).or_default() += n.parse::<u64>().unwrap();
    }
    map
}

/// Ours in inferno's terms: inferno does not mark perf's `(inlined)` frames, and drops frames
/// whose name starts with `(` (and a stack left with none).
pub fn as_inferno(ours: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut map = BTreeMap::new();
    for (stack, &n) in ours {
        let frames: Vec<&str> = stack
            .split(';')
            .enumerate()
            .filter(|(i, f)| *i == 0 || !f.starts_with('('))
            .map(|(_, f)| f.strip_suffix("_[i]").unwrap_or(f))
            .collect();
        if frames.len() > 1 {
            *map.entry(frames.join(";")).or_default() += n;
        }
    }
    map
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn same_stacks_and_counts_as_inferno_on_real_perf_output() {
    let files = [
        "crates/cpiflame/tests/integration/support/data/threads_inline.txt",
        "crates/cpiflame/tests/integration/support/data/mangled_inline.txt",
        "crates/cpiflame/tests/integration/support/data/rust_v0_no_inline.txt",
        "crates/cpiflame/tests/integration/support/data/rust_legacy_no_inline.txt",
        "crates/cpiflame/tests/integration/support/data/no_callchain_symoff.txt",
        "fuzz/regressions/perf_script/threads-two-events-with-header",
        "fuzz/regressions/perf_script/mangled-no-call-chain-fixed-period",
    ];
    let mut compared = 0;
    for file in files {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        let p = read_perf_script(text.as_bytes(), file).unwrap();
        // inferno weighs a sample by the period printed before the event name, and by 1
        // when there is none; but it finds the period only when a single space separates it
        // from the name, and perf pads names to the longest event's (`5000000  cpu-clock:`
        // next to `5000000 task-clock:`). Squeezing the header lines' spaces lets it see
        // every period, so that our period column is what it should equal.
        let squeezed: String = text
            .lines()
            .map(|l| {
                if l.starts_with(['\t', '#']) {
                    l.to_string()
                } else {
                    l.split(' ')
                        .filter(|w| !w.is_empty())
                        .collect::<Vec<_>>()
                        .join(" ")
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        for (e, column) in p.events.iter().enumerate() {
            let ours = as_inferno(&folded(&p, e, true));
            let theirs = inferno(&squeezed, &column.name);
            assert_eq!(ours, theirs, "{file}: event {}", column.name);
            assert!(!ours.is_empty());
            compared += 1;
        }
    }
    assert!(compared >= 9, "{compared} event columns compared");
}

#[test]
fn srcline_and_side_band_lines_are_passed_over() {
    // `perf script -F +srcline`: a source line under each frame, and `(inlined)` moved there.
    let srcline = "\
threads 25775  2389.816134:   10000000  cpu-clock: 
\t            1526 inline_helper+0x26
  threads.c:93 (inlined)
\t            1526 inline_caller+0x26 (/tmp/cpiflame-fixtures/threads)
  threads.c:99
\t            1183 main+0xc3 (/tmp/cpiflame-fixtures/threads)
  threads.c:120

";
    let p = read(srcline);
    assert_eq!(
        folded(&p, 0, false),
        BTreeMap::from([(
            "threads;main;inline_caller;inline_helper_[i]".to_string(),
            1
        )])
    );
    // `--show-task-events --show-mmap-events`: side-band lines between samples.
    let side_band = "\
swapper     0     0.000000: PERF_RECORD_MMAP -1/0: [0xffffffff81000000(0x1209988) @ 0xffffffff81000000]: x [kernel.kallsyms]_text
threads 25775  2389.785204: PERF_RECORD_COMM exec: threads:25775/25775
threads 25775  2389.816134:   10000000  cpu-clock: 
\t            1183 main+0xc3 (/tmp/cpiflame-fixtures/threads)

threads 25775  2389.816200: PERF_RECORD_EXIT(25775:25775):(25774:25774)
";
    assert!(looks_like_perf_script(side_band.as_bytes()));
    // A first sample without a call chain (a wakeup a task outside the recording made,
    // named `:TID`), then a side-band line, as `cpiflame record --off-cpu`'s files print.
    let wakeup_first = "\
           :3947  3947 [000] 20037.067478535: sched:sched_waking: comm=cpiflame pid=3954 prio=120 target_cpu=000
pingpong  3954 [001] 20037.068540629: PERF_RECORD_COMM exec: pingpong:3954/3954
pingpong  3954 [001] 20037.068789730:     250000          cpu-clock: 
\t            1183 main+0xc3 (/tmp/cpiflame-fixtures/pingpong)
";
    assert!(looks_like_perf_script(wakeup_first.as_bytes()));
    let p = read(side_band);
    assert_eq!(p.events.len(), 1);
    assert_eq!(
        folded(&p, 0, false),
        BTreeMap::from([("threads;main".to_string(), 1)])
    );
}

/// Text naming a new event on every sample is refused past the bound, naming the line,
/// instead of growing a count per event in every stack.
#[test]
fn too_many_events_is_one_error_naming_the_line() {
    let mut text = String::new();
    for i in 0..=cpiflame_profile::perf_script::MAX_EVENTS {
        text.push_str(&format!(
            "app 1/1 [000] 1.{i:06}: 1 ev{i}:\n\t1000 f+0x0 (/bin/app)\n\n"
        ));
    }
    let err = cpiflame_profile::perf_script::read_perf_script(text.as_bytes(), "many.txt")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("many.txt") && err.contains("more than 256 distinct events"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "line {}",
            3 * cpiflame_profile::perf_script::MAX_EVENTS + 1
        )),
        "{err}"
    );
}

/// JIT frames (a perf map's, and an image `perf inject --jit` wrote) get `_[j]`, as
/// inferno's collapse-perf `--all` (and stackcollapse-perf.pl `--jit`, for perf maps)
/// annotates them: by the DSO, after the kernel test; kernel frames keep `_[k]`, and a DSO
/// that only looks like a perf map elsewhere gets nothing. Expected output written by hand,
/// then checked against inferno.
#[test]
fn jit_frames_are_annotated_as_inferno_annotates_them() {
    let text = "\
node 77/77 [000] 1.000000: 1 cycles: 
\t    7f0010001000 LazyCompile:~fib /app.js:3+0x10 (/tmp/perf-77.map)
\t    7f0010002000 [unknown] (/tmp/perf-77.map)
\t    7f0020000040 Interpreter::run (/root/.debug/jit/java-jit-2026/jitted-77-4.so)
\t    ffffffff81000000 asm_sysvec_apic_timer_interrupt ([kernel.kallsyms])
\t          1000 main (/usr/bin/node)

node 77/77 [000] 1.000100: 1 cycles: 
\t    7f0010001000 LazyCompile:~fib /app.js:3+0x10 (/tmp/perf-77.map)
\t    4000 helper (/opt/perf-77.map)
\t          1000 main (/usr/bin/node)

";
    let ours = folded(&read(text), 0, false);
    let expected: BTreeMap<String, u64> = [
        (
            "node;main;asm_sysvec_apic_timer_interrupt_[k];Interpreter::run_[j];\
             [perf-77.map]_[j];LazyCompile:~fib /app.js:3_[j]",
            1,
        ),
        ("node;main;helper;LazyCompile:~fib /app.js:3_[j]", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(ours, expected);
    assert_eq!(as_inferno(&ours), inferno(text, "cycles"));
}

/// Frame lines without indentation (text whose tabs were lost on the way) are read as
/// frames, as stackcollapse-perf.pl and inferno read them; a header that follows a sample
/// without a blank line still starts the next sample. Expected output written by hand, then
/// checked against inferno.
#[test]
fn frames_without_indentation_are_read_as_inferno_reads_them() {
    let text = "\
app 10/10 [000] 1.000000: 250000 cpu-clock: 
4005d6 f+0x16 (/usr/bin/app)
4004a0 main (/usr/bin/app)
7f00000291 __libc_start_call_main (/usr/lib/x86_64-linux-gnu/libc.so.6)

app 10/10 [000] 1.000250: 250000 cpu-clock: 
4005e6 g (/usr/bin/app)
\t4004a0 main (/usr/bin/app)
  7f00000291 __libc_start_call_main (/usr/lib/x86_64-linux-gnu/libc.so.6)

";
    let ours = folded(&read(text), 0, false);
    let expected: BTreeMap<String, u64> = [
        ("app;__libc_start_call_main;main;f", 1),
        ("app;__libc_start_call_main;main;g", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(ours, expected);
    // inferno weighs stacks by the printed periods.
    let by_period = folded(&read(text), 0, true);
    assert_eq!(as_inferno(&by_period), inferno(text, "cpu-clock"));
    assert!(looks_like_perf_script(text.as_bytes()));
    // The same samples with their tabs read the same.
    let tabbed: String = text
        .lines()
        .map(|l| match l.trim_start() {
            t if t.starts_with("app ") || t.is_empty() => format!("{t}\n"),
            t => format!("\t{t}\n"),
        })
        .collect();
    assert_eq!(folded(&read(&tabbed), 0, false), expected);
    // Unindented lines that are not frames are still errors naming the line.
    let (line, _, shown) = error("app 10/10 1.0: 1 cpu-clock: \nnot a frame at all\n");
    assert_eq!(line, 2, "{shown}");
}

/// `--time` on text: the samples whose printed time (microseconds, or nanoseconds with
/// `--ns`) `keep_time` keeps; the span is of every sample, kept or not.
#[test]
fn samples_left_out_by_time_and_the_span_of_all() {
    let text = "\
app 1/1 [000] 10.000001: 1 a:
\t 10 f (/bin/app)

app 1/1 [000] 10.500000: 1 a:
\t 10 g (/bin/app)

app 1/1 [000] 11.000000123: 1 a:
\t 10 h (/bin/app)
";
    let keep = |t: u64| (10_400_000_000..=11_000_000_123).contains(&t);
    let s = cpiflame_profile::read_perf_script_in(
        text.as_bytes(),
        "t",
        PerfScriptOptions::default(),
        &keep,
    )
    .unwrap();
    assert_eq!((s.samples, s.left_out), (2, 1));
    assert_eq!(s.span, Some((10_000_001_000, 11_000_000_123)));
    let leaves: Vec<&str> = s
        .profile
        .stacks
        .iter()
        .filter(|st| st.counts[0].samples > 0)
        .map(|st| s.profile.frame(*st.frames.last().unwrap()).name.as_str())
        .collect();
    assert_eq!(leaves.len(), 2);
    assert!(leaves.contains(&"g") && leaves.contains(&"h"), "{leaves:?}");
    // Everything left out: not an error here (the caller says which ranges matched nothing).
    let none = cpiflame_profile::read_perf_script_in(
        text.as_bytes(),
        "t",
        PerfScriptOptions::default(),
        &|_| false,
    )
    .unwrap();
    assert_eq!((none.samples, none.left_out), (0, 3));
}
