//! `record`'s flags, and the request they make.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use cpiflame_events::memory::MemOptions;
use cpiflame_pipeline::options::Environment;
use cpiflame_record::plan::EventRequest;
use cpiflame_record::request::RecordRequest;
use cpiflame_record::runtimes::JitVars;

#[derive(Args)]
pub struct RecordArgs {
    /// Output file (an existing one is kept as FILE.old).
    #[arg(short, long, default_value = "out.data", value_name = "FILE")]
    pub output: PathBuf,
    /// Events to sample, perf style: names, rNNNN, pmu/event=..,umask=..,name=../, groups
    /// {a,b} and leader-sampled groups {a,b}:S (repeatable). Events outside braces are
    /// opened as one group per run.
    #[arg(short = 'e', long = "event", value_name = "SPECS")]
    pub events: Vec<String>,
    /// The stall event (the colour), any spec, software events included.
    #[arg(long, value_name = "SPEC")]
    pub stalls: Option<String>,
    /// The cycles event (the width), any spec.
    #[arg(long, value_name = "SPEC")]
    pub cycles: Option<String>,
    /// Also sample instructions, so the graph can show real CPI.
    #[arg(long)]
    pub with_instructions: bool,
    /// Record this CPU's pair (or --stalls/--cycles) as one leader-sampled group, as perf's
    /// {cycles,stalls,instructions}:S: cycles samples, and each sample reads the stall (and,
    /// with --with-instructions, instruction) counts. Needs a PMU: without one cpu-clock is
    /// recorded alone, as without this flag.
    #[arg(long, visible_alias = "group-sampling", conflicts_with = "events")]
    pub leader_sampling: bool,
    /// Sample memory accesses (loads with their latency, data address and data source, and
    /// stores) with this CPU's memory-sampling PMU (Intel PEBS load latency, AMD IBS);
    /// without one, an error: there is no fallback.
    #[arg(long, conflicts_with_all = ["events", "stalls", "cycles", "with_instructions", "leader_sampling"])]
    pub mem: bool,
    /// Record this CPU's top-down group, leader-sampled (`cpiflame list` shows it); an error
    /// naming the reason where the CPU has none.
    #[arg(long, conflicts_with_all = ["events", "stalls", "cycles", "with_instructions", "leader_sampling", "mem"])]
    pub topdown: bool,
    /// With --topdown: the top-down level, 1 or 2 (perf stat's --td-level). AMD level 2 adds
    /// two groups the kernel multiplexes; where the core has no level 2, an error.
    #[arg(long, value_name = "N", requires = "topdown", value_parser = clap::value_parser!(u8).range(1..=2))]
    pub td_level: Option<u8>,
    /// With --mem: sample loads taking more than N core cycles. Intel: ldlat, 1-65535,
    /// default 30. AMD: IBS's load-latency filter, 128-2048, Zen 5 and later only (refused
    /// on older parts); without it every op is sampled.
    #[arg(long, value_name = "N", requires = "mem")]
    pub ldlat: Option<u32>,
    /// With --mem: also sample physical data addresses (PERF_SAMPLE_PHYS_ADDR).
    #[arg(long, requires = "mem")]
    pub phys_data: bool,
    /// Sample every PERIOD events (all events the same period).
    #[arg(
        short = 'c',
        long = "count",
        value_name = "PERIOD",
        conflicts_with = "freq"
    )]
    pub period: Option<u64>,
    /// Sample FREQ times a second.
    #[arg(short = 'F', long = "freq", value_name = "HZ")]
    pub freq: Option<u64>,
    /// `dwarf[,SIZE]` (default; SIZE bytes of stack per sample), `fp`, or `none`.
    #[arg(long = "call-graph", value_name = "MODE", default_value = "dwarf")]
    pub call_graph: String,
    /// Attach to running processes (all their threads) instead of running a command.
    #[arg(short, long, value_name = "PID[,PID...]", conflicts_with = "command")]
    pub pid: Option<String>,
    /// Attach to these threads only.
    #[arg(short, long, value_name = "TID[,TID...]", conflicts_with_all = ["command", "pid"])]
    pub tid: Option<String>,
    /// System-wide: every process on every CPU, until `--duration`, Ctrl-C or the command
    /// exits.
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// System-wide on these CPUs only (`0,2-3`; with or without `-a`).
    #[arg(short = 'C', long = "cpu", value_name = "LIST")]
    pub cpu: Option<String>,
    /// With -a/-C: only this cgroup's tasks (path under the cgroup mount; perf's -G, one cgroup).
    #[arg(short = 'G', long = "cgroup", value_name = "NAME")]
    pub cgroup: Option<String>,
    /// Stop after this many seconds (a command gets SIGINT, as with Ctrl-C; cpiflame then
    /// exits 0, where a command that ends by itself gives its own status).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Ring buffer pages per CPU (a power of two; shrunk to what the kernel allows).
    #[arg(
        short = 'm',
        long = "mmap-pages",
        value_name = "PAGES",
        default_value_t = 2048
    )]
    pub mmap_pages: usize,
    /// Also record off-CPU time: context switches (with the stack at switch-out), their
    /// preempted/blocked flag, and wakeups (sched:sched_waking, where permitted).
    #[arg(long)]
    pub off_cpu: bool,
    /// Cut the recording into files that each stand alone (OUTPUT.TIMESTAMP, as perf): on
    /// SIGUSR2 (`signal`, the default), at SIZE (B/K/M/G) or after TIME (s/m/h/d).
    #[arg(long, value_name = "signal|SIZE|TIME", num_args = 0..=1, default_missing_value = "signal")]
    pub switch_output: Option<String>,
    /// With --switch-output: keep only the newest N files.
    #[arg(
        long = "switch-max-files",
        visible_alias = "max-files",
        value_name = "N"
    )]
    pub max_files: Option<usize>,
    /// The clock of sample times, perf's names: monotonic (mono, the default, as `perf record
    /// -k mono`: JIT dumps time their code on it), monotonic_raw (raw), realtime, boottime,
    /// tai, or perf (the kernel's perf clock, perf record's default).
    #[arg(short = 'k', long = "clockid", value_name = "CLOCK")]
    pub clockid: Option<String>,
    /// Set what JIT runtimes need to write their perf maps or JIT dumps, for the command:
    /// PYTHON_PERF_JIT_SUPPORT, PYTHONPERFSUPPORT, NODE_OPTIONS, DOTNET_PerfMapEnabled,
    /// JAVA_TOOL_OPTIONS (appended to yours, never replacing them); one line says what.
    #[arg(long)]
    pub jit: bool,
    /// Do not copy the kernel's symbols into perf's build-id cache (`~/.debug`), which
    /// `record` otherwise does once per kernel, as perf record does.
    #[arg(short = 'N', long = "no-buildid-cache")]
    pub no_buildid_cache: bool,
    /// The command to run and record; everything after it is its own arguments. A name
    /// that starts with `-` needs `--` before it.
    // No `allow_hyphen_values`: with it, a mistyped flag before the command (`record
    // --some-typo ./app`) was taken as the command. Without it clap refuses an unknown flag
    // by name; from the command's first word on, every argument is the command's.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

impl RecordArgs {
    /// What these flags ask `cpiflame-record` for; `cmdline` is the command line as given,
    /// kept in the file as perf keeps its own.
    pub fn request(self, cmdline: Vec<String>, env: &Environment) -> RecordRequest {
        RecordRequest {
            output: self.output,
            events: EventRequest {
                events: self.events,
                stalls: self.stalls,
                cycles: self.cycles,
                with_instructions: self.with_instructions,
                leader_sampling: self.leader_sampling,
                topdown: self.topdown,
                td_level: self.td_level.unwrap_or(1),
            },
            mem: self.mem.then_some(MemOptions {
                ldlat: self.ldlat,
                phys_addr: self.phys_data,
            }),
            period: self.period,
            freq: self.freq,
            call_graph: self.call_graph,
            pid: self.pid,
            tid: self.tid,
            all_cpus: self.all_cpus,
            cpu_list: self.cpu,
            command: self.command,
            duration: self.duration,
            mmap_pages: self.mmap_pages,
            buildid_cache: (!self.no_buildid_cache)
                .then(|| env.buildid_cache.clone())
                .flatten(),
            cmdline,
            off_cpu: self.off_cpu,
            switch_output: self.switch_output,
            max_files: self.max_files,
            cgroup: self.cgroup,
            clockid: self.clockid,
            jit: self
                .jit
                .then(|| JitVars::from_vars(|name| std::env::var_os(name))),
        }
    }
}
