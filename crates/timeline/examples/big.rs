//! The size check of docs/timeline.md: a synthetic recording of 10 minutes at 4 kHz
//! (2.4 million cycles samples and a stall sample for every fourth, 8 threads, 500 stacks
//! 4 to 16 frames deep) written as a timeline page.
//!
//! `cargo run --release -p cpiflame-timeline --example big -- OUT.html`

use std::io::BufWriter;
use std::time::Instant;

use cpiflame_profile::timed::{Thread, Timed, TimedSample, NS_PER_SEC};
use cpiflame_profile::{Columns, Count, EventColumn, Frame, FrameKind, Profile};
use cpiflame_timeline::{write_timeline, Options};

fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| "big.html".into());
    // A fixed linear congruential sequence: the same file every run.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as u32
    };
    let mut profile = Profile::new(vec![
        EventColumn {
            name: "cycles".into(),
        },
        EventColumn {
            name: "stalls".into(),
        },
    ]);
    let functions: Vec<u32> = (0..300)
        .map(|i| {
            profile.intern(Frame {
                name: format!("function_{i:03}"),
                module: "app".into(),
                kind: FrameKind::User,
            })
        })
        .collect();
    let root = profile.intern(Frame {
        name: "app".into(),
        module: String::new(),
        kind: FrameKind::Process,
    });
    for _ in 0..500 {
        let depth = 4 + next() % 13;
        let mut stack = vec![root];
        // Stacks share callers: the first frames come from a few functions.
        for d in 0..depth {
            let range = if d < 3 { 4 } else { 300 };
            stack.push(functions[(next() % range) as usize]);
        }
        profile.add(
            &stack,
            0,
            Count {
                samples: 1,
                period: 1,
            },
        );
    }
    let threads: Vec<Thread> = (0..8)
        .map(|i| Thread {
            pid: 1000,
            tid: 1000 + i,
            comm: format!("worker-{i}"),
        })
        .collect();
    let mut samples = Vec::with_capacity(3_000_000);
    let start = 5_000 * NS_PER_SEC + 123_456_789;
    for i in 0..2_400_000u64 {
        let time = start + i * 250_000;
        // A skewed choice of stack, and a phase every 30 s that stalls more.
        let a = next() % 500;
        let stack = (a * a / 500) % profile.stacks.len() as u32;
        let thread = next() % 8;
        let period = 2_000_000 + u64::from(next() % 1000);
        samples.push(TimedSample {
            time,
            thread,
            stack,
            column: 0,
            period,
        });
        let stalls_more = (time / NS_PER_SEC / 30) % 2 == 1;
        if i % 4 == 0 || (stalls_more && i % 4 == 1) {
            samples.push(TimedSample {
                time,
                thread,
                stack,
                column: 1,
                period: 4 * period / 5,
            });
        }
    }
    let timed = Timed { samples, threads };
    let t = Instant::now();
    let file = std::fs::File::create(&out).unwrap();
    write_timeline(
        &profile,
        &Columns::new(0, Some(1)),
        &timed,
        &Options::default(),
        BufWriter::new(file),
    )
    .unwrap();
    let size = std::fs::metadata(&out).unwrap().len();
    eprintln!(
        "{out}: {size} bytes, written in {:.2} s",
        t.elapsed().as_secs_f64()
    );
}
