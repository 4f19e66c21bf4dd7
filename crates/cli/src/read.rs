//! The flags every command that reads a recording shares (where the binaries are, which
//! samples, which event plays which role, the root frames), and the options they make.

use std::path::{Path, PathBuf};

use clap::Args;
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::{GroupBy, LoadOptions, Roles};

/// The flags every reading command takes: where the binaries are, which samples.
#[derive(Args, Clone)]
pub struct ReadArgs {
    /// Look up the recorded binaries under DIR (for files recorded on another machine).
    #[arg(long, value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// Name kernel frames from FILE (/proc/kallsyms text, e.g. copied from the machine that
    /// recorded the file) instead of this machine's kernel.
    #[arg(long, value_name = "FILE")]
    pub kallsyms: Option<PathBuf>,
    /// Only samples in these ranges, as perf script --time: START,STOP (seconds as perf
    /// script prints them; either side empty), several separated by spaces, or percentages
    /// (10%-20%, 0%-10%,30%-40%, 10%/2, 25%).
    #[arg(long, value_name = "RANGES")]
    pub time: Option<String>,
    /// Only samples inside region NAME's intervals, each on the thread that marked it: the
    /// regions a program marked with the markers library (or any writer of samply's
    /// marker-PID.txt files), read from the marker files the recording mapped, else from
    /// the recording's folder. perf.data only; with --time, inside both.
    #[arg(long, value_name = "NAME")]
    pub region: Option<String>,
    /// Look for JIT dumps (jit-PID.dump) and perf maps (perf-PID.map) in DIR first
    /// (repeatable); then in the recording's FILE.jit/ folder and its own folder.
    #[arg(long = "jit-dir", value_name = "DIR")]
    pub jit_dirs: Vec<PathBuf>,
}

impl ReadArgs {
    /// How to read `file` with these flags (the defaults for every other choice).
    pub fn options(self, file: PathBuf, env: &Environment) -> LoadOptions {
        LoadOptions::new(file, self.symfs, self.kallsyms, env)
            .with_time(self.time)
            .with_region(self.region)
            .with_jit_dirs(self.jit_dirs)
    }
}

/// How to read a recording: which events play which role, where the binaries are.
#[derive(Args, Clone)]
pub struct SourceArgs {
    /// Event that gives the colour (stall cycles); any event of the file, by name.
    #[arg(long, value_name = "NAME")]
    pub stalls: Option<String>,
    /// Event that gives the width (unhalted cycles); any event of the file, by name.
    #[arg(long, value_name = "NAME")]
    pub cycles: Option<String>,
    /// Event that CPI divides by (retired instructions); any event of the file, by name.
    #[arg(long, value_name = "NAME")]
    pub instructions: Option<String>,
    /// Leave kernel frames out of the stacks.
    #[arg(long)]
    pub no_kernel: bool,
    /// Leave off-CPU time out: the on-CPU graph of a recording with context-switch data.
    #[arg(long)]
    pub on_cpu_only: bool,
    /// CPU of the top-down events, as perf.data's CPUID (GenuineIntel,6,143,8;
    /// AuthenticAMD,25,17,1; an Arm MIDR 0x410fd490): for text input, or to override.
    #[arg(long, value_name = "CPUID")]
    pub topdown_cpu: Option<String>,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// The root frames of the stacks.
#[derive(Args, Clone, Copy, Default)]
pub struct Roots {
    /// Root frames: cgroup (its path, then `comm [pid]`), process (`comm [pid]`), thread
    /// (`comm [pid]`, then `comm [tid]`) or comm. Default for a system-wide recording (-a,
    /// -C): cgroup when samples carry cgroup ids, else process; else comm.
    #[arg(long, value_name = "HOW")]
    pub group_by: Option<GroupBy>,
    /// Root frame `comm-PID` instead of `comm`.
    #[arg(long)]
    pub pid: bool,
    /// Root frame `comm-PID/TID` instead of `comm`.
    #[arg(long)]
    pub tid: bool,
}

impl SourceArgs {
    /// How to read `file` with these flags and what the environment says.
    pub fn options(&self, file: &Path, roots: Roots, env: &Environment) -> LoadOptions {
        LoadOptions {
            roles: Roles {
                stalls: self.stalls.clone(),
                cycles: self.cycles.clone(),
                instructions: self.instructions.clone(),
            },
            kernel: !self.no_kernel,
            on_cpu_only: self.on_cpu_only,
            topdown_cpu: self.topdown_cpu.clone(),
            group_by: roots.group_by,
            pid: roots.pid,
            tid: roots.tid,
            ..self.read.clone().options(file.to_path_buf(), env)
        }
    }
}

/// Flags shared by `render` and `fold`.
#[derive(Args)]
pub struct InputArgs {
    /// perf.data, perf script text, or folded files to read (several, or a folder of them:
    /// added up).
    #[arg(default_value = "out.data", num_args = 1..)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub roots: Roots,
}

impl InputArgs {
    /// The options of a command that reads one recording (`what`): more files are an error.
    pub fn options(&self, what: &str, env: &Environment) -> Result<LoadOptions, OneRecording> {
        let [file] = self.files.as_slice() else {
            return Err(OneRecording {
                what: what.to_string(),
                given: self.files.len(),
            });
        };
        Ok(self.source.options(file, self.roots, env))
    }
}

/// `--confidence`'s parser: the error is the flag's one line.
pub fn confidence(text: &str) -> Result<f64, String> {
    cpiflame_pipeline::options::parse_confidence(text).map_err(|e| e.to_string())
}

/// A command that reads one recording was given several.
#[derive(Debug, thiserror::Error)]
#[error("{what} reads one recording ({given} given)")]
pub struct OneRecording {
    pub what: String,
    pub given: usize,
}
