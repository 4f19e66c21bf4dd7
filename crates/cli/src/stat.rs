//! `stat`'s flags.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

#[derive(Args)]
pub struct StatArgs {
    /// Events to count, perf style; the events of one -e are counted as one group (always
    /// together), or as its {...} groups when it has any (`-e '{a,b},{c,d}'`: two groups;
    /// events outside braces: one group per run). Repeat -e for more groups.
    #[arg(short = 'e', long = "event", value_name = "SPECS")]
    pub events: Vec<String>,
    /// One row per thread (and child process), with its name and tid.
    #[arg(long)]
    pub per_thread: bool,
    /// Print JSON instead of the table (schema in docs/cli.md).
    #[arg(long)]
    pub json: bool,
    /// Write the counts (table or JSON) to FILE instead of standard error, where they go
    /// by default, as perf stat's, so that the command's standard output stays its own.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The command to run; everything after it is its own arguments. A name that starts
    /// with `-` needs `--` before it. (An unknown flag before the command is an error, as
    /// for `record`.)
    #[arg(trailing_var_arg = true, value_name = "COMMAND", required = true)]
    pub command: Vec<OsString>,
}
