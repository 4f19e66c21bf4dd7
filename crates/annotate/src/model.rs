//! What an annotation is: functions, their instructions and lines, and the weights of each.

use cpiflame_profile::topdown::{Breakdown, Plan};
use cpiflame_unwind::SourceFrame;

/// One annotated function.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub module: String,
    /// The weighing column's name.
    pub event: String,
    /// Samples (of the weighing column) whose leaf is in the function.
    pub samples: u64,
    /// Their period: the function's self weight.
    pub period: u64,
    /// The weighing event samples without precise_ip: they skid.
    pub skids: bool,
    pub has_stalls: bool,
    pub has_cpi: bool,
    /// The top-down formulas of the recording's columns (`Loaded::topdown`); `None` without
    /// top-down events. Each instruction's, line's and the function's fractions are the
    /// formulas applied to its summed deltas ([`Weights::sums`]).
    pub topdown_plan: Option<Plan>,
    /// The function's summed deltas (every column), for its fractions.
    pub sums: Vec<u64>,
    /// In address order.
    pub instructions: Vec<Instruction>,
    /// In descending period, then file and line.
    pub lines: Vec<Line>,
    /// The part GCC split off this function (`foo.cold`), when it has samples: annotated
    /// apart, as perf does.
    pub cold_part: Option<ColdPart>,
}

/// A function's `.cold` part, as its function's annotation mentions it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColdPart {
    /// `foo.cold`: the function's name and the suffix.
    pub name: String,
    /// Samples of the weighing column in it, and their period.
    pub samples: u64,
    pub period: u64,
}

/// What annotate appends to a function's name for its cold part.
pub(crate) const COLD: &str = ".cold";

/// Whether a symbol-table name is a part GCC split off a function (`foo.cold`, `_Z3foov.cold`;
/// older GCCs number them, `foo.cold.12`).
pub(crate) fn is_cold_part(symbol: &str) -> bool {
    symbol.ends_with(COLD) || symbol.contains(".cold.")
}

/// The weights of the samples at one instruction or line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Weights {
    pub samples: u64,
    pub period: u64,
    pub stalls: u64,
    /// The cycles the stall share and CPI divide by: the cycles column's, or on a hybrid
    /// recording those of the core types that recorded the colour events
    /// (`Loaded::ratio_cycles`), as the graph divides.
    pub cycles: u64,
    pub instructions: u64,
    /// With top-down formulas ([`Function::topdown_plan`]): every column's summed deltas
    /// of these samples, in the recording's columns (what [`Plan::apply`] takes); empty
    /// without.
    pub sums: Vec<u64>,
}

impl Weights {
    pub(crate) fn add(&mut self, other: &Weights) {
        self.samples += other.samples;
        self.period += other.period;
        self.stalls += other.stalls;
        self.cycles += other.cycles;
        self.instructions += other.instructions;
        add_sums(&mut self.sums, &other.sums);
    }
}

/// `sums += other`, column by column (`sums` grown to `other`'s width).
pub(crate) fn add_sums(sums: &mut Vec<u64>, other: &[u64]) {
    if sums.len() < other.len() {
        sums.resize(other.len(), 0);
    }
    for (s, &o) in sums.iter_mut().zip(other) {
        *s = s.saturating_add(o);
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// The ELF address (a kernel address as sampled).
    pub address: u64,
    pub weights: Weights,
    /// AT&T syntax; `None` where the code's bytes are not at hand.
    pub text: Option<String>,
    /// Innermost first: inlined functions, then the function, each with its line.
    pub frames: Vec<SourceFrame>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub file: String,
    pub line: u32,
    pub weights: Weights,
    /// The source text, when the file was found.
    pub source: Option<String>,
    /// The functions inlined at this line, innermost first (empty: the function's own).
    pub inlined: Vec<String>,
}

/// `part` of `whole` in percent; `None` for an empty whole.
pub(crate) fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 * 100.0 / whole as f64)
}

impl Function {
    pub(crate) fn share(&self, w: &Weights) -> Option<f64> {
        percent(w.period, self.period)
    }
    pub(crate) fn stall_share(&self, w: &Weights) -> Option<f64> {
        self.has_stalls
            .then(|| percent(w.stalls, w.cycles))
            .flatten()
    }
    /// The top-down fractions of `sums` (an instruction's, a line's, the function's);
    /// `None` without top-down formulas, `Some(None)` where they give none.
    pub fn topdown(&self, sums: &[u64]) -> Option<Option<Breakdown>> {
        self.topdown_plan.as_ref().map(|plan| plan.apply(sums))
    }
    pub(crate) fn cpi(&self, w: &Weights) -> Option<f64> {
        self.has_cpi
            .then(|| (w.instructions > 0).then(|| w.cycles as f64 / w.instructions as f64))
            .flatten()
    }
}
