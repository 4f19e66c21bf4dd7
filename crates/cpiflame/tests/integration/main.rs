//! cpiflame's integration tests: one test binary (built and linked once) whose modules drive
//! the real executable (`CARGO_BIN_EXE_cpiflame`), `perf` as the oracle, and the fixtures
//! built by `scripts/build-fixtures.sh`.
//!
//! One binary means one process for all of them, where they used to be a process each:
//! * scratch directories come from `support::Dir` (`cpiflame_testkit::Dir`, unique per
//!   call), never from a name that only the process id made unique;
//! * synthetic recordings take their pids from `support::synthetic_pid`, one range per
//!   module, so two modules never write the same `/tmp/perf-PID.map`;
//! * the fixtures are built once per process (`support::shared_fixtures`);
//! * no test sets an environment variable or the current directory of this process (the
//!   child's, with `Command::env` / `current_dir`, only);
//! * tests that change the host (a tmpfs mount, kernel.perf_event_paranoid, a test user)
//!   are named `host_changing_*`: they need root, and without it they say why they did not
//!   run (`cpiflame_testkit::unavailable`: a skip locally, a failure under `CI=true`).
//!
//! Run one module with `cargo test -p cpiflame --test integration MODULE::`.

mod support;

mod annotate;
mod c2c;
mod cgroup;
mod cli_docs;
mod compare;
mod containers;
mod event_attrs;
mod faults;
mod fleet;
mod gate;
mod golden;
mod group_by;
mod hot_lines;
mod jit_fixture;
mod jit_runtimes;
mod kallsyms;
mod killed;
mod lbr;
mod leader_sampling;
mod mem_render;
mod memory;
mod merge;
mod oracle;
mod perf_script_input;
mod pictures;
mod pprof;
mod readme_picture;
mod record;
mod record_clock;
mod record_jit;
mod record_off_cpu;
mod regions;
mod rotate_groups;
mod saved_machines;
mod stat;
mod support_selftest;
mod switch_output;
mod symbols;
mod synthetic;
mod system_wide;
mod threads_and_progress;
mod time_ranges;
mod timeline;
mod topdown;
mod topdown_carry;
mod topdown_graph;
mod tracepoints;
mod variants;
mod viewers;
mod wall_diff;
mod wall_oracle;
mod wall_text;
mod wall_time;
mod wall_truth;
