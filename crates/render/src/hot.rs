//! The hottest source lines of each wide frame, for its tooltip: where inside the frame its
//! width went (the sampled line for its own samples, the line of the call for its
//! children's), with each line's share of the frame and its stall share.

use std::collections::HashMap;
use std::io::{self, Write};

use cpiflame_profile::lines::{hottest, HotLine, LineId, LineWeights};
use cpiflame_profile::Columns;
use cpiflame_profile::{FrameId, SourceLines};

use crate::text::{Esc, Percent};
use crate::tree::{Tree, Weight};

/// Frames at least this share of the graph's width get their hottest lines.
pub(crate) const MIN_SHARE: f64 = 0.01;

/// Lines per tooltip.
pub(crate) const LINES_SHOWN: usize = 3;

/// The hottest lines of the nodes of `tree` at least [`MIN_SHARE`] wide, by node index.
pub(crate) fn hot_lines<W: Weight>(
    tree: &Tree<FrameId, W>,
    lines: &SourceLines,
    columns: &Columns,
) -> HashMap<u32, Vec<HotLine>> {
    let total = tree.root().width();
    let wide = |w: u64| total > 0 && w as f64 >= MIN_SHARE * total as f64;
    // Wide nodes only: a stack's walk down the tree stops at its first narrow frame, whose
    // children are narrower still.
    let paths = tree.paths(|i| wide(tree.nodes[i].total.width()));
    let mut at: HashMap<u32, Vec<(LineId, LineWeights)>> = HashMap::new();
    for stack in &lines.stacks {
        let weights = LineWeights::of(columns, &stack.counts);
        if weights.width.period == 0 {
            continue;
        }
        let with_lines = stack.frames.len().min(stack.lines.len());
        paths.descend(&stack.frames[..with_lines], |depth, node| {
            at.entry(node)
                .or_default()
                .push((stack.lines[depth], weights))
        });
    }
    at.into_iter()
        .map(|(node, weights)| {
            let width = tree.nodes[node as usize].total.width();
            (node, hottest(weights, width, columns, LINES_SHOWN))
        })
        .filter(|(_, hot)| !hot.is_empty())
        .collect()
}

/// Writes the tooltip lines of `hot` (`\n  hot.c:7  71%  stalled 80%` each).
pub(crate) fn write_hot_lines<O: Write>(
    w: &mut O,
    hot: &[HotLine],
    lines: &SourceLines,
) -> io::Result<()> {
    if hot.is_empty() {
        return Ok(());
    }
    write!(w, "\nhottest lines:")?;
    for h in hot {
        let Some(line) = lines.line(h.line) else {
            continue;
        };
        // `<1%` is text in XML: escaped like the path.
        let share = Share(h.share).to_string();
        write!(w, "\n  {}  {}", Esc(&line.short()), Esc(&share))?;
        if let Some(s) = h.stall_share {
            write!(w, "  stalled {}", Esc(&Share(s).to_string()))?;
        }
    }
    Ok(())
}

/// A share in whole percent, `<1%` below one.
struct Share(f64);

impl std::fmt::Display for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 > 0.0 && self.0 < 0.005 {
            f.write_str("<1%")
        } else {
            Percent(Some(self.0), 0).fmt(f)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_whole_percents_and_small_ones_say_so() {
        assert_eq!(Share(0.714).to_string(), "71%");
        assert_eq!(Share(0.004).to_string(), "<1%");
        assert_eq!(Share(0.006).to_string(), "1%");
        assert_eq!(Share(0.0).to_string(), "0%");
        assert_eq!(Share(1.0).to_string(), "100%");
    }
}
