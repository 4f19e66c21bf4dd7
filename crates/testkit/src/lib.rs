//! Test-only helpers of cpiflame (a dev-dependency of the crates whose tests need one).
//!
//! The project's rule: a test never passes by skipping. Where a test cannot run its oracle
//! (`perf` cannot record, `node` or `setpriv` is missing, the test needs root), it calls
//! [`unavailable`] and returns: on a developer's machine that prints `skipped: REASON` to
//! stderr; under `CI=true` (or `CI=1`) it panics, so CI is never green without its oracles.
//! `scripts/test.sh` installs every tool the tests call, so there a skip is a machine problem.
//!
//! The decision is [`decide`], a pure function of the value of `CI` and the reason, so it is
//! tested without touching the process environment.
//!
//! Beside that rule, the helpers every test binary of the workspace used to carry its own
//! copy of: the perf oracle's probe ([`perf_works`]), scratch directories ([`Dir`]) and
//! golden files with the `CPIFLAME_BLESS=1` switch ([`assert_golden`]).

use std::fmt::Display;

mod dir;
pub mod golden;
mod perf;

pub use dir::Dir;
pub use golden::assert_golden;
pub use perf::perf_works;

/// Whether this process runs as root (effective uid 0): tests that change the host (mount a
/// tmpfs, set kernel.perf_event_paranoid, add a user) need it, and say so with
/// [`unavailable`] (`"needs root: ..."`) when it is missing.
pub fn is_root() -> bool {
    extern "C" {
        fn geteuid() -> u32;
    }
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { geteuid() == 0 }
}

/// What a test does when its oracle cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Not under CI: print this line (`skipped: REASON`) to stderr and return.
    Skip(String),
    /// Under CI: panic with this message (`oracle unavailable under CI=VALUE: REASON`).
    Fail(String),
}

/// Whether a value of the `CI` environment variable means "running under CI": `true`
/// (any case) or `1`, as CI services set it. Unset, empty, `false` or `0` do not.
pub fn is_ci(ci: Option<&str>) -> bool {
    ci.is_some_and(|v| {
        let v = v.trim();
        v.eq_ignore_ascii_case("true") || v == "1"
    })
}

/// What to do when a test's oracle is unavailable for `reason`, given the value of `CI`.
pub fn decide(ci: Option<&str>, reason: &str) -> Decision {
    match ci {
        Some(v) if is_ci(ci) => Decision::Fail(format!(
            "oracle unavailable under CI={}: {reason}",
            v.trim()
        )),
        _ => Decision::Skip(format!("skipped: {reason}")),
    }
}

/// Called by a test that cannot run its oracle, just before it returns: panics under
/// `CI=true` (the test fails, naming `reason`), otherwise prints `skipped: REASON` to
/// stderr and returns so the caller can return.
#[track_caller]
pub fn unavailable(reason: impl Display) {
    let ci = std::env::var("CI").ok();
    match decide(ci.as_deref(), &reason.to_string()) {
        Decision::Fail(message) => panic!("{message}"),
        Decision::Skip(line) => eprintln!("{line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_oracle_fails_under_ci_true() {
        assert_eq!(
            decide(Some("true"), "perf is not installed"),
            Decision::Fail("oracle unavailable under CI=true: perf is not installed".into())
        );
    }

    #[test]
    fn ci_1_and_other_spellings_of_true_fail_too() {
        for v in ["1", "TRUE", "True", " true\n"] {
            assert!(
                matches!(decide(Some(v), "node is missing"), Decision::Fail(m) if m.ends_with(": node is missing")),
                "CI={v:?}"
            );
        }
    }

    #[test]
    fn without_ci_a_missing_oracle_is_a_printed_skip() {
        assert_eq!(
            decide(None, "setpriv (util-linux) is not installed"),
            Decision::Skip("skipped: setpriv (util-linux) is not installed".into())
        );
    }

    #[test]
    fn ci_set_to_something_else_is_not_ci() {
        for v in ["", "false", "0", "no", "yes-ish"] {
            assert_eq!(
                decide(Some(v), "x"),
                Decision::Skip("skipped: x".into()),
                "CI={v:?}"
            );
        }
    }

    // `unavailable` itself reads the real environment; whichever way it decides, it must do
    // what `decide` says: panic with the Fail message, or return after printing.
    #[test]
    fn unavailable_follows_decide_for_this_process() {
        let ci = std::env::var("CI").ok();
        let outcome = std::panic::catch_unwind(|| unavailable("the oracle of this test"));
        match decide(ci.as_deref(), "the oracle of this test") {
            Decision::Fail(message) => {
                let payload = outcome.expect_err("under CI, unavailable panics");
                let got = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_default();
                assert_eq!(got, message);
            }
            Decision::Skip(_) => assert!(outcome.is_ok(), "without CI, unavailable returns"),
        }
    }
}
