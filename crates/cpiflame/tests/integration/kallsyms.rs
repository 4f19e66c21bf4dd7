//! `--kallsyms FILE`: kernel frames named from a kallsyms text the user gives, as perf's
//! option does. A file recorded here, read with a copy of /proc/kallsyms in which one symbol
//! is renamed, shows the new name; a file from another host, whose kernel frames are
//! otherwise `[kernel]+0xADDR`, is named from the given text.

use crate::support;

use std::path::Path;
use std::process::Output;

use cpiflame_perf_data::abi::{callchain, misc, sample};
use cpiflame_perf_data::synth::{test_features, Recording};
use cpiflame_perf_data::write::{attr_flags, EventAttr, SampleFields};
use support::{cpiflame, perf_record, perf_works, shared_fixtures, Dir};

fn stdout(out: Output) -> String {
    assert!(
        out.status.success(),
        "cpiflame failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The kernel frames (`name_[k]`) of folded text, with their sample counts.
fn kernel_frames(folded: &str) -> Vec<(String, u64)> {
    let mut counts = std::collections::BTreeMap::new();
    for line in folded.lines() {
        let Some((stack, count)) = line.rsplit_once(' ') else {
            continue;
        };
        let count: u64 = count.parse().unwrap_or(0);
        for frame in stack.split(';') {
            if let Some(name) = frame.strip_suffix("_[k]") {
                *counts.entry(name.to_string()).or_insert(0) += count;
            }
        }
    }
    let mut v: Vec<_> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

#[test]
fn a_renamed_symbol_of_a_copied_kallsyms_names_the_frames_of_a_local_file() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock` fails)");
        return;
    }
    let kallsyms = match std::fs::read_to_string("/proc/kallsyms") {
        Ok(k) if k.lines().any(|l| !l.starts_with("0000000000000000")) => k,
        _ => {
            cpiflame_testkit::unavailable("/proc/kallsyms hides its addresses here");
            return;
        }
    };
    let fixtures = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("kallsyms-local");
    let data = dir.path("faults.data");
    // Page faults: most samples are in the kernel.
    perf_record(
        &data,
        "cpu-clock",
        &["--call-graph", "fp", "-F", "2000"],
        &[fixtures.faults.to_str().unwrap(), "20000"],
    )
    .unwrap();
    let data = data.to_str().unwrap();
    let before = stdout(cpiflame(&["fold", data]));
    // A kernel function the file's stacks hold, named in kallsyms by exactly one line.
    let (name, address) = kernel_frames(&before)
        .into_iter()
        .find_map(|(name, _)| {
            let mut lines = kallsyms
                .lines()
                .filter(|l| l.split_whitespace().nth(2) == Some(name.as_str()));
            let line = lines.next()?;
            lines
                .next()
                .is_none()
                .then(|| (name.clone(), line.to_string()))
        })
        .expect("a kernel frame named by one kallsyms line");
    let renamed = format!("cpiflame_renamed_{name}");
    let copy: String = kallsyms
        .lines()
        .map(|l| {
            if l == address {
                l.replacen(&format!(" {name}"), &format!(" {renamed}"), 1)
            } else {
                l.to_string()
            }
        })
        .map(|l| l + "\n")
        .collect();
    let copy_path = dir.path("kallsyms.txt");
    std::fs::write(&copy_path, copy).unwrap();
    let after = stdout(cpiflame(&[
        "fold",
        "--kallsyms",
        copy_path.to_str().unwrap(),
        data,
    ]));
    let frames = kernel_frames(&after);
    assert!(
        frames.iter().any(|(n, _)| *n == renamed),
        "{renamed} not among {frames:?}"
    );
    assert!(
        !frames.iter().any(|(n, _)| *n == name),
        "{name} still shown"
    );
    // `script` takes the flag too.
    let script = stdout(cpiflame(&[
        "script",
        "--kallsyms",
        copy_path.to_str().unwrap(),
        data,
    ]));
    assert!(script.contains(&renamed));
    // A file that cannot be read is an error, not silently unnamed frames.
    let missing = cpiflame(&[
        "fold",
        "--kallsyms",
        dir.path("nope").to_str().unwrap(),
        data,
    ]);
    assert!(!missing.status.success());
}

/// A file whose header says it was recorded on another host, with two kernel samples.
fn write_foreign(path: &Path) {
    let attr = EventAttr {
        type_: 1,
        config: 0,
        sample_period_or_freq: 1000,
        sample_type: sample::IDENTIFIER
            | sample::IP
            | sample::TID
            | sample::TIME
            | sample::PERIOD
            | sample::CALLCHAIN,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM,
        name: Some("cpu-clock".into()),
        ids: vec![3],
        ..EventAttr::default()
    };
    let pid = 4321;
    let mut rec = Recording::create(path, vec![attr]);
    rec.comm(pid, pid, "remote", 1);
    for (i, chain) in [
        vec![
            callchain::KERNEL,
            0xffff_ffff_8100_1010,
            0xffff_ffff_8100_2008,
        ],
        vec![callchain::KERNEL, 0xffff_ffff_8100_2010],
    ]
    .into_iter()
    .enumerate()
    {
        let fields = SampleFields {
            ip: chain[1],
            pid,
            tid: pid,
            time: 10 + i as u64,
            id: 3,
            period: 1000,
            callchain: chain,
            misc: misc::KERNEL,
            ..SampleFields::default()
        };
        rec.sample(0, &fields);
    }
    let mut features = test_features();
    features.hostname = Some("elsewhere.example".into());
    features.os_release = Some("0.0.0-elsewhere".into());
    rec.finish(&features);
}

#[test]
fn a_file_from_another_host_is_named_from_the_given_kallsyms() {
    let dir = Dir::new("kallsyms-foreign");
    let data = dir.path("foreign.data");
    write_foreign(&data);
    let kallsyms = dir.path("kallsyms.txt");
    std::fs::write(
        &kallsyms,
        "ffffffff81001000 T remote_leaf\n\
         ffffffff81002000 T remote_caller\n\
         ffffffff81003000 T remote_after [remote_mod]\n",
    )
    .unwrap();
    let data = data.to_str().unwrap();
    // Without it, this machine's kernel must not name another's frames.
    let plain = stdout(cpiflame(&["fold", data]));
    assert!(plain.contains("[kernel]+0xffffffff81001010"), "{plain}");
    let named = stdout(cpiflame(&[
        "fold",
        "--kallsyms",
        kallsyms.to_str().unwrap(),
        data,
    ]));
    assert_eq!(
        named,
        "remote;remote_caller_[k] 1\nremote;remote_caller_[k];remote_leaf_[k] 1\n"
    );
}

/// A `--kallsyms` file that is missing, a folder, garbage, a list of data symbols only, or a
/// copy made while the kernel hid its addresses (all 0) is refused in one line naming the flag
/// and the file, by every command that names frames (issue 41: garbage was ignored, exit 0,
/// every kernel frame `[kernel]+0x...`).
#[test]
fn a_kallsyms_file_that_names_no_kernel_function_is_refused_in_one_line() {
    let dir = Dir::new("kallsyms-bad");
    let data = dir.path("foreign.data");
    write_foreign(&data);
    let garbage = dir.path("garbage.txt");
    std::fs::write(
        &garbage,
        b"this is not kallsyms\n\x7fELF\x02\x01\x00\xff\xfe\n",
    )
    .unwrap();
    let data_only = dir.path("data-only.txt");
    std::fs::write(&data_only, "ffffffff82001000 D remote_table\n").unwrap();
    let hidden = dir.path("hidden.txt");
    std::fs::write(
        &hidden,
        "0000000000000000 T remote_leaf\n0000000000000000 T remote_caller\n",
    )
    .unwrap();
    let folder = dir.path("folder");
    std::fs::create_dir(&folder).unwrap();
    let cases = [
        (dir.path("missing.txt"), "No such file or directory"),
        (folder, "Is a directory"),
        (garbage, "no kernel function in it"),
        (data_only, "no kernel function in it"),
        (hidden, "every kernel function is at address 0"),
    ];
    let data = data.to_str().unwrap();
    for (file, says) in &cases {
        for command in ["fold", "report", "script", "render"] {
            let out = cpiflame(&[command, "--kallsyms", file.to_str().unwrap(), data]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command} {file:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{command} {file:?}: {stderr}");
            let line = format!("cpiflame: error: --kallsyms {}: ", file.display());
            assert!(stderr.starts_with(&line), "{command}: {stderr}");
            assert!(stderr.contains(says), "{command}: {stderr}");
        }
    }
}

/// `cpiflame record` keeps a copy of the kernel's symbols in perf's build-id cache, as perf
/// record does, and naming reads that copy instead of making the kernel generate
/// /proc/kallsyms again; but only while the copy matches the recording.
#[test]
fn record_caches_the_kernel_symbols_and_naming_uses_the_copy_only_when_it_matches() {
    let kallsyms = match std::fs::read_to_string("/proc/kallsyms") {
        Ok(k) if k.lines().any(|l| !l.starts_with("0000000000000000")) => k,
        _ => {
            cpiflame_testkit::unavailable("/proc/kallsyms hides its addresses here");
            return;
        }
    };
    let notes = std::fs::read("/sys/kernel/notes").unwrap_or_default();
    let Some(build_id) = cpiflame_unwind::gnu_build_id_note(&notes) else {
        cpiflame_testkit::unavailable("the kernel has no build-id note (/sys/kernel/notes)");
        return;
    };
    let id: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    let fixtures = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("kallsyms-cache");
    let home = dir.path("home");
    std::fs::create_dir_all(&home).unwrap();
    let data = dir.path("faults.data");
    let (data, faults) = (data.to_str().unwrap(), fixtures.faults.to_str().unwrap());
    let cached = home
        .join(".debug/[kernel.kallsyms]")
        .join(&id)
        .join("kallsyms");
    // A copy from another boot (KASLR put `_text` elsewhere) is replaced: kept, it would never
    // match a recording again.
    std::fs::create_dir_all(cached.parent().unwrap()).unwrap();
    std::fs::write(&cached, "ffffffff00000000 T _text\n").unwrap();
    // Page faults: most samples are in the kernel.
    let recorded = support::cpiflame_at_home(
        &home,
        &[
            "record",
            "-o",
            data,
            "-e",
            "cpu-clock",
            "--call-graph",
            "fp",
            "--",
            faults,
            "20000",
        ],
    );
    assert!(
        recorded.status.success(),
        "{}",
        String::from_utf8_lossy(&recorded.stderr)
    );
    let copy = std::fs::read_to_string(&cached)
        .unwrap_or_else(|e| panic!("record left no {}: {e}", cached.display()));
    let text_line = |k: &str| {
        k.lines()
            .find(|l| l.ends_with(" _text"))
            .map(str::to_string)
    };
    assert_eq!(text_line(&copy), text_line(&kallsyms));
    assert!(copy.lines().count() * 10 > kallsyms.lines().count() * 9);
    // `-N` writes nothing, as perf record's `--no-buildid-cache`.
    let other_home = dir.path("other-home");
    std::fs::create_dir_all(&other_home).unwrap();
    let unrecorded = dir.path("n.data");
    let quiet = support::cpiflame_at_home(
        &other_home,
        &[
            "record",
            "-N",
            "-o",
            unrecorded.to_str().unwrap(),
            "-e",
            "cpu-clock",
            "--",
            faults,
            "100",
        ],
    );
    assert!(quiet.status.success());
    assert!(!other_home.join(".debug").exists());

    // One kernel function of the file, renamed in the cached copy only: the name shows that
    // the copy was read.
    let before = stdout(support::cpiflame_at_home(&home, &["fold", data]));
    let name = kernel_frames(&before)
        .into_iter()
        .map(|(name, _)| name)
        .find(|name| {
            copy.lines()
                .filter(|l| l.split_whitespace().nth(2) == Some(name.as_str()))
                .count()
                == 1
        })
        .expect("a kernel frame named by one kallsyms line");
    let renamed = format!("cpiflame_cached_{name}");
    let rename = |k: &str, from: &str, to: &str| -> String {
        k.lines()
            .map(|l| match l.split_whitespace().nth(2) {
                Some(n) if n == from => l.replacen(&format!(" {from}"), &format!(" {to}"), 1),
                _ => l.to_string(),
            })
            .map(|l| l + "\n")
            .collect()
    };
    std::fs::write(&cached, rename(&copy, &name, &renamed)).unwrap();
    let frames = kernel_frames(&stdout(support::cpiflame_at_home(&home, &["fold", data])));
    assert!(
        frames.iter().any(|(n, _)| *n == renamed),
        "{renamed} not among {frames:?}"
    );
    // A copy from another boot (KASLR moved `_text`): not used, /proc/kallsyms names it.
    let moved = rename(&copy, &name, &renamed).replacen(" T _text", " T _text_elsewhere", 1)
        + "ffffffff00000000 T _text\n";
    std::fs::write(&cached, moved).unwrap();
    let frames = kernel_frames(&stdout(support::cpiflame_at_home(&home, &["fold", data])));
    assert!(
        frames.iter().any(|(n, _)| *n == name),
        "{name} not among {frames:?}"
    );
    assert!(!frames.iter().any(|(n, _)| *n == renamed));
}

/// Kernel functions with several names at one address (`__do_sys_sync`, `__ia32_sys_sync`,
/// `__x64_sys_sync`; `__pi___x86_indirect_thunk_rax`, `__x86_indirect_thunk_rax`) are named as
/// perf names them, sample by sample, on a recording of `sync` made here.
#[test]
fn kernel_aliases_are_named_as_perf_names_them() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock` fails)");
        return;
    }
    let dir = Dir::new("kallsyms-aliases");
    let data = dir.path("sync.data");
    perf_record(
        &data,
        "cpu-clock",
        &["--call-graph", "fp", "-F", "4000"],
        &["sh", "-c", "for i in $(seq 1500); do sync; done"],
    )
    .unwrap();
    let perf = support::perf_script_samples(&data).expect("perf script");
    // Per kernel function, its frames over all samples: perf's, and cpiflame's from its folded
    // stacks (`name_[k]`), as `kernel_frames` counts them.
    let mut from_perf = std::collections::BTreeMap::new();
    for frame in perf
        .iter()
        .flat_map(|s| &s.frames)
        .filter(|f| f.is_kernel())
    {
        *from_perf.entry(frame.symbol.clone()).or_insert(0u64) += 1;
    }
    let ours: std::collections::BTreeMap<String, u64> =
        kernel_frames(&stdout(cpiflame(&["fold", data.to_str().unwrap()])))
            .into_iter()
            .collect();
    assert_eq!(ours, from_perf);
    let compared: u64 = from_perf.values().sum();
    // The recording must hold the aliased functions for the comparison to mean anything.
    assert!(compared > 1000, "only {compared} kernel frames");
    assert!(
        from_perf.keys().any(|n| n.ends_with("sys_sync")),
        "no sync syscall frame among {from_perf:?}"
    );
}
