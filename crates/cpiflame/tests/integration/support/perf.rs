//! Running `perf record`.
//!
//! Facts checked on the reference VM (x86_64, no hardware PMU, Debian
//! linux-perf 6.1, running as root, perf_event_paranoid 2, kptr_restrict 0):
//!
//! * Only software events work: `cpu-clock` and `task-clock` (hrtimer
//!   sampled). `perf record -e cpu-clock,task-clock` records both with one
//!   sample stream each; both default to `-F 4000` (4000 Hz).
//! * `--call-graph dwarf` copies 8192 bytes of user stack per sample by
//!   default (`--call-graph dwarf,SIZE` changes it, up to 65528). At 4000 Hz
//!   with two events that is ~16 MB of perf.data per CPU-second (a 1.3 s run
//!   of `threads` on 2 CPUs: 160 MB, ~20 000 samples, and perf reports a few
//!   lost chunks). Tests should pass `-F 250` or so, and a small workload
//!   scale, through `extra`.
//! * The kernel copies the user stack without faulting pages in, so the dump
//!   stops early at a stack page that was never touched, whatever SIZE is.
//! * As root the chain includes kernel frames (`[kernel.kallsyms]`) above
//!   the user frames when a sample hits kernel code; `--user-callchains`
//!   drops them.
//! * perf record exits with the workload's exit status (1 for `false`,
//!   255 when the command cannot be run).
//! * Without `-N` perf copies every DSO it saw into the build-id cache
//!   `~/.debug`; [`PERF_RECORD_DEFAULT_ARGS`] passes `-N` so tests leave no
//!   trace there. `perf script` then reads the binaries from their original
//!   paths, so keep them until the script ran (the `[vdso]` still resolves).

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Stdio};

/// What [`perf_record`] passes before `extra`: quiet, DWARF call graphs with
/// the default 8192-byte stack dump, no build-id cache update.
pub const PERF_RECORD_DEFAULT_ARGS: &[&str] = &["-q", "--call-graph", "dwarf", "-N"];

/// Runs `perf record -e EVENTS -q --call-graph dwarf -N EXTRA... -o OUT -- CMD...`.
///
/// `extra` comes after the defaults, so it can override them: a later
/// `--call-graph dwarf,32768` (or `--call-graph fp`) replaces the default,
/// and `-F 250`/`-c N` set the sampling rate. Fails with perf's and the
/// workload's output if perf exits non-zero (which includes the workload
/// exiting non-zero) or writes no file.
pub fn perf_record<S: AsRef<OsStr>>(
    out_data: &Path,
    events: &str,
    extra: &[&str],
    cmd: &[S],
) -> Result<(), String> {
    let mut args: Vec<OsString> = Vec::new();
    args.extend(PERF_RECORD_DEFAULT_ARGS.iter().map(OsString::from));
    args.extend(extra.iter().map(OsString::from));
    perf_record_with(out_data, events, &args, cmd)
}

/// Like [`perf_record`], but `args` replaces [`PERF_RECORD_DEFAULT_ARGS`]
/// and `extra` entirely (only `-e EVENTS` and `-o OUT` are added).
pub fn perf_record_with<A: AsRef<OsStr>, S: AsRef<OsStr>>(
    out_data: &Path,
    events: &str,
    args: &[A],
    cmd: &[S],
) -> Result<(), String> {
    if cmd.is_empty() {
        return Err("perf_record: empty command".to_string());
    }
    let mut command = Command::new("perf");
    command
        .arg("record")
        .arg("-e")
        .arg(events)
        .args(args)
        .arg("-o")
        .arg(out_data)
        .arg("--")
        .args(cmd)
        .stdin(Stdio::null());
    let shown = format!("{command:?}");
    let output = command
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{shown} failed ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    if !out_data.is_file() {
        return Err(format!(
            "{shown} succeeded but wrote no {}:\n{}",
            out_data.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

/// `perf ARGS...`'s standard output; fails with its stderr when perf exits non-zero.
pub fn perf_stdout(args: &[&str]) -> String {
    let out = Command::new("perf").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "perf {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
