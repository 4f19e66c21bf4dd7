//! `cpiflame stat`: counts events for a command and everything it starts, and prints a
//! perf-stat-like table (or JSON), with derived ratios and optional per-thread rows.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use cpiflame_counters::stat::{derive, probe, stat, CountEvent, StatOptions, StatReport};
use cpiflame_events::{
    discover_pmus, parse_events, presets, role_of, Arch, EventRef, Role, SYSFS_ROOT,
};

use crate::Outcome;

#[derive(Args)]
pub struct StatArgs {
    /// Events to count, perf style; the events of one -e are counted as one group (always
    /// together). Repeat -e for more groups.
    #[arg(short = 'e', long = "event", value_name = "SPECS")]
    events: Vec<String>,
    /// One row per thread (and child process), with its name and tid.
    #[arg(long)]
    per_thread: bool,
    /// Print JSON instead of the table (schema in README).
    #[arg(long)]
    json: bool,
    /// The command to run (put `--` before it if it has flags of its own).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND",
        required = true
    )]
    command: Vec<OsString>,
}

fn count_event(text: &str) -> Result<Vec<CountEvent>> {
    let specs = parse_events(text).with_context(|| format!("-e {text}"))?;
    specs
        .iter()
        .map(|s| {
            let attr = s
                .kind
                .resolve_in(Path::new(SYSFS_ROOT))
                .with_context(|| format!("-e {}: PMU not found", s.name))?;
            Ok(CountEvent {
                type_: attr.type_,
                config: attr.config,
                config1: attr.config1,
                config2: attr.config2,
                name: s.name.clone(),
                exclude_user: s.exclude_user,
                exclude_kernel: s.exclude_kernel,
            })
        })
        .collect()
}

const SOFTWARE_SET: &str = "task-clock,context-switches,cpu-migrations,page-faults";

/// The default groups: cycles, instructions and this CPU's stall event together, branches
/// and branch misses together; each group split into single events if it does not fit the
/// counters; the software set when there is no PMU.
fn default_groups() -> Result<(Vec<Vec<CountEvent>>, Option<String>)> {
    let mut first = "cycles,instructions".to_string();
    if let Ok(cpu) = cpiflame_events::detect() {
        let pmus = discover_pmus(Path::new(SYSFS_ROOT)).unwrap_or_default();
        if let Some(c) = presets(&cpu, &pmus).candidates.first() {
            first.push(',');
            first.push_str(&c.stalls);
        }
    }
    let wanted = [first.as_str(), "branches,branch-misses"];
    let mut groups = Vec::new();
    for text in wanted {
        let Ok(group) = count_event(text) else {
            continue;
        };
        if probe(std::slice::from_ref(&group)).is_ok() {
            groups.push(group);
            continue;
        }
        // Too many for the counters together, or some do not exist: each on its own.
        for e in group {
            let single = vec![e];
            if probe(std::slice::from_ref(&single)).is_ok() {
                groups.push(single);
            }
        }
    }
    if groups.is_empty() {
        return Ok((
            vec![count_event(SOFTWARE_SET)?],
            Some("hardware counters are unavailable here (no PMU, as in most VMs): counting software events".into()),
        ));
    }
    Ok((groups, None))
}

pub fn stat_command(args: StatArgs) -> Result<Outcome> {
    let (groups, note) = if args.events.is_empty() {
        default_groups()?
    } else {
        let mut groups = Vec::new();
        for text in &args.events {
            groups.push(count_event(text)?);
        }
        (groups, None)
    };
    if let Some(n) = &note {
        eprintln!("cpiflame: {n}");
    }
    let options = StatOptions {
        groups,
        command: args.command.clone(),
    };
    let report = stat(&options)?;
    let command: Vec<String> = args
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let text = if args.json {
        json(&report, &command, &options)
    } else {
        table(&report, &command, &options, args.per_thread)
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(Outcome::Command(report.status.code()))
}

/// Thousands separators, as perf prints counts.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The derived ratios of a report.
fn derived(report: &StatReport, options: &StatOptions) -> cpiflame_counters::stat::Derived {
    let [cycles, instructions, stalls, branches, branch_misses, cache_misses] =
        by_role(report, options);
    derive(
        cycles,
        instructions,
        stalls,
        branches,
        branch_misses,
        cache_misses,
    )
}

/// Scaled totals by role, for the derived lines.
fn by_role(report: &StatReport, options: &StatOptions) -> [Option<u64>; 6] {
    let events: Vec<&CountEvent> = options.groups.iter().flatten().collect();
    let arch = Arch::from_perf(Some(std::env::consts::ARCH));
    let mut roles = [None; 6];
    for (i, e) in events.iter().enumerate() {
        let value = report.totals[i].reading().scaled();
        let r = EventRef {
            type_: e.type_,
            config: e.config,
            name: &e.name,
        };
        let slot = match (role_of(r, arch), e.name.as_str()) {
            (Some(Role::Cycles), _) => 0,
            (Some(Role::Instructions), _) => 1,
            (Some(Role::Stalls), _) => 2,
            (_, "branches" | "branch-instructions") => 3,
            (_, "branch-misses") => 4,
            (_, "cache-misses") => 5,
            _ => continue,
        };
        roles[slot] = roles[slot].or(value);
    }
    roles
}

fn table(
    report: &StatReport,
    command: &[String],
    options: &StatOptions,
    per_thread: bool,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n Performance counter stats for '{}':\n",
        command.join(" ")
    );
    let [cycles, instructions, stalls, branches, branch_misses, cache_misses] =
        by_role(report, options);
    let d = derive(
        cycles,
        instructions,
        stalls,
        branches,
        branch_misses,
        cache_misses,
    );
    let events: Vec<&CountEvent> = options.groups.iter().flatten().collect();
    for (i, name) in report.events.iter().enumerate() {
        let r = report.totals[i].reading();
        let shown = match r.scaled() {
            Some(v) => cell(events[i], v),
            None => "<not counted>".to_string(),
        };
        let mut comment = String::new();
        if Some(r.scaled().unwrap_or(0)) == instructions
            && d.ipc.is_some()
            && instructions.is_some()
        {
            comment = format!(
                "# {:.2} insn per cycle (CPI {:.2})",
                d.ipc.unwrap_or(0.0),
                d.cpi.unwrap_or(0.0)
            );
        }
        if Some(r.scaled().unwrap_or(0)) == stalls && stalls.is_some() {
            if let Some(share) = d.stall_share {
                comment = format!("# {:.1}% of cycles stalled", share * 100.0);
            }
        }
        if name == "branch-misses" {
            if let Some(rate) = d.branch_miss_rate {
                comment = format!("# {:.2}% of all branches", rate * 100.0);
            }
            if let Some(mpki) = d.branch_mpki {
                let _ = write!(comment, ", {mpki:.2} per 1000 instructions");
            }
        }
        if name == "cache-misses" {
            if let Some(mpki) = d.cache_mpki {
                comment = format!("# {mpki:.2} per 1000 instructions");
            }
        }
        let multiplexed = if r.time_running < r.time_enabled && r.time_enabled > 0 {
            format!(
                "  ({:.2}% of the time counted; scaled)",
                r.running_share() * 100.0
            )
        } else {
            String::new()
        };
        let _ = writeln!(s, "{shown:>20}      {name:<28} {comment}{multiplexed}");
    }
    let _ = writeln!(
        s,
        "\n{:>20.9} seconds time elapsed\n",
        report.elapsed.as_secs_f64()
    );
    if per_thread {
        let _ = write!(s, "{:<24}", "thread (comm-tid)");
        for name in &report.events {
            let _ = write!(s, " {name:>18}");
        }
        let _ = writeln!(s);
        for t in &report.threads {
            let _ = write!(s, "{:<24}", format!("{}-{}", t.comm, t.tid));
            for (i, c) in t.counts.iter().enumerate() {
                let shown = cell(events[i], c.reading().scaled().unwrap_or(0));
                let _ = write!(s, " {shown:>18}");
            }
            let _ = writeln!(s);
        }
        if let Some(counts) = &report.unattributed {
            let _ = write!(s, "{:<24}", "(unattributed)");
            for (i, c) in counts.iter().enumerate() {
                let shown = cell(events[i], c.reading().scaled().unwrap_or(0));
                let _ = write!(s, " {shown:>18}");
            }
            let _ = writeln!(s);
        }
        for (tid, comm) in &report.unreported {
            let _ = writeln!(
                s,
                "{comm}-{tid}: counted in the unattributed row (the kernel reported these threads' counts together)"
            );
        }
        let _ = writeln!(s);
    }
    s
}

/// A count as perf stat shows it: clocks in msec, other counts with thousands separators.
fn cell(event: &CountEvent, value: u64) -> String {
    if is_clock(&event.name) {
        format!("{:.2} msec", value as f64 / 1e6)
    } else {
        thousands(value)
    }
}

fn is_clock(name: &str) -> bool {
    matches!(name, "task-clock" | "cpu-clock")
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v}"),
        _ => "null".into(),
    }
}

fn json_counts(names: &[String], counts: &[cpiflame_counters::stat::EventCount]) -> String {
    let items: Vec<String> = names
        .iter()
        .zip(counts)
        .map(|(n, c)| {
            let r = c.reading();
            format!(
                "{{\"event\":{},\"value\":{},\"scaled\":{},\"time_enabled\":{},\"time_running\":{}}}",
                json_str(n),
                c.value,
                r.scaled().map_or("null".into(), |v| v.to_string()),
                c.time_enabled,
                c.time_running
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

fn json(report: &StatReport, command: &[String], options: &StatOptions) -> String {
    let d = derived(report, options);
    let threads: Vec<String> = report
        .threads
        .iter()
        .map(|t| {
            format!(
                "{{\"pid\":{},\"tid\":{},\"comm\":{},\"counts\":{}}}",
                t.pid,
                t.tid,
                json_str(&t.comm),
                json_counts(&report.events, &t.counts)
            )
        })
        .collect();
    let cmd: Vec<String> = command.iter().map(|c| json_str(c)).collect();
    let unattributed = match &report.unattributed {
        Some(c) => json_counts(&report.events, c),
        None => "null".into(),
    };
    let unreported: Vec<String> = report
        .unreported
        .iter()
        .map(|(tid, comm)| format!("{{\"tid\":{tid},\"comm\":{}}}", json_str(comm)))
        .collect();
    format!(
        "{{\"schema\":\"cpiflame-stat/1\",\"command\":[{}],\"exit_status\":{},\"elapsed_ns\":{},\"counts\":{},\"derived\":{{\"ipc\":{},\"cpi\":{},\"stall_share\":{},\"branch_miss_rate\":{},\"cache_mpki\":{},\"branch_mpki\":{}}},\"threads\":[{}],\"unattributed\":{},\"unreported\":[{}]}}\n",
        cmd.join(","),
        report.status.code(),
        report.elapsed.as_nanos(),
        json_counts(&report.events, &report.totals),
        json_num(d.ipc),
        json_num(d.cpi),
        json_num(d.stall_share),
        json_num(d.branch_miss_rate),
        json_num(d.cache_mpki),
        json_num(d.branch_mpki),
        threads.join(","),
        unattributed,
        unreported.join(",")
    )
}
