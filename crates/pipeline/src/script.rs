//! `cpiflame script`: each sample with its stack, in `perf script`'s layout, so that our
//! unwinding and naming can be read side by side with perf's.

use std::io::{self, Write};

use cpiflame_perf_data::Sample;
use cpiflame_unwind::{FrameKind, Resolver, StackEntry};

use crate::collapse::event_names;
use crate::load_options::{LoadError, LoadOptions};
use crate::walker::Walker;

/// Writes every sample of the perf.data file `options.file` names to `out` (only its
/// resolver options and `--time` apply); the file's warnings are pushed to `warnings`.
pub fn write_script(
    options: &LoadOptions,
    out: &mut impl Write,
    warnings: &mut Vec<String>,
) -> Result<(), ScriptError> {
    // A --kallsyms file that cannot be read is reported before the recording is opened.
    options.check_kallsyms()?;
    let file = crate::Recording::open(options)?.perf_data()?;
    let names = event_names(&file);
    let mut walker = Walker::new(&file, options, warnings)?;
    // Names are printed as samples come: wait for the kernel's.
    walker.resolver.finish_names();
    let mut result = Ok(());
    walker
        .walk(None, |sample, entries, resolver| {
            let Some(entries) = entries else { return };
            if result.is_ok() {
                result = write_sample(out, &names[sample.attr], sample, entries, resolver);
            }
        })
        .map_err(LoadError::from)?;
    warnings.extend(walker.resolver.jit_notes().iter().cloned());
    result?;
    Ok(())
}

/// Reading the file failed, or writing the text did.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error(transparent)]
    Read(#[from] LoadError),
    #[error(transparent)]
    Write(#[from] io::Error),
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
        // The address in the process, return addresses as they are, as perf script shows it.
        let address = e.address.address().0;
        if f.kind == FrameKind::Inline {
            writeln!(out, "\t{address:16x} {} (inlined)", f.name)?;
        } else {
            writeln!(out, "\t{address:16x} {} ({})", f.name, f.module)?;
        }
    }
    writeln!(out)
}
