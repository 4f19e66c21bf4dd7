//! Each sample's leaf site by the function it is in, kept from the loader's walk per attr,
//! and weighed into the columns the roles say once they are chosen.

use std::collections::HashMap;

use cpiflame_perf_data::Sample;
use cpiflame_pipeline::SampleVisitor;
use cpiflame_unwind::address::{EntryAddress, StackFrame};
use cpiflame_unwind::{CodeAddress, FrameKind, FrameRef, Resolver, StackEntry};

use crate::model::Weights;

/// Where a sample's leaf was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Site {
    User(CodeAddress),
    /// A kernel address, or a user one in no opened file.
    Raw(u64),
}

/// The columns a sample adds to.
#[derive(Clone, Debug)]
pub(crate) struct Columns {
    pub(crate) width: usize,
    pub(crate) stalls: Option<usize>,
    pub(crate) cycles: Option<usize>,
    pub(crate) instructions: Option<usize>,
    /// A hybrid recording's ratio cycles (`Loaded::ratio_cycles`): per attr, whether it adds
    /// to the cycles the colour events are divided by, instead of the cycles column.
    pub(crate) ratio: Option<Vec<bool>>,
    /// With top-down formulas: the number of columns, each summed per site.
    pub(crate) sums: Option<usize>,
}

/// Each sample's leaf site, by the function it is in, with its weights per attr: the
/// collapse's walk hands it every sample it counts ([`SampleVisitor`]), and the columns
/// (roles) the loader chooses after that walk turn the per-attr sums into [`Weights`].
pub(crate) struct SiteWalk {
    kernel: bool,
    sites: HashMap<(FrameRef, Site), AttrSums>,
}

/// Per attr of the file: how many samples gave it a weight, and the weights' sum.
#[derive(Default)]
pub(crate) struct AttrSums {
    samples: Vec<u64>,
    period: Vec<u64>,
}

impl SampleVisitor for SiteWalk {
    fn visit(
        &mut self,
        sample: &Sample<'_>,
        entries: &[StackEntry],
        resolver: &Resolver,
        weights: &[(usize, u64)],
    ) {
        let Some(leaf) = entries.first() else {
            return;
        };
        // `--no-kernel`: samples in the kernel are left out, not given to their user caller.
        if !self.kernel && resolver.frame(leaf.frame).kind == FrameKind::Kernel {
            return;
        }
        // The function: the first frame that is not inlined into another.
        let Some(function) = entries
            .iter()
            .find(|e| resolver.frame(e.frame).kind != FrameKind::Inline)
        else {
            return;
        };
        let site = match leaf.address {
            EntryAddress::User(frame @ StackFrame::Instruction(a)) => resolver
                .code_address(sample.pid.unwrap_or(-1), a)
                .map_or(Site::Raw(frame.address().0), Site::User),
            other => Site::Raw(other.address().0),
        };
        let sums = self.sites.entry((function.frame, site)).or_default();
        for &(attr, period) in weights {
            if sums.samples.len() <= attr {
                sums.samples.resize(attr + 1, 0);
                sums.period.resize(attr + 1, 0);
            }
            sums.samples[attr] += 1;
            sums.period[attr] = sums.period[attr].saturating_add(period);
        }
    }
}

impl SiteWalk {
    /// A walk keeping every sample's leaf site; `kernel`: those in the kernel too.
    pub(crate) fn new(kernel: bool) -> SiteWalk {
        SiteWalk {
            kernel,
            sites: HashMap::new(),
        }
    }

    /// The sites' weights in `columns` (`column_of`: each attr's column).
    pub(crate) fn weigh(
        self,
        columns: &Columns,
        column_of: &[usize],
    ) -> HashMap<(FrameRef, Site), Weights> {
        self.sites
            .into_iter()
            .map(|(key, sums)| (key, sums.weigh(columns, column_of)))
            .collect()
    }
}

impl AttrSums {
    pub(crate) fn weigh(&self, columns: &Columns, column_of: &[usize]) -> Weights {
        let mut w = Weights::default();
        for (attr, (&samples, &period)) in self.samples.iter().zip(&self.period).enumerate() {
            let Some(&column) = column_of.get(attr).filter(|_| samples > 0) else {
                continue;
            };
            if let Some(n) = columns.sums.filter(|&n| column < n) {
                w.sums.resize(n, 0);
                w.sums[column] = w.sums[column].saturating_add(period);
            }
            if column == columns.width {
                w.samples += samples;
                w.period = w.period.saturating_add(period);
            }
            let add = |role: Option<usize>, sum: &mut u64| {
                if role == Some(column) {
                    *sum = sum.saturating_add(period);
                }
            };
            add(columns.stalls, &mut w.stalls);
            add(columns.instructions, &mut w.instructions);
            match &columns.ratio {
                // Hybrid: the cycles of the core types that recorded the colour events.
                Some(ratio) if ratio.get(attr) == Some(&true) => {
                    w.cycles = w.cycles.saturating_add(period);
                }
                Some(_) => {}
                None => add(columns.cycles, &mut w.cycles),
            }
        }
        w
    }
}
