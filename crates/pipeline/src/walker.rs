//! The start of every walk over a perf.data recording's samples: the file's own warnings
//! taken, its resolver built (the one place a resolver is built outside `unwind`), its
//! `--time` ranges read. The loader (and through it annotate, pprof and timeline), `script`,
//! the memory graph and `c2c` all start here.

use cpiflame_perf_data::{PerfData, ReadError, Sample};
use cpiflame_unwind::{Resolver, StackEntry};

use crate::collapse::{walk_samples_in, CollapseStats, SampleFilter};
use crate::load_options::{LoadError, LoadOptions};
use crate::offcpu::WallPlan;
use crate::time::TimeRanges;

/// A perf.data recording ready to walk as the options of a command ask.
pub struct Walker<'f> {
    pub file: &'f PerfData,
    /// Unwinds and names every sample's stack.
    pub resolver: Resolver,
    /// `--time`: only the samples in these ranges count.
    pub times: Option<TimeRanges>,
}

impl<'f> Walker<'f> {
    /// `file` ready to walk as `options` ask: its own warnings pushed to `warnings`, its
    /// resolver built (an error naming a `--kallsyms` file or `--jit-dir` that cannot be
    /// read), its `--time` ranges read (an error naming the flag).
    pub fn new(
        file: &'f PerfData,
        options: &LoadOptions,
        warnings: &mut Vec<String>,
    ) -> Result<Walker<'f>, LoadError> {
        warnings.extend(file.warnings.iter().cloned());
        let resolver = options.resolver(&file.meta)?;
        let times = options.time_ranges(file)?;
        Ok(Walker {
            file,
            resolver,
            times,
        })
    }

    /// Every sample to `on_sample` with its stack, but those outside `--time` (and, with
    /// `wall`, those its plan leaves out), which come without one: see [`walk_samples_in`].
    pub fn walk(
        &mut self,
        wall: Option<&WallPlan>,
        on_sample: impl FnMut(&Sample<'_>, Option<&[StackEntry]>, &Resolver),
    ) -> Result<CollapseStats, ReadError> {
        let filter = SampleFilter::new(self.times.as_ref(), wall);
        walk_samples_in(self.file, &mut self.resolver, filter, on_sample)
    }
}
