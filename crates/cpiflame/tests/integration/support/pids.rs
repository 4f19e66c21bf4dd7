//! Process ids for synthetic recordings (written with `cpiflame_perf_data::synth`), so that
//! the perf maps of the tests of this one binary stay apart.

/// A pid for a synthetic recording that no process is likely to have, so its perf map is
/// the test's alone: `module` (0..4) gives each module of this binary its own range, `salt`
/// (0..16) each recording of the module. All tests of the binary share one process, so the
/// process id alone (what each test file used to salt with) no longer keeps them apart.
pub fn synthetic_pid(module: u32, salt: u32) -> i32 {
    assert!(module < 4 && salt < 16, "synthetic_pid({module}, {salt})");
    // pid_max is at most 2^22 = 4194304: 3_000_000 + 18_000 * 64 stays below it.
    (3_000_000 + (std::process::id() % 18_000) * 64 + module * 16 + salt) as i32
}
