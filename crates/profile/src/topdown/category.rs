//! The categories of top-down analysis as a picture or a report shows them: level 1, SMT
//! contention, the level-2 nodes; the dominant one of a breakdown; and the pair of columns
//! whose per-sample deltas give a category's share's interval. The TMA model, not its
//! colours: render draws it.

use super::{tma_role_of, Breakdown, FormulaSet, Plan, TmaRole};
use crate::Profile;

/// A top-down category: level 1, or a level-2 node by its index in
/// [`Level2`](super::Level2)'s field order (0 fetch latency .. 7 light
/// operations; AMD's nodes in the same places).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    Retiring,
    BadSpeculation,
    FrontendBound,
    BackendBound,
    /// AMD only.
    SmtContention,
    Level2(u8),
}

/// The level-1 categories in the order they are shown.
pub const LEVEL1: [Category; 5] = [
    Category::Retiring,
    Category::BadSpeculation,
    Category::FrontendBound,
    Category::BackendBound,
    Category::SmtContention,
];

impl Category {
    /// Every category `plan` gives: level 1 (with SMT contention where counted), then its
    /// level-2 nodes where it has them.
    pub fn of(plan: &Plan) -> Vec<Category> {
        let (smt, level2) = match plan.set {
            FormulaSet::IntelGoldenCove { level2, .. }
            | FormulaSet::IntelLionCove { level2 }
            | FormulaSet::IntelPerfMetrics { level2 } => (false, level2),
            FormulaSet::AmdZen {
                smt_contention,
                level2,
                ..
            } => (smt_contention, level2),
            _ => (false, false),
        };
        let mut all: Vec<Category> = LEVEL1[..4].to_vec();
        if smt {
            all.push(Category::SmtContention);
        }
        if level2 {
            all.extend((0..8).map(Category::Level2));
        }
        all
    }

    /// The name `--topdown-color` takes: `retiring`, `bad-speculation`, `frontend`,
    /// `backend`, `smt-contention`, or the set's level-2 name with dashes (`memory-bound`).
    pub fn flag_name(self, set: &FormulaSet) -> String {
        match self {
            Category::Retiring => "retiring".into(),
            Category::BadSpeculation => "bad-speculation".into(),
            Category::FrontendBound => "frontend".into(),
            Category::BackendBound => "backend".into(),
            Category::SmtContention => "smt-contention".into(),
            Category::Level2(i) => set.level2_names()[usize::from(i) % 8].replace(' ', "-"),
        }
    }

    /// The category of `plan` named `name` (as [`Category::flag_name`], case-insensitive;
    /// `bad-spec`, `frontend-bound` and `backend-bound` too), or a line saying which names
    /// the plan has.
    pub fn parse(name: &str, plan: &Plan) -> Result<Category, String> {
        let all = Category::of(plan);
        let wanted = name.trim().to_ascii_lowercase().replace('_', "-");
        let alias = match wanted.as_str() {
            "bad-spec" => "bad-speculation",
            "frontend-bound" | "front-end" => "frontend",
            "backend-bound" | "back-end" => "backend",
            other => other,
        };
        all.iter()
            .copied()
            .find(|c| c.flag_name(&plan.set) == alias)
            .ok_or_else(|| {
                let names: Vec<String> = all.iter().map(|c| c.flag_name(&plan.set)).collect();
                format!(
                    "no top-down category `{name}` in the {} formulas: one of {}",
                    plan.set.name(),
                    names.join(", ")
                )
            })
    }

    /// The label of tooltips and legends (`bad spec`, `front end`, `memory bound`).
    pub fn label(self, set: &FormulaSet) -> &'static str {
        match self {
            Category::Retiring => "retiring",
            Category::BadSpeculation => "bad spec",
            Category::FrontendBound => "front end",
            Category::BackendBound => "back end",
            Category::SmtContention => "SMT contention",
            Category::Level2(i) => set.level2_names()[usize::from(i) % 8],
        }
    }

    /// The category's fraction in `b`; `None` for one `b` does not have.
    pub fn share(self, b: &Breakdown) -> Option<f64> {
        match self {
            Category::Retiring => Some(b.retiring),
            Category::BadSpeculation => Some(b.bad_speculation),
            Category::FrontendBound => Some(b.frontend_bound),
            Category::BackendBound => Some(b.backend_bound),
            Category::SmtContention => b.smt_contention,
            Category::Level2(i) => b.level2.map(|l| {
                [
                    l.fetch_latency,
                    l.fetch_bandwidth,
                    l.branch_mispredicts,
                    l.machine_clears,
                    l.memory_bound,
                    l.core_bound,
                    l.heavy_operations,
                    l.light_operations,
                ][usize::from(i) % 8]
            }),
        }
    }

    /// The indexes of a level-1 category's two level-2 children.
    pub fn children(self) -> Option<[u8; 2]> {
        match self {
            Category::FrontendBound => Some([0, 1]),
            Category::BadSpeculation => Some([2, 3]),
            Category::BackendBound => Some([4, 5]),
            Category::Retiring => Some([6, 7]),
            _ => None,
        }
    }
}

/// The dominant category of a breakdown: the largest level-1 share (the first in the order
/// retiring, bad spec, front end, back end, SMT contention on a tie), its share, the
/// runner-up's share, how many level-1 categories there are, and its dominant level-2 child
/// (0 or 1, the first on a tie) where `b` has level 2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dominant {
    pub category: Category,
    pub share: f64,
    pub runner_up: f64,
    pub categories: usize,
    pub child: Option<u8>,
}

impl Dominant {
    /// The dominant category of `b`.
    pub fn of(b: &Breakdown) -> Dominant {
        let shares: Vec<(Category, f64)> = LEVEL1
            .iter()
            .filter_map(|&c| {
                c.share(b)
                    .map(|s| (c, if s.is_nan() { f64::MIN } else { s }))
            })
            .collect();
        let mut best = 0;
        for (i, &(_, s)) in shares.iter().enumerate() {
            if s > shares[best].1 {
                best = i;
            }
        }
        let (category, share) = shares[best];
        let runner_up = shares
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != best)
            .map(|(_, &(_, s))| s)
            .fold(f64::MIN, f64::max);
        let child = category.children().and_then(|[a, c]| {
            let (x, y) = (Category::Level2(a).share(b)?, Category::Level2(c).share(b)?);
            Some(u8::from(y > x))
        });
        Dominant {
            category,
            share,
            runner_up,
            categories: shares.len(),
            child,
        }
    }

    /// The intensity of the dominant share: 0 at the lowest share a dominant category can
    /// have (1/k of k categories), 1 at 100%, clamped.
    pub fn intensity(&self) -> f64 {
        let floor = 1.0 / self.categories as f64;
        ((self.share - floor) / (1.0 - floor)).clamp(0.0, 1.0)
    }
}

/// The columns of a category's share whose per-sample deltas give its interval: numerator,
/// denominator, and the slots per denominator unit (Intel: the metric over `slots`, 1; AMD:
/// the category's event over cycles, the width). `None` where no single pair of columns
/// is the share (bad speculation on AMD, level-2 residuals, Skylake's and Arm's formulas).
pub fn pair_columns(profile: &Profile, plan: &Plan, c: Category) -> Option<(usize, usize, f64)> {
    let column = |role: TmaRole| {
        profile
            .events
            .iter()
            .position(|e| tma_role_of(&e.name) == Some(role))
    };
    let (num, den, per) = match plan.set {
        FormulaSet::IntelIceLake { .. }
        | FormulaSet::IntelGoldenCove { .. }
        | FormulaSet::IntelLionCove { .. }
        | FormulaSet::IntelPerfMetrics { .. } => {
            let num = match c {
                Category::Retiring => TmaRole::Retiring,
                Category::BadSpeculation => TmaRole::BadSpec,
                Category::FrontendBound => TmaRole::FeBound,
                Category::BackendBound => TmaRole::BeBound,
                Category::Level2(0) => TmaRole::FetchLat,
                Category::Level2(2) => TmaRole::BrMispredict,
                Category::Level2(4) => TmaRole::MemBound,
                Category::Level2(6) => TmaRole::HeavyOps,
                _ => return None,
            };
            (num, TmaRole::Slots, 1.0)
        }
        FormulaSet::AmdZen { width, .. } => {
            let num = match c {
                Category::Retiring => TmaRole::AmdOpsRetired,
                Category::FrontendBound => TmaRole::AmdNoOpsFromFrontend,
                Category::BackendBound => TmaRole::AmdBackendStalls,
                Category::SmtContention => TmaRole::AmdSmtContention,
                _ => return None,
            };
            (num, TmaRole::Cycles, f64::from(width))
        }
        _ => return None,
    };
    Some((column(num)?, column(den)?, per))
}
