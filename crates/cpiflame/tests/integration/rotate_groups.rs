//! A leader-sampled group (`-e '{cpu-clock,task-clock,page-faults}:S'`) recorded with
//! `--switch-output`: the counters run on across files, and each sample weighs each member by
//! its value's increase since the previous sample of the same counter. The oracle is the
//! test's own delta computation over the raw values perf prints for every sample
//! (`perf script -D`'s `sample_read` blocks), over the whole sequence of files in order:
//! each file read alone by cpiflame gives, per member, the sum of its samples' deltas; the
//! folder read as one gives their sum; a recording without rotation is unchanged. perf reads
//! every file (the READ records the recorder starts them with included) without a word on
//! stderr and shows the samples the recorder wrote, its own deltas starting from zero in
//! every file as before.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cpiflame_pipeline::{load_any, LoadOptions};
use support::{perf_stdout, s, sampling_fixtures, Dir};

const GROUP: &str = "{cpu-clock,task-clock,page-faults}:S";
const MEMBERS: [&str; 3] = ["cpu-clock", "task-clock", "page-faults"];

/// Event name → summed period (or delta).
type Totals = BTreeMap<String, u64>;

/// Counter id → event name, from perf's header lines `# event : name = NAME, , id = { 1, 2 }`;
/// and whether any of them is inherited (then values would be per thread, not per id).
fn event_ids(file: &Path) -> (BTreeMap<u64, String>, bool) {
    let header = perf_stdout(&["report", "--header-only", "-i", s(file)]);
    let mut ids = BTreeMap::new();
    let mut inherited = false;
    for line in header
        .lines()
        .filter_map(|l| l.strip_prefix("# event : name = "))
    {
        let name = line.split(',').next().unwrap().trim().to_string();
        let (_, rest) = line.split_once("id = { ").unwrap();
        let (list, _) = rest.split_once(" }").unwrap();
        for id in list.split(',') {
            ids.insert(id.trim().parse().unwrap(), name.clone());
        }
        inherited |= line.contains(" inherit = 1");
    }
    (ids, inherited)
}

/// Every sample's (time, [(id, value)]) as `perf script -D` prints them, in time order.
fn raw_values(file: &Path) -> Vec<(u64, Vec<(u64, u64)>)> {
    let dump = perf_stdout(&["script", "-D", "-i", s(file)]);
    let mut samples: Vec<(u64, Vec<(u64, u64)>)> = Vec::new();
    let mut in_sample = false;
    for line in dump.lines() {
        if line.contains(": PERF_RECORD_") {
            in_sample = line.contains(": PERF_RECORD_SAMPLE(");
            if in_sample {
                let time = line.split_whitespace().nth(1).unwrap().parse().unwrap();
                samples.push((time, Vec::new()));
            }
        } else if let Some(rest) = line.strip_prefix("..... id ").filter(|_| in_sample) {
            // `..... id 0000000000340150, value 000000000d89c302, lost 0`
            let mut words = rest.split(", ");
            let id = u64::from_str_radix(words.next().unwrap(), 16).unwrap();
            let value = words.next().unwrap().strip_prefix("value ").unwrap();
            let value = u64::from_str_radix(value, 16).unwrap();
            samples.last_mut().unwrap().1.push((id, value));
        }
    }
    samples.sort_by_key(|(time, _)| *time);
    samples
}

/// What perf shows of one file: its counter ids' events and its samples' raw values.
struct Seen {
    file: PathBuf,
    ids: BTreeMap<u64, String>,
    samples: Vec<(u64, Vec<(u64, u64)>)>,
}

fn seen(file: &Path) -> Seen {
    let (ids, inherited) = event_ids(file);
    assert!(
        !inherited,
        "{}: a group is opened without inherit",
        file.display()
    );
    Seen {
        file: file.to_path_buf(),
        ids,
        samples: raw_values(file),
    }
}

/// The oracle: per file, per member, the sum of its samples' deltas, each value's increase
/// since the previous value of the same counter id in this file or any before it (perf's
/// rule for counters that are not inherited, with the files one recording).
fn expected(files: &[Seen]) -> Vec<Totals> {
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    files
        .iter()
        .map(|seen| {
            let mut totals = Totals::new();
            for (_, values) in &seen.samples {
                let name = seen.file.display();
                assert_eq!(values.len(), MEMBERS.len(), "{name}: a group of three");
                for &(id, value) in values {
                    let before = last.insert(id, value).unwrap_or(0);
                    let delta = value.wrapping_sub(before);
                    *totals.entry(seen.ids[&id].clone()).or_default() += delta;
                }
            }
            totals.retain(|_, v| *v > 0);
            totals
        })
        .collect()
}

/// cpiflame's reading of `file` (a file or a folder of them): per event, the summed period.
fn ours(file: &Path) -> Totals {
    let mut warnings = Vec::new();
    let options = LoadOptions {
        file: file.to_path_buf(),
        ..Default::default()
    };
    let loaded = if file.is_dir() {
        cpiflame_pipeline::load_all(&options, &[file.to_path_buf()], &mut warnings)
    } else {
        load_any(&options, &mut warnings)
    }
    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let p = &loaded.profile;
    let mut totals = Totals::new();
    for stack in &p.stacks {
        for (e, c) in stack.counts.iter().enumerate() {
            *totals.entry(p.events[e].name.clone()).or_default() += c.period;
        }
    }
    totals.retain(|_, v| *v > 0);
    totals
}

/// `cpiflame record -e GROUP -F 1000 --call-graph fp FLAGS -o DIR/out.data cpu_mem_bound 0.3`; its stderr.
fn record(f: &support::Fixtures, dir: &Dir, flags: &[&str]) -> String {
    let data = dir.path("out.data");
    let mut args = vec!["record", "-e", GROUP, "-F", "1000", "--call-graph", "fp"];
    args.extend(flags);
    args.extend(["-o", s(&data), s(&f.cpu_mem_bound), "0.3"]);
    let out = support::cpiflame(&args);
    support::ok(&out);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The files a rotated recording left (`out.data.TIMESTAMP`), in the order written.
fn pieces(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("out.data.")
        })
        .collect();
    files.sort();
    files
}

/// The samples `cpiflame: dumped FILE (N samples, ...)` says each file holds.
fn dumped(stderr: &str) -> BTreeMap<PathBuf, u64> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("cpiflame: dumped "))
        .map(|l| {
            let (file, rest) = l.split_once(" (").unwrap();
            (
                PathBuf::from(file),
                rest.split_once(' ').unwrap().0.parse().unwrap(),
            )
        })
        .collect()
}

/// perf reads the file without a word on stderr, shows the `samples` the recorder wrote
/// and, per member, its own deltas from zero in this file (the READ records change nothing
/// of its reading): their sum is each counter's last value in the file.
fn perf_reads_alone(seen: &Seen, samples: u64) {
    let file = &seen.file;
    let name = file.display();
    let out = Command::new("perf")
        .args(["script", "-F", "event,period", "-i", s(file)])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "{name}: perf script: {stderr}"
    );
    let mut theirs = Totals::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // `  227132162   cpu-clock: `
        let [period, event] = line.split_whitespace().collect::<Vec<_>>()[..] else {
            panic!("{name}: perf script line {line:?}");
        };
        let event = event.trim_end_matches(':').to_string();
        *theirs.entry(event).or_default() += period.parse::<u64>().unwrap();
    }
    assert_eq!(seen.samples.len() as u64, samples, "{name}: perf's samples");
    let mut last = BTreeMap::new();
    for (_, values) in &seen.samples {
        last.extend(values.iter().copied());
    }
    let mut from_zero = Totals::new();
    for (id, value) in last {
        *from_zero.entry(seen.ids[&id].clone()).or_default() += value;
    }
    from_zero.retain(|_, v| *v > 0);
    assert_eq!(theirs, from_zero, "{name}: perf's deltas start from zero");
    let report = Command::new("perf")
        .args(["report", "--stdio", "-i", s(file)])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&report.stderr);
    if samples == 0 {
        // The workload's exit can leave a last file without a sample: perf report refuses
        // it, as any file without one.
        assert!(
            stderr.contains("has no samples"),
            "{name}: perf report: {stderr}"
        );
        return;
    }
    assert!(
        report.status.success() && stderr.trim().is_empty(),
        "{name}: perf report: {stderr}"
    );
}

#[test]
fn every_file_of_a_rotated_group_recording_weighs_its_own_increase() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("rotate-groups");
    let stderr = record(f, &dir, &["--switch-output", "32K"]);
    let files = pieces(dir.root());
    assert!(files.len() >= 3, "three files or more: {files:?}\n{stderr}");
    let counts = dumped(&stderr);
    let seen: Vec<Seen> = files.iter().map(|f| seen(f)).collect();
    let want = expected(&seen);
    let mut all = Totals::new();
    for (seen, want) in seen.iter().zip(&want) {
        let file = &seen.file;
        perf_reads_alone(seen, counts[file]);
        for (event, delta) in want {
            *all.entry(event.clone()).or_default() += delta;
        }
        if !seen.samples.is_empty() {
            assert_eq!(&ours(file), want, "{}: read alone", file.display());
        }
    }
    let mut members = MEMBERS.to_vec();
    members.sort();
    assert_eq!(
        all.keys().collect::<Vec<_>>(),
        members,
        "every member moved"
    );
    assert_eq!(ours(dir.root()), all, "the folder read as one");
}

#[test]
fn a_group_recording_without_rotation_is_unchanged() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("rotate-groups-one");
    let stderr = record(f, &dir, &[]);
    let file = dir.path("out.data");
    let seen = seen(&file);
    let written = stderr
        .lines()
        .find_map(|l| l.strip_prefix("cpiflame: wrote "))
        .and_then(|l| l.rsplit_once(": ")?.1.split_once(" samples"))
        .unwrap_or_else(|| panic!("no summary in {stderr}"));
    perf_reads_alone(&seen, written.0.parse().unwrap());
    let want = expected(std::slice::from_ref(&seen)).remove(0);
    assert_eq!(want.len(), MEMBERS.len(), "every member moved: {want:?}");
    assert_eq!(ours(&file), want);
}
