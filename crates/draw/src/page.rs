//! The timeline page (`cpiflame timeline`) and `render --strip`: a recording read with the
//! time of each sample ([`TimedLoad`]) drawn with the CPI graph's look.

use std::io::Write;
use std::sync::Arc;

use cpiflame_pipeline::timeline::TimedLoad;
use cpiflame_profile::Count;
use cpiflame_render::{Strip, StripBucket};

use crate::{titles, Graph, GraphError, Look};

/// Why a timeline page or a graph with its strip could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error(transparent)]
    Graph(#[from] GraphError),
    #[error(transparent)]
    Page(#[from] cpiflame_timeline::TimelineError),
}

/// Writes the timeline page of `timed` with `look` (title, width, minimum width, icicle)
/// and `rows` cells per second: the recording's roles, wall-time columns, notes and stall
/// legend, as `render` draws them; titled [`titles::TIMELINE`], or
/// [`titles::WALL_TIMELINE`] when it is of wall time, unless the look has a title.
pub fn write_timeline_page(
    timed: &TimedLoad,
    mut look: Look,
    rows: u32,
    out: &mut dyn Write,
) -> Result<(), PageError> {
    if look.title.is_none() {
        let title = match timed.loaded.wall {
            Some(_) => titles::WALL_TIMELINE,
            None => titles::TIMELINE,
        };
        look.title = Some(title.to_string());
    }
    // The graph's options as `render` completes them from the recording.
    let graph = Graph::cpi(&timed.loaded, look)?;
    // One band list per region name, in the marker files' order.
    let mut regions: Vec<cpiflame_timeline::Region> = Vec::new();
    for m in &timed.regions {
        let at = match regions.iter().position(|r| r.name == m.name) {
            Some(at) => at,
            None => {
                regions.push(cpiflame_timeline::Region {
                    name: m.name.clone(),
                    intervals: Vec::new(),
                });
                regions.len() - 1
            }
        };
        regions[at].intervals.push((m.tid, m.start, m.end));
    }
    let options = cpiflame_timeline::Options {
        graph: graph.options,
        rows,
        regions,
    };
    let (profile, timed_samples) = (&timed.loaded.profile, &timed.timed);
    cpiflame_timeline::write_timeline(profile, &graph.columns, timed_samples, &options, out)?;
    Ok(())
}

/// The CPI graph of `timed` (as [`Graph::cpi`]) with the strip of its stall share (or CPI)
/// over time above the frames (`render --strip`).
pub fn graph_with_strip(timed: &TimedLoad, look: Look) -> Result<Graph<'_>, GraphError> {
    let mut graph = Graph::cpi(&timed.loaded, look)?;
    let buckets = (graph.options.width.saturating_sub(20) / STRIP_PX).max(1);
    graph.options.strip = Some(Arc::new(strip(timed, buckets as usize)));
    Ok(graph)
}

/// The counts of the graph's columns in `n` equal buckets from the first sample to the last.
pub fn strip(timed: &TimedLoad, n: usize) -> Strip {
    let roles = timed.loaded.roles;
    let samples = &timed.timed.samples;
    let (Some(first), Some(last)) = (
        samples.iter().map(|s| s.time).min(),
        samples.iter().map(|s| s.time).max(),
    ) else {
        return Strip::default();
    };
    let n = n.max(1);
    let bucket_ns = ((last - first) / n as u64 + 1).max(1);
    let mut buckets = vec![StripBucket::default(); n];
    for s in samples {
        let b = &mut buckets[((s.time - first) / bucket_ns) as usize];
        let column = Some(s.column as usize);
        let count = Count {
            samples: 1,
            period: s.period,
        };
        if column == roles.cycles {
            b.cycles.add(count);
        }
        if column == roles.stalls {
            b.stalls.add(count);
        }
        if column == roles.instructions {
            b.instructions.add(count);
        }
    }
    Strip {
        start_ns: first,
        bucket_ns,
        buckets,
    }
}

/// Pixels per bucket of the strip.
const STRIP_PX: u32 = 4;
