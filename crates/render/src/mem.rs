//! The memory flame graph: width = summed load latency, colour = where the loads were
//! served, on a fixed near (red) to far (blue) scale.

use std::io::{self, BufWriter, Write};

use cpiflame_profile::{Count, FrameId, FrameKind, Profile};

use crate::color::{stall_color, Rgb, STALL_BLUE, STALL_MID, STALL_RED};
use crate::page::{self, write_origin, Legend, Look, Picture};
use crate::text::{ratio, weight_unit, Esc, Events, Percent, Thousands};
use crate::tree::{self, add, frame_ranks, Node, StackLeaf, Tree, Weight};
use crate::{check_look, check_profile, Options, RenderError};

/// The most served-from classes (event columns) one picture takes.
pub const MAX_SERVED_CLASSES: usize = 16;

/// One event column of a load profile: where its loads were served from.
#[derive(Clone, Debug, PartialEq)]
pub struct ServedClass {
    /// The name legends and tooltips use (`L1`, `remote HITM`).
    pub name: String,
    /// Position on the fixed scale, 0 (nearest, red) to 1 (farthest, blue); `None` for a
    /// class off the scale (I/O, uncached, unknown), which adds width but no colour.
    pub distance: Option<f64>,
}

/// A frame's position on the scale: the mean distance of its loads weighted by their
/// latency, over the classes on the scale, `sum(weight_c * distance_c) / sum(weight_c)`;
/// `None` when none of its weight is on the scale.
pub fn mem_position(breakdown: &[(Count, Option<f64>)]) -> Option<f64> {
    let (mut weighted, mut weight) = (0.0, 0.0);
    for (count, distance) in breakdown {
        if let Some(d) = distance {
            weighted += count.period as f64 * d;
            weight += count.period as f64;
        }
    }
    (weight > 0.0).then(|| weighted / weight)
}

/// The colour of a frame with this breakdown: [`mem_position`] on the three stops of the
/// stall scale (red near, violet halfway, blue far), grey when it has no position.
pub fn mem_color(breakdown: &[(Count, Option<f64>)]) -> Rgb {
    stall_color(mem_position(breakdown))
}

/// Draws the memory flame graph of a load profile as SVG: `classes[c]` says where the loads
/// of event column `c` were served from.
///
/// Frame width is the summed weight (load latency in cycles) of the frame's loads, children
/// included, over every column; colour is [`mem_color`] of the frame's inclusive breakdown.
/// Tooltips give the frame's loads, latency and its share of all, and per class the loads,
/// latency and share of the frame's latency. There are no CPI columns here.
pub fn render_mem<W: Write>(
    profile: &Profile,
    classes: &[ServedClass],
    opts: &Options,
    out: W,
) -> Result<(), RenderError> {
    check_look(opts.width, opts.min_width)?;
    if classes.len() != profile.events.len() || classes.len() > MAX_SERVED_CLASSES {
        return Err(RenderError::MalformedProfile(format!(
            "{} served-from classes for {} event column(s) (at most {MAX_SERVED_CLASSES})",
            classes.len(),
            profile.events.len()
        )));
    }
    // Every column checked; the total width is the sum of them all.
    let mut total = Count::default();
    for c in 0..classes.len() {
        match check_profile(profile, c, None) {
            Ok(t) => total = add(total, t),
            Err(RenderError::NoSamples { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    if total.period == 0 {
        return Err(RenderError::NoSamples {
            event: "loads".into(),
        });
    }
    let ranks = frame_ranks(profile);
    let leaves: Vec<StackLeaf<MemWeight>> = profile
        .stacks
        .iter()
        .map(|stack| {
            let mut w = MemWeight::default();
            for (c, count) in stack.counts.iter().take(classes.len()).enumerate() {
                w.by_class[c] = *count;
            }
            StackLeaf {
                stack,
                ranks: &ranks,
                weight: w,
            }
        })
        .collect();
    let picture = Mem {
        profile,
        classes,
        tree: tree::build(leaves),
        total,
        counts: opts.counts,
    };
    let look = Look::of(opts);
    let mut w = BufWriter::with_capacity(1 << 16, out);
    page::write(&picture, &look, &mut w)?;
    w.flush()?;
    Ok(())
}

/// Loads per class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct MemWeight {
    by_class: [Count; MAX_SERVED_CLASSES],
}

impl Weight for MemWeight {
    fn plus(self, other: Self) -> Self {
        let mut by_class = self.by_class;
        for (a, b) in by_class.iter_mut().zip(other.by_class) {
            *a = add(*a, b);
        }
        MemWeight { by_class }
    }

    fn width(&self) -> u64 {
        self.by_class
            .iter()
            .fold(0u64, |sum, c| sum.saturating_add(c.period))
    }
}

impl MemWeight {
    fn samples(&self) -> u64 {
        self.by_class.iter().map(|c| c.samples).sum()
    }
}

struct Mem<'a> {
    profile: &'a Profile,
    classes: &'a [ServedClass],
    tree: Tree<FrameId, MemWeight>,
    total: Count,
    /// See [`Options::counts`](crate::Options::counts).
    counts: bool,
}

type MemNode = Node<FrameId, MemWeight>;

impl Mem<'_> {
    fn breakdown(&self, w: &MemWeight) -> Vec<(Count, Option<f64>)> {
        self.classes
            .iter()
            .zip(w.by_class)
            .map(|(class, count)| (count, class.distance))
            .collect()
    }
}

impl Picture for Mem<'_> {
    type Frame = FrameId;
    type Weight = MemWeight;

    fn tree(&self) -> &Tree<FrameId, MemWeight> {
        &self.tree
    }

    fn total(&self) -> u64 {
        self.total.period
    }

    fn name(&self, node: &MemNode) -> &str {
        node.frame
            .map_or("all", |id| self.profile.frame(id).name.as_str())
    }

    fn kind(&self, node: &MemNode) -> Option<FrameKind> {
        node.frame.map(|id| self.profile.frame(id).kind)
    }

    fn fill(&self, node: &MemNode) -> Rgb {
        mem_color(&self.breakdown(&node.total))
    }

    fn write_stats<O: Write>(&self, w: &mut O) -> io::Result<()> {
        write!(
            w,
            "loads: {} {}, {} cycles of load latency (mean {:.1}) · farther from the core: bluer",
            Thousands(self.total.samples),
            weight_unit(self.counts),
            Events(self.total.period),
            self.total.period as f64 / self.total.samples.max(1) as f64
        )
    }

    fn legend(&self, width: u32) -> Option<Legend> {
        let width = f64::from(width);
        let bar = if width >= 900.0 { 360.0 } else { width / 3.0 };
        // The nearest class, the one nearest the middle, and the farthest: the tooltips
        // name every class.
        let on_scale: Vec<(f64, &str)> = self
            .classes
            .iter()
            .filter_map(|c| c.distance.map(|d| (d, c.name.as_str())))
            .collect();
        let mut labels: Vec<(f64, String)> = Vec::new();
        let mut pick = |p: Option<&(f64, &str)>| {
            if let Some(&(d, name)) = p {
                if !labels.iter().any(|(at, _)| *at == d) {
                    labels.push((d, name.to_string()));
                }
            }
        };
        pick(on_scale.iter().min_by(|a, b| a.0.total_cmp(&b.0)));
        pick(
            on_scale
                .iter()
                .min_by(|a, b| (a.0 - 0.5).abs().total_cmp(&(b.0 - 0.5).abs())),
        );
        pick(on_scale.iter().max_by(|a, b| a.0.total_cmp(&b.0)));
        labels.sort_by(|a, b| a.0.total_cmp(&b.0));
        Some(Legend {
            id: "served-scale",
            caption: "loads served from:".into(),
            stops: vec![(0.0, STALL_RED), (0.5, STALL_MID), (1.0, STALL_BLUE)],
            labels,
            bar,
            swatches: Vec::new(),
        })
    }

    /// Where the frame comes from, its loads and latency, then the breakdown by class.
    fn write_details<O: Write>(&self, w: &mut O, node: &MemNode) -> io::Result<()> {
        if let Some(id) = node.frame {
            write_origin(w, self.profile.frame(id))?;
        }
        let t = &node.total;
        let weight = t.width();
        write!(
            w,
            "\nloads: {} {}, {} cycles of latency ({} of all), mean {:.1}",
            Thousands(t.samples()),
            weight_unit(self.counts),
            Thousands(weight),
            Percent(ratio(weight, self.total.period), 2),
            weight as f64 / t.samples().max(1) as f64
        )?;
        let breakdown = self.breakdown(t);
        match mem_position(&breakdown) {
            Some(p) => write!(w, "\nserved from (scale position {p:.3}):")?,
            None => write!(w, "\nserved from (off the scale):")?,
        }
        for (class, count) in self.classes.iter().zip(t.by_class) {
            if count.samples == 0 {
                continue;
            }
            write!(
                w,
                "\n  {}: {} loads, {} cycles ({})",
                Esc(&class.name),
                Thousands(count.samples),
                Thousands(count.period),
                Percent(ratio(count.period, weight), 1)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::color::UNKNOWN_GREY;
    use cpiflame_profile::{EventColumn, Frame, FrameKind};

    fn count(samples: u64, period: u64) -> Count {
        Count { samples, period }
    }

    #[test]
    fn position_is_the_latency_weighted_mean_distance() {
        // 100 cycles at 0, 300 at 1, 50 off the scale: (0*100 + 1*300) / 400.
        let b = [
            (count(10, 100), Some(0.0)),
            (count(3, 300), Some(1.0)),
            (count(1, 50), None),
        ];
        assert_eq!(mem_position(&b), Some(0.75));
        assert_eq!(mem_color(&b), stall_color(Some(0.75)));
        assert_eq!(mem_color(&b[..1]), STALL_RED);
        assert_eq!(mem_color(&b[1..2]), STALL_BLUE);
        // Off the scale only, or nothing: grey.
        assert_eq!(mem_position(&b[2..]), None);
        assert_eq!(mem_color(&b[2..]), UNKNOWN_GREY);
        assert_eq!(mem_color(&[]), UNKNOWN_GREY);
    }

    fn classes(n: usize) -> Vec<ServedClass> {
        (0..n)
            .map(|i| ServedClass {
                name: format!("c{i}"),
                distance: Some(i as f64 / (n.max(2) - 1) as f64),
            })
            .collect()
    }

    #[test]
    fn classes_must_match_the_columns_and_something_must_weigh() {
        let mut p = Profile::new(vec![
            EventColumn { name: "a".into() },
            EventColumn { name: "b".into() },
        ]);
        let f = p.intern(Frame {
            name: "f".into(),
            module: String::new(),
            kind: FrameKind::User,
        });
        let opts = Options::default();
        let e = render_mem(&p, &classes(3), &opts, Vec::new()).unwrap_err();
        assert!(e.to_string().contains("3 served-from classes for 2"), "{e}");
        let e = render_mem(&p, &classes(2), &opts, Vec::new()).unwrap_err();
        assert!(matches!(e, RenderError::NoSamples { .. }), "{e}");
        p.add(&[f], 1, count(2, 40));
        let mut svg = Vec::new();
        render_mem(&p, &classes(2), &opts, &mut svg).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        assert!(svg.contains(r#"data-total="40""#), "{svg}");
        assert!(svg.contains(&format!(r#"fill="{STALL_BLUE}""#)), "{svg}");
    }
}
