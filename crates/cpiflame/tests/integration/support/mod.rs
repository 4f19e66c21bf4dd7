//! Shared helpers for cpiflame's integration tests: build the workload
//! fixtures, record them with `perf record`, and parse `perf script` output
//! as an oracle for unwinding and symbolization.
//!
//! A module of the integration test binary (`main.rs`); its modules use it as
//! `crate::support`.
//!
//! Every helper returns `Result<_, String>` with context instead of
//! panicking, so a test can decide to skip (for example when
//! [`perf_works`] is false) or fail with a readable message.
//!
//! Synthetic recordings are written with `cpiflame_perf_data::synth` (the crate's
//! `synth` feature, enabled in this crate's dev-dependencies); [`synthetic_pid`] gives
//! each one a pid of its own.
//!
//! See `fixtures/README.md` for the workloads and their expected stacks, and
//! [`perf_script`] for what perf 6.1 prints and how it is parsed.

#![allow(dead_code, unused_imports)]

pub mod browser;
mod cli;
mod fixtures;
pub mod offcpu;
mod perf;
pub mod perf_script;
mod pids;

pub use cli::{cpiflame, cpiflame_at_home, ok, refused_in_one_line, s};
pub use cpiflame_testkit::{perf_works, Dir};
pub use fixtures::{
    build_fixtures, repo_root, run_scratch, sampled_data_program, sampling_fixtures,
    shared_fixtures, start_loop, Fixtures,
};
pub use perf::{perf_record, perf_record_with, perf_stdout, PERF_RECORD_DEFAULT_ARGS};
pub use perf_script::{
    parse_perf_script, perf_script_args, perf_script_samples, perf_script_samples_with,
    perf_script_text, ScriptFrame, ScriptOptions, ScriptSample, SCRIPT_FIELDS,
};
pub use pids::synthetic_pid;
