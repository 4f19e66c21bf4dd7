//! How long kernel symbols take to parse: not a test of behaviour (the parse is tested in
//! `kernel.rs`), a timing to run by hand, in release mode:
//! `cargo test --release -p cpiflame-unwind --test kallsyms_parse -- --ignored --nocapture`.
//! It prints the median of many runs over this machine's /proc/kallsyms text, as a mapped
//! file (the path of a copy in perf's build-id cache) and as text in memory.

use std::path::Path;
use std::time::{Duration, Instant};

use cpiflame_unwind::{HostSource, Kallsyms};

fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

#[test]
#[ignore = "a timing, run by hand in release mode"]
fn time_kallsyms_parse() {
    let text = std::fs::read_to_string("/proc/kallsyms").expect("/proc/kallsyms");
    let copy = std::env::temp_dir().join(format!("cpiflame-kallsyms-time-{}", std::process::id()));
    std::fs::write(&copy, &text).unwrap();
    let lines = text.lines().count();
    // Warm the page cache and check that the symbols are there at all.
    assert!(Kallsyms::load_from(&HostSource, &copy).is_some());
    let mapped = median(101, || {
        std::hint::black_box(Kallsyms::load_from(&HostSource, &copy));
    });
    let parsed = median(101, || {
        std::hint::black_box(Kallsyms::parse(&text));
    });
    let proc = median(21, || {
        std::hint::black_box(Kallsyms::load(Path::new("/proc/kallsyms")));
    });
    std::fs::remove_file(&copy).unwrap();
    println!("{lines} lines, {} bytes", text.len());
    println!("load_from, mapped copy: median {mapped:?}");
    println!("parse, text in memory:  median {parsed:?}");
    println!("load of /proc/kallsyms: median {proc:?}");
}
