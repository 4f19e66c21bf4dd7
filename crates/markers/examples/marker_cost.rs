//! What one region (a start and a stop) costs, in nanoseconds, for each way of reading the
//! counters, with the same event group, in the same run. Prints a Markdown table.
//!
//! ```sh
//! cargo run --release -p cpiflame-markers --example marker_cost [-- --events SPECS] [--reps N] [--iters N]
//! ```
//!
//! Rows:
//! - `markers, read()`: this library with rdpmc turned off: one `read()` of the group per
//!   start and per stop, clock reads, deltas, multiplex scaling and the statistics
//!   (Welford + quantile sketch for ns and every event).
//! - `markers, lap()`: this library for back-to-back regions (`lap` closes one region and
//!   opens the next with the same reading): one `read()` per region.
//! - `markers, rdpmc`: this library reading through the mmap pages with `rdpmc` (only where
//!   every event is on a hardware counter the kernel lets user space read).
//! - `seed pattern`: what the seed's libpfm4 code does per pixel: two `read()` calls of the
//!   group and the deltas stored in an array; no statistics.
//! - `one read() of the group` and `two clock reads`: the parts, for reference.
//!
//! Each row is timed over `iters` regions per repetition; the figure is the median over `reps`
//! repetitions (rows interleaved, so drift affects all alike), with the fastest repetition
//! and the 90th percentile beside it.

use std::fs::File;
use std::hint::black_box;
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use cpiflame_counters::rdpmc::MappedCounter;
use cpiflame_counters::read::{parse_group, Reading, READ_FORMAT_GROUP};
use cpiflame_counters::sys;
use cpiflame_events::{parse_events, SYSFS_ROOT};
use cpiflame_markers::{Markers, Options, ReadPath, DEFAULT_EVENTS, SOFTWARE_EVENTS};
use cpiflame_perf_data::attr_flags;
use cpiflame_perf_data::write::EventAttr;

/// The seed's group: leader and members opened with PERF_FORMAT_GROUP, read with `read()`.
struct SeedGroup {
    files: Vec<File>,
}

impl SeedGroup {
    fn open(specs: &str) -> Result<SeedGroup, String> {
        let specs = parse_events(specs).map_err(|e| e.to_string())?;
        let mut files: Vec<File> = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            let cfg = s
                .kind
                .resolve_in(Path::new(SYSFS_ROOT))
                .map_err(|e| format!("{}: {e}", s.name))?;
            let attr = EventAttr {
                type_: cfg.type_,
                config: cfg.config,
                config1: cfg.config1,
                config2: cfg.config2,
                read_format: READ_FORMAT_GROUP,
                flags: if i == 0 { attr_flags::DISABLED } else { 0 },
                ..EventAttr::default()
            };
            let f = sys::open(&attr, 0, -1, files.first())
                .map_err(|e| sys::explain_open_error(&s.name, &e))?;
            files.push(f);
        }
        let leader = files.first().ok_or("no events")?;
        sys::enable(leader).map_err(|e| format!("enable: {e}"))?;
        Ok(SeedGroup { files })
    }

    /// Why rdpmc is not available for these events, if it is not.
    fn rdpmc_unavailable(&self) -> Option<String> {
        for f in &self.files {
            match MappedCounter::new(f) {
                Err(e) => return Some(format!("mapping the counter page failed: {e}")),
                Ok(page) => {
                    if let Err(why) = page.availability() {
                        return Some(why.to_string());
                    }
                }
            }
        }
        None
    }
}

/// Median, min and p90 of `xs`.
fn summary(xs: &mut [f64]) -> (f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| xs[((xs.len() - 1) as f64 * q).round() as usize];
    (at(0.5), xs[0], at(0.9))
}

struct Row {
    name: &'static str,
    syscalls: &'static str,
    times: Vec<f64>,
    run: Box<dyn FnMut(u32)>,
}

fn main() -> ExitCode {
    let mut events: Option<String> = None;
    let (mut reps, mut iters) = (31usize, 20_000u32);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = args.next();
        match (a.as_str(), value) {
            ("--events", Some(v)) => events = Some(v),
            ("--reps", Some(v)) if v.parse::<usize>().is_ok_and(|n| n > 0) => {
                reps = v.parse().unwrap_or(reps)
            }
            ("--iters", Some(v)) if v.parse::<u32>().is_ok_and(|n| n > 0) => {
                iters = v.parse().unwrap_or(iters)
            }
            _ => {
                eprintln!("usage: marker_cost [--events SPECS] [--reps N] [--iters N]");
                return ExitCode::from(2);
            }
        }
    }
    let events = match events {
        Some(e) => e,
        None => match Markers::new(DEFAULT_EVENTS) {
            Ok(_) => DEFAULT_EVENTS.join(","),
            Err(e) => {
                eprintln!("note: {e}");
                SOFTWARE_EVENTS.join(",")
            }
        },
    };

    let open = |rdpmc: bool| {
        Markers::with_options(
            &[events.as_str()],
            Options {
                rdpmc,
                ..Options::default()
            },
        )
    };
    let mut syscall_markers = match open(false) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("marker_cost: {e}");
            return ExitCode::from(1);
        }
    };
    let rdpmc_markers = match open(true) {
        Ok(m) if m.read_path() == ReadPath::Rdpmc => Some(m),
        _ => None,
    };
    let seed = match SeedGroup::open(&events) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("marker_cost: {e}");
            return ExitCode::from(1);
        }
    };
    let rdpmc_note = seed
        .rdpmc_unavailable()
        .unwrap_or_else(|| "opened without rdpmc".to_string());
    let n = seed.files.len();
    if n > 16 {
        eprintln!("marker_cost: at most 16 events");
        return ExitCode::from(2);
    }

    let mut rows: Vec<Row> = Vec::new();
    let id = syscall_markers.register("r");
    rows.push(Row {
        name: "markers, read() of the group",
        syscalls: "2",
        times: Vec::new(),
        run: Box::new(move |k| {
            for _ in 0..k {
                syscall_markers.start(id);
                syscall_markers.stop(id);
            }
        }),
    });
    let mut lap_markers = match open(false) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("marker_cost: {e}");
            return ExitCode::from(1);
        }
    };
    let lap = lap_markers.register("r");
    rows.push(Row {
        name: "markers, lap(): back-to-back regions, read() of the group",
        syscalls: "1",
        times: Vec::new(),
        run: Box::new(move |k| {
            for _ in 0..k {
                lap_markers.lap(lap);
            }
        }),
    });
    if let Some(mut m) = rdpmc_markers {
        let id = m.register("r");
        rows.push(Row {
            name: "markers, rdpmc",
            syscalls: "0",
            times: Vec::new(),
            run: Box::new(move |k| {
                for _ in 0..k {
                    m.start(id);
                    m.stop(id);
                }
            }),
        });
    }
    let leader = match seed.files[0].try_clone() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("marker_cost: {e}");
            return ExitCode::from(1);
        }
    };
    let seed_leader = match leader.try_clone() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("marker_cost: {e}");
            return ExitCode::from(1);
        }
    };
    rows.push(Row {
        name: "seed pattern: 2 read() + deltas, no statistics",
        syscalls: "2",
        times: Vec::new(),
        run: Box::new(move |k| {
            let size = 24 + 16 * n;
            let (mut before, mut after) = ([0u8; 24 + 16 * 16], [0u8; 24 + 16 * 16]);
            let (mut pb, mut pa) = (Vec::with_capacity(n), Vec::with_capacity(n));
            // The seed kept every pixel's deltas; a ring keeps memory flat here.
            let mut deltas = vec![0u64; 1024 * n];
            for i in 0..k as usize {
                let nb = (&seed_leader).read(&mut before[..size]).unwrap_or(0);
                let na = (&seed_leader).read(&mut after[..size]).unwrap_or(0);
                if parse_group(&before[..nb], &mut pb).is_some()
                    && parse_group(&after[..na], &mut pa).is_some()
                {
                    let slot = (i % 1024) * n;
                    for (j, (a, b)) in pa.iter().zip(&pb).enumerate() {
                        deltas[slot + j] = a.value.wrapping_sub(b.value);
                    }
                }
            }
            black_box(&deltas);
        }),
    });
    rows.push(Row {
        name: "one read() of the group (reference)",
        syscalls: "1",
        times: Vec::new(),
        run: Box::new(move |k| {
            let mut buf = [0u8; 24 + 16 * 16];
            let mut out: Vec<Reading> = Vec::with_capacity(n);
            for _ in 0..k {
                let got = (&leader).read(&mut buf[..24 + 16 * n]).unwrap_or(0);
                black_box(parse_group(&buf[..got], &mut out));
            }
        }),
    });
    rows.push(Row {
        name: "two clock reads (reference)",
        syscalls: "0",
        times: Vec::new(),
        run: Box::new(|k| {
            for _ in 0..k {
                black_box(Instant::now());
                black_box(Instant::now());
            }
        }),
    });
    // Warm-up, then interleaved repetitions.
    for r in rows.iter_mut() {
        (r.run)(iters / 10 + 1);
    }
    for _ in 0..reps {
        for r in rows.iter_mut() {
            let t = Instant::now();
            (r.run)(iters);
            r.times
                .push(t.elapsed().as_nanos() as f64 / f64::from(iters));
        }
    }

    println!(
        "Cost of one region (start + stop), events: {events}; median of {reps} repetitions of {iters} regions"
    );
    println!();
    println!("| read path | syscalls per region | ns per region (median) | fastest | p90 |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for r in rows.iter_mut() {
        let (med, min, p90) = summary(&mut r.times);
        println!(
            "| {} | {} | {med:.0} | {min:.0} | {p90:.0} |",
            r.name, r.syscalls
        );
    }
    if !rows.iter().any(|r| r.name == "markers, rdpmc") {
        println!("| markers, rdpmc | 0 | not available here: {rdpmc_note} | | |");
    }
    ExitCode::SUCCESS
}
