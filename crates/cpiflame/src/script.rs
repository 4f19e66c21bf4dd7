//! `cpiflame script`: each sample with its stack, in `perf script`'s layout, so that our
//! unwinding and naming can be read side by side with perf's.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use cpiflame_fold::{event_names, walk_samples};
use cpiflame_perf_data::{PerfData, Sample};
use cpiflame_unwind::{FrameKind, Options, Resolver, StackEntry};

pub fn script(path: &Path, symfs: Option<PathBuf>) -> Result<()> {
    let file = PerfData::open(path)?;
    for w in &file.warnings {
        eprintln!("cpiflame: warning: {w}");
    }
    let names = event_names(&file);
    let mut resolver = Resolver::new(
        &file.meta,
        Options {
            symfs,
            ..Options::from_env()
        },
    );
    // Names are printed as samples come: wait for the kernel's.
    resolver.finish_names();
    let mut out = BufWriter::new(io::stdout().lock());
    let mut result = Ok(());
    walk_samples(&file, &mut resolver, |sample, entries, resolver| {
        if result.is_ok() {
            result = write_sample(&mut out, &names[sample.attr], sample, entries, resolver);
        }
    })?;
    result?;
    out.flush()?;
    Ok(())
}

fn write_sample(
    out: &mut impl Write,
    event: &str,
    sample: &Sample<'_>,
    entries: &[StackEntry],
    resolver: &Resolver,
) -> io::Result<()> {
    let pid = sample.pid.unwrap_or(-1);
    let tid = sample.tid.unwrap_or(-1);
    let time = sample.time.unwrap_or(0);
    writeln!(
        out,
        "{} {tid} {}.{:09}: {event}:",
        resolver.thread_name(pid, tid),
        time / 1_000_000_000,
        time % 1_000_000_000,
    )?;
    for e in entries {
        let f = resolver.frame(e.frame);
        if f.kind == FrameKind::Inline {
            writeln!(out, "\t{:16x} {} (inlined)", e.address, f.name)?;
        } else {
            writeln!(out, "\t{:16x} {} ({})", e.address, f.name, f.module)?;
        }
    }
    writeln!(out)
}
