//! The perf oracle: whether `perf record` can sample on this machine.
//!
//! One probe for every test that runs `perf` (the oracle of the reader, the unwinder and the
//! command line). It must never decide for the test what to do when perf cannot run: the
//! caller says why with [`crate::unavailable`] (skip locally, fail under `CI=true`).

use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// True if `perf` is on PATH and `perf record -q -e cpu-clock -o FILE -- true` succeeds and
/// writes FILE (it fails without permission, e.g. as a user with perf_event_paranoid > 1,
/// or in a container without perf_event_open). Probed once per test process.
pub fn perf_works() -> bool {
    static WORKS: OnceLock<bool> = OnceLock::new();
    *WORKS.get_or_init(probe)
}

fn probe() -> bool {
    let dir = crate::Dir::new("perf-probe");
    let data = dir.path("probe.data");
    Command::new("perf")
        .arg("record")
        .args(["-q", "-e", "cpu-clock", "-o"])
        .arg(&data)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        && data.is_file()
}
