//! `cpiflame record`: chooses the events (this CPU's stall/cycles pair, or what the flags
//! say), records the command or process, and reports what was written and lost.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use cpiflame_events::memory::MemOptions;
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::RecordingMarks;
use cpiflame_record::plan::{summary_lines, EventRequest};
use cpiflame_record::request::RecordRequest;
use cpiflame_record::runtimes::JitVars;
use cpiflame_record::{record, StatusLines};

use crate::{warn_all, Outcome};

#[derive(Args)]
pub struct RecordArgs {
    /// Output file (an existing one is kept as FILE.old).
    #[arg(short, long, default_value = "out.data", value_name = "FILE")]
    output: PathBuf,
    /// Events to sample, perf style: names, rNNNN, pmu/event=..,umask=..,name=../, groups
    /// {a,b} and leader-sampled groups {a,b}:S (repeatable). Events outside braces are
    /// opened as one group per run.
    #[arg(short = 'e', long = "event", value_name = "SPECS")]
    events: Vec<String>,
    /// The stall event (the colour), any spec, software events included.
    #[arg(long, value_name = "SPEC")]
    stalls: Option<String>,
    /// The cycles event (the width), any spec.
    #[arg(long, value_name = "SPEC")]
    cycles: Option<String>,
    /// Also sample instructions, so the graph can show real CPI.
    #[arg(long)]
    with_instructions: bool,
    /// Record this CPU's pair (or --stalls/--cycles) as one leader-sampled group, as perf's
    /// {cycles,stalls,instructions}:S: cycles samples, and each sample reads the stall (and,
    /// with --with-instructions, instruction) counts. Needs a PMU: without one cpu-clock is
    /// recorded alone, as without this flag.
    #[arg(long, visible_alias = "group-sampling", conflicts_with = "events")]
    leader_sampling: bool,
    /// Sample memory accesses (loads with their latency, data address and data source, and
    /// stores) with this CPU's memory-sampling PMU (Intel PEBS load latency, AMD IBS);
    /// without one, an error: there is no fallback.
    #[arg(long, conflicts_with_all = ["events", "stalls", "cycles", "with_instructions", "leader_sampling"])]
    mem: bool,
    /// Record this CPU's top-down group, leader-sampled (`cpiflame list` shows it); an error
    /// naming the reason where the CPU has none.
    #[arg(long, conflicts_with_all = ["events", "stalls", "cycles", "with_instructions", "leader_sampling", "mem"])]
    topdown: bool,
    /// With --topdown: the top-down level, 1 or 2 (perf stat's --td-level). AMD level 2 adds
    /// two groups the kernel multiplexes; where the core has no level 2, an error.
    #[arg(long, value_name = "N", requires = "topdown", value_parser = clap::value_parser!(u8).range(1..=2))]
    td_level: Option<u8>,
    /// With --mem: sample loads taking more than N core cycles. Intel: ldlat, 1-65535,
    /// default 30. AMD: IBS's load-latency filter, 128-2048, Zen 5 and later only (refused
    /// on older parts); without it every op is sampled.
    #[arg(long, value_name = "N", requires = "mem")]
    ldlat: Option<u32>,
    /// With --mem: also sample physical data addresses (PERF_SAMPLE_PHYS_ADDR).
    #[arg(long, requires = "mem")]
    phys_data: bool,
    /// Sample every PERIOD events (all events the same period).
    #[arg(
        short = 'c',
        long = "count",
        value_name = "PERIOD",
        conflicts_with = "freq"
    )]
    period: Option<u64>,
    /// Sample FREQ times a second.
    #[arg(short = 'F', long = "freq", value_name = "HZ")]
    freq: Option<u64>,
    /// `dwarf[,SIZE]` (default; SIZE bytes of stack per sample), `fp`, or `none`.
    #[arg(long = "call-graph", value_name = "MODE", default_value = "dwarf")]
    call_graph: String,
    /// Attach to running processes (all their threads) instead of running a command.
    #[arg(short, long, value_name = "PID[,PID...]", conflicts_with = "command")]
    pid: Option<String>,
    /// Attach to these threads only.
    #[arg(short, long, value_name = "TID[,TID...]", conflicts_with_all = ["command", "pid"])]
    tid: Option<String>,
    /// System-wide: every process on every CPU, until `--duration`, Ctrl-C or the command
    /// exits.
    #[arg(short = 'a', long = "all-cpus")]
    all_cpus: bool,
    /// System-wide on these CPUs only (`0,2-3`; with or without `-a`).
    #[arg(short = 'C', long = "cpu", value_name = "LIST")]
    cpu: Option<String>,
    /// With -a/-C: only this cgroup's tasks (path under the cgroup mount; perf's -G, one cgroup).
    #[arg(short = 'G', long = "cgroup", value_name = "NAME")]
    cgroup: Option<String>,
    /// Stop after this many seconds (a command gets SIGINT, as with Ctrl-C; cpiflame then
    /// exits 0, where a command that ends by itself gives its own status).
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// Ring buffer pages per CPU (a power of two; shrunk to what the kernel allows).
    #[arg(
        short = 'm',
        long = "mmap-pages",
        value_name = "PAGES",
        default_value_t = 2048
    )]
    mmap_pages: usize,
    /// Also record off-CPU time: context switches (with the stack at switch-out), their
    /// preempted/blocked flag, and wakeups (sched:sched_waking, where permitted).
    #[arg(long)]
    off_cpu: bool,
    /// Cut the recording into files that each stand alone (OUTPUT.TIMESTAMP, as perf): on
    /// SIGUSR2 (`signal`, the default), at SIZE (B/K/M/G) or after TIME (s/m/h/d).
    #[arg(long, value_name = "signal|SIZE|TIME", num_args = 0..=1, default_missing_value = "signal")]
    switch_output: Option<String>,
    /// With --switch-output: keep only the newest N files.
    #[arg(
        long = "switch-max-files",
        visible_alias = "max-files",
        value_name = "N"
    )]
    max_files: Option<usize>,
    /// The clock of sample times, perf's names: monotonic (mono, the default, as `perf record
    /// -k mono`: JIT dumps time their code on it), monotonic_raw (raw), realtime, boottime,
    /// tai, or perf (the kernel's perf clock, perf record's default).
    #[arg(short = 'k', long = "clockid", value_name = "CLOCK")]
    clockid: Option<String>,
    /// Set what JIT runtimes need to write their perf maps or JIT dumps, for the command:
    /// PYTHON_PERF_JIT_SUPPORT, PYTHONPERFSUPPORT, NODE_OPTIONS, DOTNET_PerfMapEnabled,
    /// JAVA_TOOL_OPTIONS (appended to yours, never replacing them); one line says what.
    #[arg(long)]
    jit: bool,
    /// Do not copy the kernel's symbols into perf's build-id cache (`~/.debug`), which
    /// `record` otherwise does once per kernel, as perf record does.
    #[arg(short = 'N', long = "no-buildid-cache")]
    no_buildid_cache: bool,
    /// The command to run and record; everything after it is its own arguments. A name
    /// that starts with `-` needs `--` before it.
    // No `allow_hyphen_values`: with it, a mistyped flag before the command (`record
    // --some-typo ./app`) was taken as the command. Without it clap refuses an unknown flag
    // by name; from the command's first word on, every argument is the command's.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Records the command; its exit status is the [`Outcome`].
pub fn record_command(args: RecordArgs, env: &Environment) -> Result<Outcome> {
    let request = RecordRequest {
        output: args.output,
        events: EventRequest {
            events: args.events,
            stalls: args.stalls,
            cycles: args.cycles,
            with_instructions: args.with_instructions,
            leader_sampling: args.leader_sampling,
            topdown: args.topdown,
            td_level: args.td_level.unwrap_or(1),
        },
        mem: args.mem.then_some(MemOptions {
            ldlat: args.ldlat,
            phys_addr: args.phys_data,
        }),
        period: args.period,
        freq: args.freq,
        call_graph: args.call_graph,
        pid: args.pid,
        tid: args.tid,
        all_cpus: args.all_cpus,
        cpu_list: args.cpu,
        command: args.command,
        duration: args.duration,
        mmap_pages: args.mmap_pages,
        buildid_cache: (!args.no_buildid_cache)
            .then(|| env.buildid_cache.clone())
            .flatten(),
        // Lossy: `std::env::args` panics on an argument that is not UTF-8 (`./app $'\xff'`).
        cmdline: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        off_cpu: args.off_cpu,
        switch_output: args.switch_output,
        max_files: args.max_files,
        cgroup: args.cgroup,
        clockid: args.clockid,
        jit: args
            .jit
            .then(|| JitVars::from_vars(|name| std::env::var_os(name))),
    };
    let (options, notes) =
        request.plan(|plan| RecordingMarks::words_for(plan.no_pmu, &plan.roles))?;
    for n in &notes {
        eprintln!("cpiflame: {n}");
    }
    let mut lines = StatusLines::new(std::io::stderr(), std::io::stderr().is_terminal());
    let report = record(&options, &mut |status| lines.show(status));
    lines.end();
    let report = report?;
    warn_all(&report.warnings);
    let (summary, warnings) = summary_lines(&options, &report);
    eprintln!("cpiflame: {summary}");
    warn_all(&warnings);
    // A command stopped at --duration ends as planned: status 0, not its 130 (a CI step).
    Ok(match report.status {
        Some(status) if !report.stopped_at_duration => Outcome::Command(status.code()),
        _ => Outcome::Done,
    })
}
