//! `perf script` text as input to `fold`, `render`, `report` and `diff`, checked against two
//! oracles on fixture workloads recorded at test time with
//! `perf record -e cpu-clock,task-clock --call-graph dwarf`:
//!
//! - inferno's collapse-perf (`--all --event-filter EVENT`, the library) on the same text gives
//!   the same stacks and counts as `cpiflame fold --event EVENT TEXT`, for both events, once
//!   two differences of inferno's are applied to our side: it leaves perf's `(inlined)` frames
//!   unmarked (we write `_[i]`) and drops frames whose name starts with `(`;
//! - `cpiflame`'s own reading of the perf.data the text came from: the same samples and
//!   periods per event, and the same stacks over the workload binary's own frames (perf's
//!   unwinder and ours agree on ≥ 99% of samples, see oracle.rs; names normalised as there).

use crate::support;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use cpiflame_pipeline::{load_any, LoadOptions, Loaded};
use cpiflame_profile::Profile;
use inferno::collapse::perf::{Folder, Options};
use inferno::collapse::Collapse;
use support::{
    cpiflame, ok, perf_record, perf_script_text, perf_works, s, shared_fixtures, Dir, ScriptOptions,
};

const EVENTS: [&str; 2] = ["cpu-clock", "task-clock"];

/// `perf script` with `args` (after `-f -i DATA`), written to `out`.
fn perf_script_to(data: &Path, args: &[&str], out: &Path) {
    let o = Command::new("perf")
        .args(["script", "-f", "-i"])
        .arg(data)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "perf script {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::write(out, o.stdout).unwrap();
}

/// A recording of one fixture and its perf script texts.
struct Recording {
    _dir: Dir,
    binary: PathBuf,
    data: PathBuf,
    /// `-F comm,pid,tid,time,event,ip,sym,dso --ns --inline`: no periods (support's layout).
    plain: PathBuf,
    /// `perf script --header`: perf's default layout (periods, cpu when recorded).
    default: PathBuf,
}

fn record(name: &str, binary: &Path, args: &[&str]) -> Recording {
    let dir = Dir::new(&format!("perf-script-{name}"));
    let data = dir.path("perf.data");
    let mut cmd = vec![s(binary)];
    cmd.extend(args);
    perf_record(&data, &EVENTS.join(","), &["-F", "500"], &cmd).expect("perf record");
    let plain = dir.path("plain.perf");
    std::fs::write(
        &plain,
        perf_script_text(&data, &ScriptOptions::default()).expect("perf script"),
    )
    .unwrap();
    let default = dir.path("default.perf");
    perf_script_to(&data, &["--header"], &default);
    Recording {
        _dir: dir,
        binary: binary.to_path_buf(),
        data,
        plain,
        default,
    }
}

fn fixtures_or_skip() -> Option<&'static support::Fixtures> {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock` fails)");
        return None;
    }
    Some(shared_fixtures().expect("fixtures build"))
}

/// Folded text as a map (lines with the same stack added).
fn folded_map(text: &str) -> BTreeMap<String, u64> {
    let mut map = BTreeMap::new();
    for line in text.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        *map.entry(stack.to_string()).or_default() += n.parse::<u64>().unwrap();
    }
    map
}

/// inferno-collapse-perf `--all --event-filter EVENT` of `text`.
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
    folded_map(&String::from_utf8(out).unwrap())
}

/// Our folded stacks in inferno's terms: `_[i]` unmarked, `(`-frames dropped.
fn as_inferno(ours: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
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

fn compare_with_inferno(r: &Recording) {
    let text = std::fs::read_to_string(&r.plain).unwrap();
    for event in EVENTS {
        let ours = folded_map(&ok(&cpiflame(&["fold", "--event", event, s(&r.plain)])));
        let theirs = inferno(&text, event);
        let total: u64 = theirs.values().sum();
        assert!(
            total >= 50,
            "{}: only {total} samples of {event}",
            r.binary.display()
        );
        let ours = as_inferno(&ours);
        let differ: Vec<_> = ours
            .iter()
            .filter(|(k, v)| theirs.get(*k) != Some(v))
            .take(5)
            .collect();
        assert_eq!(
            ours,
            theirs,
            "{} {event}: first stacks that differ: {differ:?}",
            r.binary.display()
        );
        eprintln!(
            "{} {event}: {} stacks, {total} samples, same as inferno collapse-perf --all",
            r.binary.display(),
            ours.len()
        );
    }
}

#[test]
fn fold_of_text_equals_inferno_collapse_perf_for_each_event() {
    let Some(f) = fixtures_or_skip() else { return };
    compare_with_inferno(&record("threads", &f.threads, &["0.3"]));
    compare_with_inferno(&record("mangled", &f.mangled, &["0.3"]));
    compare_with_inferno(&record("rust", &f.rust_workload, &["0.3"]));
}

fn load(file: &Path) -> Loaded {
    let mut warnings = Vec::new();
    load_any(
        &LoadOptions {
            file: file.to_path_buf(),
            kernel: true,
            ..Default::default()
        },
        &mut warnings,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// GCC's clones (`foo.constprop.0`) are named `foo` by cpiflame and by their symbol by perf;
/// inferno's naming drops argument lists (`operator()` → `operator`). Both sides compare in
/// the plainer form.
fn normalize(name: &str) -> String {
    let mut s = name.to_string();
    for suffix in [".constprop", ".isra", ".part", ".cold", ".lto_priv"] {
        if let Some(i) = s.find(suffix) {
            s.truncate(i);
        }
    }
    s.strip_suffix("()").map(str::to_string).unwrap_or(s)
}

/// Samples per stack of `event`, each stack cut down to its root and the frames named in
/// `keep` (normalised).
fn projected(p: &Profile, event: usize, keep: &HashSet<String>) -> HashMap<Vec<String>, u64> {
    let mut out = HashMap::new();
    for st in &p.stacks {
        let n = st.counts[event].samples;
        if n == 0 {
            continue;
        }
        let mut key = vec![p.frame(st.frames[0]).name.replace(' ', "_")];
        key.extend(
            st.frames[1..]
                .iter()
                .map(|&f| normalize(&p.frame(f).name))
                .filter(|n| keep.contains(n)),
        );
        *out.entry(key).or_default() += n;
    }
    out
}

fn event_index(p: &Profile, name: &str) -> usize {
    p.events.iter().position(|e| e.name == name).unwrap()
}

fn compare_with_perf_data(r: &Recording, text: &Path) {
    let data = load(&r.data).profile;
    let script = load(text).profile;
    let module = r.binary.file_name().unwrap().to_string_lossy().to_string();
    // The workload's own functions, as cpiflame names them from the perf.data.
    let keep: HashSet<String> = data
        .frames
        .iter()
        .filter(|f| f.module == module)
        .map(|f| normalize(&f.name))
        .collect();
    assert!(keep.len() >= 3, "{module}: functions {keep:?}");
    for event in EVENTS {
        let (d, t) = (event_index(&data, event), event_index(&script, event));
        assert_eq!(
            script.total(t).samples,
            data.total(d).samples,
            "{module} {event}: samples"
        );
        let a = projected(&data, d, &keep);
        let b = projected(&script, t, &keep);
        let total = data.total(d).samples;
        let same: u64 = a
            .iter()
            .map(|(k, &n)| n.min(b.get(k).copied().unwrap_or(0)))
            .sum();
        let share = same as f64 / total as f64;
        eprintln!(
            "{module} {event} ({}): {same} of {total} samples on the same stack of the binary's frames ({:.2}%)",
            text.file_name().unwrap().to_string_lossy(),
            share * 100.0
        );
        assert!(share >= 0.97, "{module} {event}: {share}");
    }
}

#[test]
fn text_reads_as_its_perf_data_does() {
    let Some(f) = fixtures_or_skip() else { return };
    for (name, binary) in [
        ("threads-data", &f.threads),
        ("rust-data", &f.rust_workload),
    ] {
        let r = record(name, binary, &["0.3"]);
        compare_with_perf_data(&r, &r.plain);
        compare_with_perf_data(&r, &r.default);
    }
}

#[test]
fn render_report_and_diff_take_text() {
    let Some(f) = fixtures_or_skip() else { return };
    let r = record("commands", &f.threads, &["0.3"]);
    let text = s(&r.default);
    let svg = ok(&cpiflame(&["render", text]));
    assert!(
        svg.starts_with("<?xml") && svg.contains("worker_heavy"),
        "{}",
        &svg[..200.min(svg.len())]
    );
    let report = ok(&cpiflame(&["report", text]));
    assert!(report.contains("worker_heavy"), "{report}");
    let json = ok(&cpiflame(&["report", "--json", s(&r.plain)]));
    assert!(json.contains("\"worker_heavy\""), "{json}");
    // The same samples on both sides: no function's share moves by 3 points, either way.
    for (before, after) in [(s(&r.data), text), (text, s(&r.data))] {
        let out = cpiflame(&["diff", "--summary", "--fail-above", "3", before, after]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "diff {before} {after}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let svg = ok(&cpiflame(&["diff", s(&r.data), s(&r.plain)]));
    assert!(svg.contains("worker_heavy"));
}

#[test]
fn periods_from_the_text_or_its_header_match_perf_data() {
    let Some(f) = fixtures_or_skip() else { return };
    // Frequency mode: the period of each sample is on its line (`-F +period` of a layout
    // without it).
    let r = record("periods", &f.threads, &["0.3"]);
    let with_period = r.plain.with_file_name("period.perf");
    perf_script_to(
        &r.data,
        &["-F", "comm,pid,tid,time,period,event,ip,sym,dso"],
        &with_period,
    );
    let data = load(&r.data).profile;
    let text = load(&with_period).profile;
    for event in EVENTS {
        let (d, t) = (event_index(&data, event), event_index(&text, event));
        assert_eq!(text.total(t), data.total(d), "{event}: samples and periods");
        assert!(
            text.total(t).period > text.total(t).samples * 1000,
            "{event}: periods in ns"
        );
        eprintln!("{event}: period total {} in both", data.total(d).period);
    }
    // A fixed period (-c) and a text without periods: the header's sample_period counts.
    let dir = Dir::new("perf-script-fixed");
    let data_path = dir.path("fixed.data");
    perf_record(
        &data_path,
        &EVENTS.join(","),
        &["-c", "1000000"],
        &[s(&f.threads), "0.2"],
    )
    .expect("perf record");
    let no_period = dir.path("fixed.perf");
    perf_script_to(
        &data_path,
        &["--header", "-F", "comm,tid,time,event,ip,sym,dso"],
        &no_period,
    );
    let content = std::fs::read_to_string(&no_period).unwrap();
    assert!(content.contains("sample_freq } = 1000000"));
    assert!(!content
        .lines()
        .any(|l| !l.starts_with('#') && l.contains(" 1000000 ")));
    let data = load(&data_path).profile;
    let text = load(&no_period).profile;
    for event in EVENTS {
        let (d, t) = (event_index(&data, event), event_index(&text, event));
        assert_eq!(
            text.total(t),
            data.total(d),
            "{event} with -c: samples and periods"
        );
        assert_eq!(text.total(t).period, text.total(t).samples * 1_000_000);
    }
}

#[test]
fn a_bad_line_is_one_error_naming_file_and_line() {
    let dir = Dir::new("perf-script-bad");
    let bad = dir.path("bad.perf");
    std::fs::write(
        &bad,
        "app 1/1 1.0: cpu-clock:\n\t 10 main (/bin/app)\n\napp 1/1 1.1: cpu-clock:\nrubbish here\n",
    )
    .unwrap();
    let out = cpiflame(&["fold", s(&bad)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("{}: line 5: not a sample header", bad.display())),
        "{err}"
    );
    // A good one folds without perf: the root is the command, kernel frames are marked.
    let good = dir.path("good.perf");
    std::fs::write(
        &good,
        "app 1/1 1.0: cpu-clock:\n\tffffffff81000000 irq ([kernel.kallsyms])\n\t 10 main+0x4 (/bin/app)\n",
    )
    .unwrap();
    assert_eq!(ok(&cpiflame(&["fold", s(&good)])), "app;main;irq_[k] 1\n");
    assert_eq!(
        ok(&cpiflame(&["fold", "--no-kernel", s(&good)])),
        "app;main 1\n"
    );
}

/// `perf script --header` names every event of the recording, perf's `dummy` one too: an
/// event without samples is passed over, and fold and render take the one that has them
/// instead of asking for `--event` (issue 21, item 13a).
#[test]
fn a_header_event_without_samples_leaves_the_one_with_samples() {
    let dir = Dir::new("perf-script-dummy");
    let text = dir.path("dummy.perf");
    std::fs::write(
        &text,
        "\
# ========
# arch : x86_64
# event : name = cpu-clock:u, , id = { 1 }, type = 1, size = 136, config = 0, { sample_period, sample_freq } = 250000, sample_type = IP|TID|TIME|CALLCHAIN|PERIOD
# event : name = dummy:u, , id = { 2 }, type = 1, size = 136, config = 0x9, { sample_period, sample_freq } = 1, sample_type = IP|TID|TIME
# ========
#
app 10/10 1.000: 250000 cpu-clock:u: 
\t    1000 f (/bin/app)
\t    2000 main (/bin/app)

app 10/10 1.001: 250000 cpu-clock:u: 
\t    1010 g+0x4 (/bin/app)
\t    2000 main (/bin/app)

app 10/10 1.002: 250000 cpu-clock:u: 
\t    1010 g+0x8 (/bin/app)
\t    2000 main (/bin/app)
",
    )
    .unwrap();
    assert_eq!(
        ok(&cpiflame(&["fold", s(&text)])),
        "app;main;f 1\napp;main;g 2\n"
    );
    let svg = ok(&cpiflame(&["render", s(&text)]));
    assert!(svg.contains("main"), "the graph draws the samples");
    assert!(
        !svg.contains("set --stalls and --cycles"),
        "nothing to choose: no note asking for events"
    );
    // Two events with samples still need a choice.
    let two = dir.path("two.perf");
    std::fs::write(
        &two,
        "app 1/1 1.0: a:\n\t 10 f (/bin/app)\n\napp 1/1 1.1: b:\n\t 10 g (/bin/app)\n",
    )
    .unwrap();
    let out = cpiflame(&["fold", s(&two)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("choose one with --event"));
}

/// Text from other collapsers' habits, through the command line: frames without their tabs,
/// and JIT frames (a perf map's), which fold marks `_[j]` as it marks kernel frames `_[k]`
/// (stackcollapse-perf.pl and inferno `--all`). Expected output written by hand.
#[test]
fn unindented_frames_and_jit_frames_fold_as_inferno_folds_them() {
    let dir = Dir::new("perf-script-jit");
    let text = dir.path("jit.perf");
    std::fs::write(
        &text,
        "\
node 77/77 1.000: 1 cpu-clock: 
7f0010001000 LazyCompile:~fib+0x10 (/tmp/perf-77.map)
ffffffff81000000 irq ([kernel.kallsyms])
1000 main (/usr/bin/node)

node 77/77 1.001: 1 cpu-clock: 
1000 main (/usr/bin/node)
",
    )
    .unwrap();
    assert_eq!(
        ok(&cpiflame(&["fold", s(&text)])),
        "node;main 1\nnode;main;irq_[k];LazyCompile:~fib_[j] 1\n"
    );
    // Read back as folded text, the kinds come back and are written the same.
    let folded = dir.path("jit.folded");
    ok(&cpiflame(&["fold", s(&text), "-o", s(&folded)]));
    assert_eq!(
        ok(&cpiflame(&["fold", s(&folded)])),
        "node;main 1\nnode;main;irq_[k];LazyCompile:~fib_[j] 1\n"
    );
}

/// Regression (issue 41, item 5): input in no known format was refused as a perf.data file
/// ("not a perf.data file (magic 2320637069666c61)" for a README, "file ends inside the
/// file header" for a one-line text file), and `perf script -F comm,tid,ip,sym` text (no
/// event, no time) was read as folded stacks ("expected a count after the stack"). Each is
/// one line saying what cpiflame reads and what it saw; perf's text without the event field
/// is named, with the fields needed, and perf's text with them reads.
#[test]
fn input_in_no_known_format_is_one_line_saying_what_was_seen() {
    let dir = Dir::new("unknown-format");
    let one_line = |cmd: &str, file: &Path, want: &str| {
        let out = cpiflame(&[cmd, s(file)]);
        assert_eq!(out.status.code(), Some(2), "{cmd} {}", file.display());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr,
            format!("cpiflame: error: {}: {want}\n", file.display())
        );
    };
    let unknown = "not perf.data, perf script text or folded stacks";
    for (name, bytes, seen) in [
        (
            "README.md",
            &b"# A project\n\nIt draws graphs.\n"[..],
            "(first line \"# A project\")",
        ),
        ("one.txt", b"hello", "(first line \"hello\")"),
        (
            "blob",
            &[0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6],
            "(first bytes deadbeef00010203)",
        ),
    ] {
        let file = dir.path(name);
        std::fs::write(&file, bytes).unwrap();
        for cmd in ["render", "fold", "report"] {
            one_line(cmd, &file, &format!("{unknown} {seen}"));
        }
    }

    let Some(f) = fixtures_or_skip() else { return };
    let data = dir.path("perf.data");
    perf_record(&data, "cpu-clock", &["-F", "500"], &[s(&f.cpu_mem_bound)]).expect("perf record");
    for fields in ["comm,tid,ip,sym", "comm,tid,time,ip,sym"] {
        let text = dir.path("no-event.perf");
        perf_script_to(&data, &["-F", fields], &text);
        let first = std::fs::read_to_string(&text).unwrap();
        let header = first.lines().next().unwrap().trim();
        for cmd in ["render", "fold"] {
            one_line(
                cmd,
                &text,
                &format!(
                    "perf script text without the event field (sample line {header:?}): print \
                     it with at least -F comm,tid,event,ip,sym (perf script's default fields \
                     have them)"
                ),
            );
        }
    }
    // As the line says: with the event, every sample perf printed is read.
    let text = dir.path("event.perf");
    perf_script_to(&data, &["-F", "comm,tid,event,ip,sym"], &text);
    let printed = std::fs::read_to_string(&text).unwrap();
    let samples = printed.lines().filter(|l| l.contains("cpu-clock:")).count() as u64;
    let folded = folded_map(&ok(&cpiflame(&["fold", s(&text)])));
    assert!(samples > 50, "{samples} samples");
    assert_eq!(folded.values().sum::<u64>(), samples);

    // Commands that read a perf.data file's records say what the text is, not that it is
    // no known format.
    let folded_file = dir.path("x.folded");
    std::fs::write(&folded_file, "app;main;f 3\n").unwrap();
    for (file, kind) in [(&folded_file, "folded"), (&text, "perf script")] {
        for cmd in ["script", "c2c"] {
            one_line(
                cmd,
                file,
                &format!(
                    "this is {kind} text; this command reads perf.data (a recording by \
                     cpiflame record or perf record)"
                ),
            );
        }
    }
}
