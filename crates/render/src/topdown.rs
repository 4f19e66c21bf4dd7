//! The top-down flame graph: width = unhalted cycles as in the CPI graph, colour = the
//! frame's top-down (TMA) breakdown under a [`Plan`]: its dominant level-1 category's hue at
//! an intensity of its share (level 2: the shade of the dominant child), or one category's
//! share on the stall scale (`--topdown-color`).
//!
//! A node's numbers are the formulas applied to its **inclusive sums** of every column (each
//! stack through the node once), as `report --json`'s `topdown` of a function that appears
//! once per stack and at one place in the graph.

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};

use cpiflame_profile::interval::{Interval, PairedMoments, STALL_COLOUR_WIDTH};
use cpiflame_profile::ratios::RatioIntervals;
use cpiflame_profile::topdown::{
    pair_columns, Breakdown, Category, Dominant, FormulaSet, Plan, LEVEL1,
};
use cpiflame_profile::{Columns, Count, FrameId, FrameKind, Profile, Stack};

use crate::color::{
    stall_color, topdown_intensity, uncertain_color, Rgb, STALL_BLUE, STALL_MID, STALL_RED,
    TOPDOWN_BACKEND, TOPDOWN_BAD_SPECULATION, TOPDOWN_FRONTEND, TOPDOWN_RETIRING, TOPDOWN_SMT,
    UNKNOWN_GREY,
};
use crate::page::{self, write_origin, Legend, Look, Picture, Swatch};
use crate::ratio::write_interval;
use crate::text::{ratio, weight_unit, Events, Percent, Thousands};
use crate::tree::{self, CpiWeight, Node, Paths, Tree};
use crate::{validate, Options, RenderError};

/// How [`render_cpi`](crate::render_cpi) draws a profile with top-down columns.
#[derive(Clone, Debug, PartialEq)]
pub struct TopdownLook {
    /// The formulas and where their events are (`cpiflame_pipeline::Loaded::topdown`).
    pub plan: Plan,
    /// What a frame's colour shows.
    pub colour: TopdownColour,
}

/// What a frame's colour shows in the top-down picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopdownColour {
    /// The dominant level-1 category's hue (the dominant level-2 child's shade where the
    /// plan has level 2), its share as intensity: see [`topdown_color`].
    Dominant,
    /// One category's share on the stall scale ([`stall_color`]).
    Category(Category),
}

/// A level-1 category's hues `[itself, first level-2 child, second child]`.
fn hues(category: Category) -> [Rgb; 3] {
    match category {
        Category::Retiring => TOPDOWN_RETIRING,
        Category::BadSpeculation => TOPDOWN_BAD_SPECULATION,
        Category::FrontendBound => TOPDOWN_FRONTEND,
        Category::BackendBound => TOPDOWN_BACKEND,
        Category::SmtContention | Category::Level2(_) => [TOPDOWN_SMT; 3],
    }
}

/// A frame's colour in the top-down picture: with [`TopdownColour::Dominant`] the dominant
/// level-1 category's hue (its dominant level-2 child's shade where there is level 2) at
/// the intensity of its share ([`Dominant::intensity`]); with
/// [`TopdownColour::Category`] that category's share on the stall scale. No breakdown (no
/// slots, no metrics): the grey of an unknown ratio.
pub fn topdown_color(b: Option<&Breakdown>, colour: TopdownColour) -> Rgb {
    let Some(b) = b else {
        return UNKNOWN_GREY;
    };
    match colour {
        TopdownColour::Category(c) => stall_color(c.share(b)),
        TopdownColour::Dominant => {
            let d = Dominant::of(b);
            let hue = hues(d.category)[d.child.map_or(0, |c| 1 + usize::from(c))];
            topdown_intensity(hue, d.intensity())
        }
    }
}

/// Draws the top-down picture of `profile` (a recording of the TMA events,
/// `cpiflame_profile::topdown`) as SVG: widths as the CPI graph's
/// ([`render_cpi`](crate::render_cpi)), every frame's inclusive sums of each column the
/// formulas read (each stack through the frame once) put through
/// [`Plan::apply`](cpiflame_profile::topdown::Plan::apply); colour by
/// [`topdown_color`](crate::topdown_color) (the dominant level-1 category's hue, intensity
/// its share from 1/4 pale to 100% full, the dominant level-2 child's shade; or one
/// category's share on the stall scale); `stalls` and `instructions` are not used. Tooltips
/// give the level-1 split (and level 2), the legend the hues or the scale, the statistics
/// line the whole profile's split. With [`Options::confidence`] each frame's shown share
/// gets an interval (its two columns' per-sample deltas in a leader-sampled group, else a
/// bound from its cycles samples; none for folded text, whose counts are not samples) and is
/// washed out when the dominant category is not known (the interval holds the runner-up's
/// share) or, for one category, when the interval is wider than a quarter of the scale.
pub fn render_topdown<W: Write>(
    profile: &Profile,
    columns: &Columns,
    look_td: &TopdownLook,
    opts: &Options,
    out: W,
) -> Result<(), RenderError> {
    let cycles = columns.cycles.index();
    // The stall column is not drawn here; the other columns are checked as for every graph.
    let total = validate(
        profile,
        &Columns {
            stalls: None,
            ..*columns
        },
        opts,
    )?;
    let tree = tree::build_cpi(profile, &Columns::new(cycles, None));
    let drawn = tree.drawn(opts.width, opts.min_width);
    let paths = tree.paths(|i| drawn[i]);
    let n = profile.events.len();
    let mut sums = vec![0u64; tree.nodes.len() * n];
    walk(profile, &paths, |stack, node| {
        let at = node as usize * n;
        for (sum, c) in sums[at..at + n].iter_mut().zip(&stack.counts) {
            *sum = sum.saturating_add(c.period);
        }
    });
    let breakdowns: Vec<Option<Breakdown>> = (0..tree.nodes.len())
        .map(|i| {
            drawn[i]
                .then(|| look_td.plan.apply(&sums[i * n..(i + 1) * n]))
                .flatten()
        })
        .collect();
    // The category each node's interval is of: the one its colour shows.
    let shown: Vec<Option<Category>> = breakdowns
        .iter()
        .map(|b| match look_td.colour {
            TopdownColour::Category(c) => Some(c),
            TopdownColour::Dominant => b.as_ref().map(|b| Dominant::of(b).category),
        })
        .collect();
    let intervals = match opts.confidence {
        Some(confidence) => intervals(
            profile,
            &tree,
            &paths,
            &look_td.plan,
            cycles,
            &shown,
            &breakdowns,
            confidence,
        ),
        None => Vec::new(),
    };
    let picture = Topdown {
        profile,
        tree,
        look: look_td,
        breakdowns,
        intervals,
        confidence: opts.confidence,
        cycles,
        total,
        all: look_td.plan.apply(&sums[..n]),
        counts: opts.counts,
    };
    let look = Look::of(opts);
    let mut w = BufWriter::with_capacity(1 << 16, out);
    page::write(&picture, &look, &mut w)?;
    w.flush()?;
    Ok(())
}

/// Calls `visit` with every stack of `profile` and each drawn node it passes through, the
/// root included: each stack once per node, as `report`'s inclusive sums.
fn walk<'p>(profile: &'p Profile, paths: &Paths, mut visit: impl FnMut(&'p Stack, u32)) {
    for stack in &profile.stacks {
        visit(stack, 0);
        paths.descend(&stack.frames, |_, node| visit(stack, node));
    }
}

/// Each drawn node's interval of the share its colour shows (`shown`), by node index: from
/// the per-sample deltas of the share's two columns where the stacks carry them
/// (leader-sampled groups; the interval of their ratio scaled by share / ratio, since the
/// share divides by the metrics' sum (Intel, about `slots`) or by width × cycles (AMD)), else a bound from the number of cycles samples (a binomial
/// interval: a per-sample fraction in [0, 1] with mean p varies at most as a 0/1 one does),
/// else (counts that are not samples: folded text) none.
#[allow(clippy::too_many_arguments)]
fn intervals(
    profile: &Profile,
    tree: &Tree<FrameId, CpiWeight>,
    paths: &Paths,
    plan: &Plan,
    cycles: usize,
    shown: &[Option<Category>],
    breakdowns: &[Option<Breakdown>],
    confidence: f64,
) -> Vec<Option<Interval>> {
    let mut pairs: Vec<Option<(usize, usize, f64)>> = Vec::new();
    let mut cache: HashMap<Category, Option<(usize, usize, f64)>> = HashMap::new();
    for c in shown {
        pairs.push(c.and_then(|c| {
            *cache
                .entry(c)
                .or_insert_with(|| pair_columns(profile, plan, c))
        }));
    }
    let Some(mut intervals) = RatioIntervals::new(confidence) else {
        return Vec::new();
    };
    let mut moments = vec![PairedMoments::default(); tree.nodes.len()];
    if profile.stacks.iter().any(|s| !s.paired.is_empty()) {
        walk(profile, paths, |stack, node| {
            if let Some((a, b, _)) = pairs[node as usize] {
                if let Some(m) = stack.paired_moments(a, b) {
                    moments[node as usize].add(m);
                }
            }
        });
    }
    // Folded text's counts are the events' counts, not samples: every stack's samples then
    // equal its period.
    let sampled = profile.stacks.iter().any(|s| {
        let c = s.counts[cycles];
        c.samples != c.period
    });
    (0..tree.nodes.len())
        .map(|i| {
            let (Some(c), Some(b)) = (shown[i], breakdowns[i].as_ref()) else {
                return None;
            };
            let share = c.share(b)?;
            let paired = pairs[i].map(|(_, _, per)| (&moments[i], per));
            let samples = sampled.then_some(tree.nodes[i].total.cycles.samples);
            intervals.share_in_formula(share, paired, samples)
        })
        .collect()
}

struct Topdown<'a> {
    profile: &'a Profile,
    tree: Tree<FrameId, CpiWeight>,
    look: &'a TopdownLook,
    /// Each drawn node's breakdown, by node index (`None` when not drawn or none).
    breakdowns: Vec<Option<Breakdown>>,
    /// Each drawn node's interval of the share its colour shows; empty without intervals.
    intervals: Vec<Option<Interval>>,
    confidence: Option<f64>,
    cycles: usize,
    total: Count,
    /// The whole profile's breakdown.
    all: Option<Breakdown>,
    /// See [`Options::counts`](crate::Options::counts).
    counts: bool,
}

type TdNode = Node<FrameId, CpiWeight>;

/// The legend's entry for washed-out frames, and the tooltip's line.
const UNCERTAIN_DOMINANT: &str = "dominant category uncertain";
const UNCERTAIN_SHARE: &str = "too few samples to place on the scale";

impl Topdown<'_> {
    /// Whether node `i` is drawn washed out: dominant colour, its dominant share's interval
    /// holds the runner-up's share (the hue is not known); one category, its interval is
    /// wider than a quarter of the stall scale.
    fn uncertain_at(&self, i: usize) -> bool {
        let (Some(Some(interval)), Some(Some(b))) = (self.intervals.get(i), self.breakdowns.get(i))
        else {
            return false;
        };
        match self.look.colour {
            TopdownColour::Dominant => interval.lo <= Dominant::of(b).runner_up,
            TopdownColour::Category(_) => interval.too_wide(STALL_COLOUR_WIDTH),
        }
    }

    fn set(&self) -> &FormulaSet {
        &self.look.plan.set
    }

    /// `retiring 17.2% · bad spec 23.1% · front end 41.4% · back end 18.4%`.
    fn write_split<O: Write>(&self, w: &mut O, b: &Breakdown) -> io::Result<()> {
        let mut first = true;
        for c in LEVEL1 {
            if let Some(s) = c.share(b) {
                let sep = if first { "" } else { " · " };
                write!(w, "{sep}{} {}", c.label(self.set()), Percent(Some(s), 1))?;
                first = false;
            }
        }
        Ok(())
    }
}

impl Picture for Topdown<'_> {
    type Frame = FrameId;
    type Weight = CpiWeight;

    fn tree(&self) -> &Tree<FrameId, CpiWeight> {
        &self.tree
    }

    fn total(&self) -> u64 {
        self.total.period
    }

    fn name(&self, node: &TdNode) -> &str {
        node.frame
            .map_or("all", |id| self.profile.frame(id).name.as_str())
    }

    fn kind(&self, node: &TdNode) -> Option<FrameKind> {
        node.frame.map(|id| self.profile.frame(id).kind)
    }

    fn fill(&self, node: &TdNode) -> Rgb {
        let i = self.tree.index_of(node) as usize;
        let colour = topdown_color(self.breakdowns[i].as_ref(), self.look.colour);
        if self.uncertain_at(i) {
            uncertain_color(colour)
        } else {
            colour
        }
    }

    /// The statistics line: the whole profile's split.
    fn write_stats<O: Write>(&self, w: &mut O) -> io::Result<()> {
        write!(
            w,
            "{}: {} {} · ",
            self.profile.events[self.cycles].name,
            Thousands(self.total.samples),
            weight_unit(self.counts)
        )?;
        match &self.all {
            Some(b) => {
                write!(w, "top-down: ")?;
                self.write_split(w, b)
            }
            None => write!(w, "top-down: n/a (no slots counted)"),
        }
    }

    fn legend(&self, width: u32) -> Option<Legend> {
        let width = f64::from(width);
        let bar = if width >= 600.0 { 160.0 } else { width / 4.0 };
        let uncertain = (0..self.tree.nodes.len()).any(|i| self.uncertain_at(i));
        match self.look.colour {
            TopdownColour::Category(c) => Some(Legend {
                id: "stall-scale",
                caption: format!("{} share:", c.label(self.set())).into(),
                stops: vec![(0.0, STALL_RED), (0.5, STALL_MID), (1.0, STALL_BLUE)],
                labels: vec![
                    (0.0, "0%".into()),
                    (0.5, "50%".into()),
                    (1.0, "100%".into()),
                ],
                bar,
                swatches: if uncertain {
                    vec![Swatch {
                        fill: uncertain_color(STALL_MID),
                        stripes: None,
                        label: UNCERTAIN_SHARE,
                    }]
                } else {
                    Vec::new()
                },
            }),
            TopdownColour::Dominant => {
                let level2 = self.all.is_some_and(|b| b.level2.is_some());
                let mut swatches = Vec::new();
                for c in Category::of(&self.look.plan) {
                    let hues = match c {
                        Category::Level2(_) => continue,
                        c => hues(c),
                    };
                    swatches.push(Swatch {
                        fill: hues[0],
                        stripes: None,
                        label: c.label(self.set()),
                    });
                    if let (true, Some(children)) = (level2, c.children()) {
                        for (k, child) in children.into_iter().enumerate() {
                            swatches.push(Swatch {
                                fill: hues[1 + k],
                                stripes: None,
                                label: Category::Level2(child).label(self.set()),
                            });
                        }
                    }
                }
                if uncertain {
                    swatches.push(Swatch {
                        fill: uncertain_color(STALL_MID),
                        stripes: None,
                        label: UNCERTAIN_DOMINANT,
                    });
                }
                let floor = 100
                    / Category::of(&self.look.plan)
                        .iter()
                        .filter(|c| !matches!(c, Category::Level2(_)))
                        .count();
                // The ramp in a neutral grey: every hue is drawn so.
                let grey = Rgb(110, 110, 110);
                Some(Legend {
                    id: "intensity",
                    caption: "dominant share:".into(),
                    stops: vec![(0.0, topdown_intensity(grey, 0.0)), (1.0, grey)],
                    labels: vec![(0.0, format!("{floor}%")), (1.0, "100%".into())],
                    bar: bar / 2.0,
                    swatches,
                })
            }
        }
    }

    /// The `<title>` text after the name: origin, cycles, the level-1 split, level 2, the
    /// shown share's interval.
    fn write_details<O: Write>(&self, w: &mut O, node: &TdNode) -> io::Result<()> {
        if let Some(id) = node.frame {
            write_origin(w, self.profile.frame(id))?;
        }
        let i = self.tree.index_of(node) as usize;
        let c = &node.total.cycles;
        write!(
            w,
            "\ncycles: {} {}, {} events ({} of all)",
            Thousands(c.samples),
            weight_unit(self.counts),
            Events(c.period),
            Percent(ratio(c.period, self.total.period), 2)
        )?;
        let Some(b) = &self.breakdowns[i] else {
            return write!(w, "\ntop-down: n/a (no slots counted)");
        };
        write!(w, "\ntop-down: ")?;
        self.write_split(w, b)?;
        if b.level2.is_some() {
            for parent in &LEVEL1[..4] {
                let [x, y] = parent.children().unwrap_or_default().map(Category::Level2);
                write!(
                    w,
                    "\n  {}: {} {} · {} {}",
                    parent.label(self.set()),
                    x.label(self.set()),
                    Percent(x.share(b), 1),
                    y.label(self.set()),
                    Percent(y.share(b), 1)
                )?;
            }
        }
        let (shown, share) = match self.look.colour {
            TopdownColour::Dominant => {
                let d = Dominant::of(b);
                (d.category, Some(d.share))
            }
            TopdownColour::Category(c) => (c, c.share(b)),
        };
        let what = match self.look.colour {
            TopdownColour::Dominant => "dominant",
            TopdownColour::Category(_) => "shown",
        };
        write!(
            w,
            "\n{what}: {} {}",
            shown.label(self.set()),
            Percent(share, 1)
        )?;
        if let (Some(confidence), Some(Some(interval))) = (self.confidence, self.intervals.get(i)) {
            write_interval(w, confidence, interval, |v| Percent(Some(v), 1).to_string())?;
            if self.uncertain_at(i) {
                let why = match self.look.colour {
                    TopdownColour::Dominant => {
                        "dominant category uncertain (the runner-up is within its interval)"
                    }
                    TopdownColour::Category(_) => UNCERTAIN_SHARE,
                };
                write!(w, "\n{why}: drawn washed out")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::color::PALE;

    fn b(ret: f64, bs: f64, fe: f64, be: f64) -> Breakdown {
        Breakdown {
            retiring: ret,
            bad_speculation: bs,
            frontend_bound: fe,
            backend_bound: be,
            smt_contention: None,
            level2: None,
        }
    }

    #[test]
    fn dominant_is_the_largest_and_intensity_runs_from_a_quarter() {
        let d = Dominant::of(&b(0.25, 0.25, 0.25, 0.25));
        assert_eq!((d.category, d.intensity()), (Category::Retiring, 0.0));
        let d = Dominant::of(&b(0.0, 0.0, 0.0, 1.0));
        assert_eq!(
            (d.category, d.intensity(), d.runner_up),
            (Category::BackendBound, 1.0, 0.0)
        );
        // 5/8 is half way from 1/4 to 1.
        let d = Dominant::of(&b(0.125, 0.125, 0.625, 0.125));
        assert_eq!((d.category, d.intensity()), (Category::FrontendBound, 0.5));
        assert_eq!(
            topdown_color(
                Some(&b(0.125, 0.125, 0.625, 0.125)),
                TopdownColour::Dominant
            ),
            topdown_intensity(TOPDOWN_FRONTEND[0], 0.5)
        );
        assert_eq!(topdown_color(None, TopdownColour::Dominant), UNKNOWN_GREY);
        assert_eq!(topdown_intensity(STALL_BLUE, 1.0), STALL_BLUE);
        assert_eq!(
            topdown_intensity(STALL_BLUE, 0.0),
            crate::color::lerp(STALL_BLUE, PALE, crate::color::TOPDOWN_PALE_END)
        );
    }
}
