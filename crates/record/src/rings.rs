//! Mapping the events' ring buffers: one per CPU, at the size asked for but never less than
//! two samples need, shrunk to what `kernel.perf_event_mlock_kb` allows.
//!
//! It must never read a ring (that is `drain`) nor open an event.

use cpiflame_counters::ring;
use cpiflame_counters::sys;

use crate::open::Opened;
use crate::{CallGraph, RecordError, RecordOptions, Report};

/// The smallest ring (in pages) that holds two of the largest samples: the stack copy, the
/// registers, a kernel call chain of up to 127 entries and the fixed fields fit in the stack
/// size plus 4 KiB. The kernel drops every sample that does not fit in the whole ring.
pub(crate) fn least_ring_pages(call_graph: CallGraph) -> usize {
    let stack = match call_graph {
        CallGraph::Dwarf { stack_size } => stack_size as usize,
        _ => 0,
    };
    (2 * (stack + 4096)).div_ceil(4096).next_power_of_two()
}

/// Maps one ring buffer per CPU, halving the size until the kernel accepts it.
pub(crate) fn map_rings(
    opened: &Opened,
    pages: usize,
) -> Result<(Vec<ring::Ring>, usize), RecordError> {
    let page = 4096;
    let mut pages = pages.max(1).next_power_of_two();
    loop {
        let mut rings = Vec::new();
        let mut failed = None;
        for &r in &opened.ring_fds {
            match ring::Ring::map(&opened.fds[r], pages, page) {
                Ok(ring) => rings.push(ring),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        match failed {
            None => {
                for &(fd, ring) in &opened.redirects {
                    sys::set_output(&opened.fds[fd], &opened.fds[ring]).map_err(|e| {
                        RecordError::Open(format!("cannot share a ring buffer between events: {e}"))
                    })?;
                }
                return Ok((rings, pages));
            }
            Some(e) if pages > 8 => {
                let _ = e;
                pages /= 2;
            }
            Some(e) => return Err(RecordError::Mmap(e)),
        }
    }
}

/// Maps the rings at the size asked for (at least what two samples need), and says so in
/// the report when the size had to change.
pub(crate) fn map_rings_reporting(
    options: &RecordOptions,
    opened: &Opened,
    report: &mut Report,
) -> Result<Vec<ring::Ring>, RecordError> {
    let asked = options.buffer_pages.max(1).next_power_of_two();
    let least = least_ring_pages(options.call_graph);
    if asked < least {
        report.warnings.push(format!(
            "-m {}: a ring buffer of {} KiB cannot hold two samples with {}; using {least} pages",
            options.buffer_pages,
            asked * 4,
            match options.call_graph {
                CallGraph::Dwarf { stack_size } => format!("--call-graph dwarf,{stack_size}"),
                _ => "call chains".to_string(),
            }
        ));
    }
    let (rings, pages) = map_rings(opened, asked.max(least))?;
    report.buffer_pages = pages;
    if pages < asked.max(least) {
        report.warnings.push(format!(
            "ring buffers limited to {} KiB per CPU (kernel.perf_event_mlock_kb is {}); raise it if samples are lost",
            pages * 4,
            sys::mlock_kb().map_or("?".into(), |k| k.to_string())
        ));
    }
    Ok(rings)
}
