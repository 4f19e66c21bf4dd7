//! Renders a synthetic profile, for eyeballing the picture and timing large profiles.
//!
//! `cargo run --release -p cpiflame-render --example synthetic -- OUT_DIR [STACKS]`
//! writes `cpi.svg`, `cpi-inverted.svg`, `single.svg`, `classic.svg`, `diff.svg` (against a
//! second run in which memory-bound leaves take longer and JSON parsing is gone) and
//! `wall.svg` (the same run with off-CPU time: locks, sleeps, pipes, disk reads) into OUT_DIR
//! and prints how long each took.

use std::fs::File;
use std::io::BufWriter;
use std::time::Instant;

use cpiflame_profile::wall::{BLOCKED, ON_CPU, RUNNABLE};
use cpiflame_profile::{Columns, Count, EventColumn, Frame, FrameKind, Profile, WallColumns};
use cpiflame_render::{render_classic, render_cpi, render_diff, render_wall, DiffOptions, Options};

/// xorshift64*: a fixed pseudo-random sequence, so the demo is the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const NAMES: &[&str] = &[
    "main",
    "run_queries",
    "hash_join",
    "probe",
    "build_table",
    "std::vector<Row, std::allocator<Row> >::push_back(Row const&)",
    "memcpy",
    "parse_json",
    "tokenize",
    "btree_search",
    "compare_keys",
    "malloc",
    "free",
    "write_results",
    "copy_user_generic",
    "do_syscall_64",
    "page_fault",
    "scan_column<long>",
    "decompress_lz4",
    "sort_merge",
];

/// A synthetic profile of `stacks` stacks. `changed` makes the second run of the diff: the
/// same stacks, except that memory-bound leaves take three times the cycles and stacks
/// through `parse_json` are gone.
fn synthetic(stacks: usize, changed: bool) -> Profile {
    let mut p = Profile::new(vec![
        EventColumn {
            name: "cpu_clk_unhalted.thread_p".into(),
        },
        EventColumn {
            name: "cycle_activity.stalls_total".into(),
        },
    ]);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let process = p.intern(Frame {
        name: "queryd".into(),
        module: String::new(),
        kind: FrameKind::Process,
    });
    for i in 0..stacks {
        let depth = 2 + rng.below(14) as usize;
        let mut frames = vec![process];
        for d in 0..depth {
            // Few choices near the root, more deeper down: a realistic fan-out.
            let choices = (2 + d as u64 * 2).min(NAMES.len() as u64);
            let name = NAMES[rng.below(choices) as usize];
            let kernel = matches!(name, "copy_user_generic" | "do_syscall_64" | "page_fault");
            frames.push(p.intern(Frame {
                name: if d + 1 == depth && stacks > 1000 {
                    format!("{name}#{}", i % 5000)
                } else {
                    name.to_string()
                },
                module: if kernel {
                    "[kernel.kallsyms]".into()
                } else {
                    "queryd".into()
                },
                kind: if kernel {
                    FrameKind::Kernel
                } else {
                    FrameKind::User
                },
            }));
        }
        let mut cycles = 1 + rng.below(50);
        // Memory-bound leaves stall more.
        let leaf = &p.frame(frames[frames.len() - 1]).name;
        let bias = if leaf.starts_with("memcpy")
            || leaf.starts_with("btree")
            || leaf.starts_with("probe")
            || leaf.starts_with("page_fault")
        {
            90
        } else {
            30
        };
        let stalled = cycles * rng.below(bias + 10) / 100;
        if changed {
            if frames.iter().any(|&f| p.frame(f).name == "parse_json") {
                continue;
            }
            if bias == 90 {
                cycles *= 3;
            }
        }
        p.add(
            &frames,
            0,
            Count {
                samples: cycles,
                period: cycles * 2_000_003,
            },
        );
        if stalled > 0 {
            p.add(
                &frames,
                1,
                Count {
                    samples: stalled,
                    period: stalled * 2_000_003,
                },
            );
        }
    }
    p
}

/// `profile` with wall-time columns: its cycles as on-CPU time at 2 GHz, some of it runnable,
/// and stacks that leave the CPU from a few of its frames, blocked in a lock, a sleep, a pipe
/// or a disk read.
fn with_wall(profile: &Profile) -> Profile {
    let mut events = profile.events.clone();
    for name in [ON_CPU, RUNNABLE, BLOCKED] {
        events.push(EventColumn { name: name.into() });
    }
    let mut p = Profile::new(events);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let waits: [(&str, &[&str]); 4] = [
        (
            "malloc",
            &["pthread_mutex_lock", "!futex_wait_queue", "!schedule"],
        ),
        ("write_results", &["write", "!pipe_write", "!schedule"]),
        (
            "btree_search",
            &["pread64", "!filemap_read", "!io_schedule", "!schedule"],
        ),
        (
            "run_queries",
            &["clock_nanosleep", "!do_nanosleep", "!schedule"],
        ),
    ];
    for stack in &profile.stacks {
        let frames: Vec<u32> = stack
            .frames
            .iter()
            .map(|&id| p.intern(profile.frame(id).clone()))
            .collect();
        for (e, &count) in stack.counts.iter().enumerate() {
            if count != Count::default() {
                p.add(&frames, e, count);
            }
        }
        let on_ns = stack.counts[0].period / 2;
        if on_ns > 0 {
            p.add(
                &frames,
                2,
                Count {
                    samples: stack.counts[0].samples,
                    period: on_ns,
                },
            );
            if rng.below(5) == 0 {
                p.add(
                    &frames,
                    3,
                    Count {
                        samples: 1,
                        period: on_ns / 2,
                    },
                );
            }
        }
        // Leave the CPU below a waiting frame, at the first one on the stack.
        let at = stack.frames.iter().enumerate().find_map(|(d, &id)| {
            let name = profile.frame(id).name.as_str();
            waits
                .iter()
                .find(|(w, _)| *w == name)
                .map(|(_, tail)| (d, *tail))
        });
        if let Some((d, tail)) = at {
            let mut blocked = frames[..=d].to_vec();
            for f in tail {
                let (kind, name) = match f.strip_prefix('!') {
                    Some(k) => (FrameKind::Kernel, k),
                    None => (FrameKind::User, *f),
                };
                blocked.push(
                    p.intern(Frame {
                        name: name.into(),
                        module: if kind == FrameKind::Kernel {
                            "[kernel.kallsyms]"
                        } else {
                            "libc.so.6"
                        }
                        .into(),
                        kind,
                    }),
                );
            }
            let ns = on_ns * (1 + rng.below(8));
            p.add(
                &blocked,
                4,
                Count {
                    samples: 1,
                    period: ns,
                },
            );
            p.add(
                &blocked,
                3,
                Count {
                    samples: 1,
                    period: ns / 20,
                },
            );
        }
    }
    p
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().unwrap_or_else(|| ".".into());
    let stacks: usize = match args.next() {
        Some(s) => s.parse()?,
        None => 400,
    };
    let t = Instant::now();
    let profile = synthetic(stacks, false);
    println!(
        "built {} distinct stacks, {} frames in {:?}",
        profile.stacks.len(),
        profile.frames.len(),
        t.elapsed()
    );
    let opts = Options {
        subtitle: Some("synthetic profile".into()),
        ..Options::default()
    };
    let jobs: [(&str, bool, bool, bool); 4] = [
        ("cpi.svg", true, false, false),
        ("cpi-inverted.svg", true, true, false),
        ("single.svg", false, false, false),
        ("classic.svg", true, false, true),
    ];
    for (name, stalls, inverted, classic) in jobs {
        let path = std::path::Path::new(&dir).join(name);
        let out = BufWriter::new(File::create(&path)?);
        let o = Options {
            inverted,
            ..opts.clone()
        };
        let columns = Columns::new(0, stalls.then_some(1));
        let t = Instant::now();
        if classic {
            render_classic(&profile, &columns, &o, out)?;
        } else {
            render_cpi(&profile, &columns, &o, out)?;
        }
        println!(
            "{name}: {:?}, {} bytes",
            t.elapsed(),
            std::fs::metadata(&path)?.len()
        );
    }
    let after = synthetic(stacks, true);
    let path = std::path::Path::new(&dir).join("diff.svg");
    let out = BufWriter::new(File::create(&path)?);
    let o = DiffOptions {
        subtitle: Some("synthetic runs: memory-bound leaves 3x, parse_json gone".into()),
        ..DiffOptions::default()
    };
    let t = Instant::now();
    let stalls = Columns::new(0, Some(1));
    render_diff(&profile, &stalls, &after, &stalls, &o, out)?;
    println!(
        "diff.svg: {:?}, {} bytes",
        t.elapsed(),
        std::fs::metadata(&path)?.len()
    );
    let walled = with_wall(&profile);
    let path = std::path::Path::new(&dir).join("wall.svg");
    let out = BufWriter::new(File::create(&path)?);
    let o = Options {
        title: "Wall-Time Flame Graph".into(),
        subtitle: Some("synthetic profile with off-CPU time".into()),
        ..Options::default()
    };
    let wall = WallColumns::of(&walled).expect("the synthetic profile has wall columns");
    let t = Instant::now();
    render_wall(&walled, &Columns::new(0, Some(1)), wall, &o, out)?;
    println!(
        "wall.svg: {:?}, {} bytes",
        t.elapsed(),
        std::fs::metadata(&path)?.len()
    );
    Ok(())
}
