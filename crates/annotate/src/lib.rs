//! `cpiflame annotate`: one function of a perf.data recording, instruction by instruction and
//! source line by source line, with the samples whose leaf is each (its self weight split).
//!
//! The recording is read once, by the loader (`load_walked`, which chooses the columns' roles
//! exactly as `fold` and `render` do): its walk hands every sample it counts, with the
//! weights it gave it, to a visitor that keeps each sample's leaf address by attr; the roles
//! chosen after the walk turn those sums into columns. A function's total here is therefore
//! its self weight in `fold`, by construction. Per instruction: the share of the width column's period, and where the recording
//! has the columns, the stall share (stall period / cycles period of the samples whose leaf
//! is that instruction) and CPI (cycles period / instructions period); on a hybrid recording
//! both divide by the cycles of the core types that recorded the colour events
//! (`Loaded::ratio_cycles`, through `ratio_cycles_events`), as the graph does. With a
//! top-down group (`Loaded::topdown`), every column's deltas are summed per site too, and each
//! instruction, line and the function get the formulas applied to their sums
//! (`cpiflame_profile::topdown::Plan::apply`: a ratio of sums). Every sample's counter
//! values are taken before the leaf and `--no-kernel` filters, as `fold` takes them, so a
//! leader-sampled group's deltas are `fold`'s whatever is left out.
//!
//! A function's `.cold` part (code GCC moved out of line into the symbol `foo.cold`, which
//! frames and `report` name `foo`) is annotated apart, as `perf annotate` does, and named by
//! the function's annotation when it has samples.
//!
//! Disassembly: x86-64 (`iced-x86`, AT&T syntax) and AArch64 (`yaxpeax-arm`, its text with
//! PC-relative targets made absolute, as objdump prints them); a recording of another
//! architecture gets its sampled addresses and source lines without instruction text. Kernel
//! functions get their sampled addresses only: the kernel's code is not in the recording.
//!
//! Never prints or exits: the binary hands [`write()`] its writer; warnings are returned. Never
//! weighs a sample differently from `fold`: the columns, roles and weights are the loader's.

mod source;

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use cpiflame_perf_data::Sample;
use cpiflame_pipeline::{
    event_columns, load_walked, ratio_cycles_events, LoadError, LoadOptions, Recording,
    SampleVisitor, WalkAlso, Walked,
};
use cpiflame_profile::summary::topdown_cell;
use cpiflame_profile::topdown::{Breakdown, Plan};
use cpiflame_unwind::address::{EntryAddress, StackFrame};
use cpiflame_unwind::{
    CodeAddress, CodeFile, FrameKind, FrameRef, Resolver, SourceFrame, StackEntry,
};
use serde_json::{json, Value};

pub use source::SourcePaths;

/// What to annotate and how.
#[derive(Clone, Debug, Default)]
pub struct AnnotateOptions {
    /// The function, named as `report` names it; `None`: the top functions by self weight.
    pub symbol: Option<String>,
    /// How many top functions without `symbol`.
    pub limit: usize,
    /// The column that weighs instructions (`fold --event`); default: the cycles role.
    pub event: Option<String>,
    /// Where source files are looked for.
    pub sources: SourcePaths,
}

/// Why there is no annotation.
#[derive(Debug, thiserror::Error)]
pub enum AnnotateError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    PerfData(#[from] cpiflame_perf_data::ReadError),
    #[error("{}: annotate needs a perf.data file (text input keeps no instruction addresses)", .0.display())]
    NotPerfData(PathBuf),
    #[error("{}: no samples in a function named `{symbol}` (names as `cpiflame report` prints them)", file.display())]
    NoSuchFunction { file: PathBuf, symbol: String },
    #[error("{}: no samples in `{symbol}` itself; its part `{symbol}.cold` has {samples}: annotate `{symbol}.cold`", file.display())]
    OnlyColdPart {
        file: PathBuf,
        symbol: String,
        samples: u64,
    },
    #[error("{}: several events and no cycles column; choose one with --event", .0.display())]
    NoColumn(PathBuf),
}

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
const COLD: &str = ".cold";

/// Whether a symbol-table name is a part GCC split off a function (`foo.cold`, `_Z3foov.cold`;
/// older GCCs number them, `foo.cold.12`).
fn is_cold_part(symbol: &str) -> bool {
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
    fn add(&mut self, other: &Weights) {
        self.samples += other.samples;
        self.period += other.period;
        self.stalls += other.stalls;
        self.cycles += other.cycles;
        self.instructions += other.instructions;
        add_sums(&mut self.sums, &other.sums);
    }
}

/// `sums += other`, column by column (`sums` grown to `other`'s width).
fn add_sums(sums: &mut Vec<u64>, other: &[u64]) {
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

/// Where a sample's leaf was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Site {
    User(CodeAddress),
    /// A kernel address, or a user one in no opened file.
    Raw(u64),
}

/// The columns a sample adds to.
#[derive(Clone, Debug)]
struct Columns {
    width: usize,
    stalls: Option<usize>,
    cycles: Option<usize>,
    instructions: Option<usize>,
    /// A hybrid recording's ratio cycles (`Loaded::ratio_cycles`): per attr, whether it adds
    /// to the cycles the colour events are divided by, instead of the cycles column.
    ratio: Option<Vec<bool>>,
    /// With top-down formulas: the number of columns, each summed per site.
    sums: Option<usize>,
}

impl AnnotateOptions {
    pub fn new(
        symbol: Option<String>,
        limit: usize,
        event: Option<String>,
        sources: SourcePaths,
    ) -> AnnotateOptions {
        AnnotateOptions {
            symbol,
            limit,
            event,
            sources,
        }
    }
}

/// The functions `options` asks for in the recording `load` names (see [`annotate`]).
pub fn annotate_file(
    load: &LoadOptions,
    options: &AnnotateOptions,
    warnings: &mut Vec<String>,
) -> Result<Vec<Function>, AnnotateError> {
    annotate(Recording::open(load)?, options, warnings)
}

/// The functions `options` asks for, annotated.
pub fn annotate(
    recording: Recording<'_>,
    options: &AnnotateOptions,
    warnings: &mut Vec<String>,
) -> Result<Vec<Function>, AnnotateError> {
    let load = recording.options();
    if !recording.is_perf_data() {
        return Err(AnnotateError::NotPerfData(load.file.clone()));
    }
    // Instructions are on-CPU: the wall-time columns are left out.
    let load = LoadOptions {
        on_cpu_only: true,
        ..load.clone()
    };
    let file = recording.perf_data()?;
    // One read: the loader's walk hands every sample it counts to the site walk.
    let mut site_walk = SiteWalk {
        kernel: load.kernel,
        sites: HashMap::new(),
    };
    let also = WalkAlso {
        timed: false,
        visit: Some(&mut site_walk),
    };
    let Walked {
        loaded, resolver, ..
    } = load_walked(&file, &load, also, warnings)?;
    let width = match &options.event {
        Some(name) => loaded.event_index(name, "--event")?,
        None => match loaded.roles.cycles {
            Some(c) => c,
            None if loaded.profile.events.len() == 1 => 0,
            None => return Err(AnnotateError::NoColumn(load.file.clone())),
        },
    };
    let (names, column_of) = event_columns(&file);
    // The plan's columns are the loaded profile's: the walk's must be the same.
    let same_columns = loaded
        .profile
        .events
        .iter()
        .map(|e| &e.name)
        .eq(names.iter());
    let topdown_plan = loaded.topdown.clone().filter(|_| same_columns);
    let columns = Columns {
        width,
        stalls: loaded.roles.stalls,
        cycles: loaded.roles.cycles,
        instructions: loaded.roles.instructions,
        ratio: ratio_cycles_events(&file, &loaded),
        sums: topdown_plan.as_ref().map(|_| names.len()),
    };
    let sites = site_walk.weigh(&columns, &column_of);
    let skids = column_of
        .iter()
        .zip(&file.attrs)
        .any(|(&c, a)| c == width && a.precise_ip() == 0);
    let event = names.get(width).cloned().unwrap_or_default();
    let isa = Isa::of(file.meta.arch.as_deref());

    // Functions by their final names (kernel names may arrive late: see pprof's merge); a
    // function's `.cold` part apart, as perf reports it (frames name both parts `foo`).
    let mut functions: HashMap<(String, String), HashMap<Site, Weights>> = HashMap::new();
    for ((frame, site), w) in sites {
        let info = resolver.frame(frame);
        let mut name = info.name.to_string();
        if let Site::User(code) = site {
            let cold = resolver
                .function_symbol(code)
                .is_some_and(|s| is_cold_part(&s));
            if cold && !name.ends_with(COLD) {
                name.push_str(COLD);
            }
        }
        let key = (name, info.module.to_string());
        functions
            .entry(key)
            .or_default()
            .entry(site)
            .or_default()
            .add(&w);
    }
    let total = |s: &HashMap<Site, Weights>| s.values().map(|w| w.period).sum::<u64>();
    let samples = |s: &HashMap<Site, Weights>| s.values().map(|w| w.samples).sum::<u64>();
    // Each function's cold part, by the function's name and module.
    let cold_parts: HashMap<(String, String), ColdPart> = functions
        .iter()
        .filter_map(|((name, module), sites)| {
            let base = name.strip_suffix(COLD)?;
            let part = ColdPart {
                name: name.clone(),
                samples: samples(sites),
                period: total(sites),
            };
            (part.period > 0).then(|| ((base.to_string(), module.clone()), part))
        })
        .collect();
    let mut chosen: Vec<((String, String), HashMap<Site, Weights>)> = match &options.symbol {
        Some(symbol) => functions
            .into_iter()
            .filter(|((name, _), _)| name == symbol)
            .collect(),
        None => functions.into_iter().collect(),
    };
    chosen.retain(|(_, s)| total(s) > 0);
    chosen.sort_by(|a, b| total(&b.1).cmp(&total(&a.1)).then_with(|| a.0.cmp(&b.0)));
    if options.symbol.is_none() {
        chosen.truncate(options.limit);
    }
    if let (Some(symbol), true) = (&options.symbol, chosen.is_empty()) {
        let cold = cold_parts
            .iter()
            .filter(|((name, _), _)| name == symbol)
            .map(|(_, part)| part.samples)
            .sum::<u64>();
        if cold > 0 {
            return Err(AnnotateError::OnlyColdPart {
                file: load.file.clone(),
                symbol: symbol.clone(),
                samples: cold,
            });
        }
        return Err(AnnotateError::NoSuchFunction {
            file: load.file.clone(),
            symbol: symbol.clone(),
        });
    }
    let mut sources = source::Cache::default();
    Ok(chosen
        .into_iter()
        .map(|((name, module), sites)| {
            let cold_part = cold_parts.get(&(name.clone(), module.clone())).cloned();
            let mut f = function(&resolver, name, module, &sites, isa);
            f.cold_part = cold_part;
            f.event = event.clone();
            f.skids = skids;
            f.has_stalls = columns.stalls.is_some() && columns.cycles.is_some();
            f.has_cpi = columns.instructions.is_some() && columns.cycles.is_some();
            f.topdown_plan = topdown_plan.clone();
            f.lines = lines(&f.instructions, &options.sources, &mut sources);
            f
        })
        .collect())
}

/// Each sample's leaf site, by the function it is in, with its weights per attr: the
/// collapse's walk hands it every sample it counts ([`SampleVisitor`]), and the columns
/// (roles) the loader chooses after that walk turn the per-attr sums into [`Weights`].
struct SiteWalk {
    kernel: bool,
    sites: HashMap<(FrameRef, Site), AttrSums>,
}

/// Per attr of the file: how many samples gave it a weight, and the weights' sum.
#[derive(Default)]
struct AttrSums {
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
    /// The sites' weights in `columns` (`column_of`: each attr's column).
    fn weigh(self, columns: &Columns, column_of: &[usize]) -> HashMap<(FrameRef, Site), Weights> {
        self.sites
            .into_iter()
            .map(|(key, sums)| (key, sums.weigh(columns, column_of)))
            .collect()
    }
}

impl AttrSums {
    fn weigh(&self, columns: &Columns, column_of: &[usize]) -> Weights {
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

/// One function's instructions: every instruction of its symbol where its bytes are at
/// hand (x86-64, AArch64), else the sampled addresses.
fn function(
    resolver: &Resolver,
    name: String,
    module: String,
    sites: &HashMap<Site, Weights>,
    isa: Option<Isa>,
) -> Function {
    let mut by_address: HashMap<u64, Weights> = HashMap::new();
    let mut sums = Vec::new();
    let mut image_weight: HashMap<CodeFile, u64> = HashMap::new();
    let mut code_of: HashMap<u64, CodeAddress> = HashMap::new();
    for (site, w) in sites {
        let address = match site {
            Site::User(code) => {
                *image_weight.entry(code.file).or_default() += w.period;
                code_of.entry(code.svma).or_insert(*code);
                code.svma
            }
            Site::Raw(a) => *a,
        };
        by_address.entry(address).or_default().add(w);
        add_sums(&mut sums, &w.sums);
    }
    // The file with the most weight gives the code (one function, one file, nearly always).
    let image = image_weight
        .into_iter()
        .max_by_key(|&(i, w)| (w, std::cmp::Reverse(i)))
        .map(|(i, _)| i);
    let hottest = code_of
        .values()
        .filter(|c| Some(c.file) == image)
        .max_by_key(|c| (by_address[&c.svma].period, std::cmp::Reverse(c.svma)))
        .copied();
    let code = hottest.and_then(|c| resolver.function_code(c).map(|(r, b)| (c.file, r, b)));
    let mut instructions = Vec::new();
    match code {
        Some((image, range, bytes)) if isa.is_some() => {
            let text = match isa {
                Some(Isa::X86_64) => disassemble(range.start, bytes),
                _ => disassemble_aarch64(range.start, bytes),
            };
            for (address, text) in text {
                let code = CodeAddress {
                    file: image,
                    svma: address,
                };
                instructions.push(Instruction {
                    address,
                    weights: by_address.remove(&address).unwrap_or_default(),
                    text: Some(text),
                    frames: resolver.source_frames(code),
                });
            }
        }
        _ => {}
    }
    // Sampled addresses the disassembly did not reach (or all of them, without it).
    for (address, weights) in by_address {
        let frames = code_of
            .get(&address)
            .map(|&c| resolver.source_frames(c))
            .unwrap_or_default();
        instructions.push(Instruction {
            address,
            weights,
            text: None,
            frames,
        });
    }
    instructions.sort_by_key(|i| i.address);
    let samples = instructions.iter().map(|i| i.weights.samples).sum();
    let period = instructions.iter().map(|i| i.weights.period).sum();
    Function {
        name,
        module,
        event: String::new(),
        samples,
        period,
        skids: false,
        has_stalls: false,
        has_cpi: false,
        topdown_plan: None,
        sums,
        instructions,
        lines: Vec::new(),
        cold_part: None,
    }
}

/// The instruction sets annotate disassembles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    X86_64,
    Aarch64,
}

impl Isa {
    /// The recording's architecture (perf's HEADER_ARCH, `uname -m`); a file without one is
    /// taken for x86-64, as before architectures were told apart.
    fn of(arch: Option<&str>) -> Option<Isa> {
        match arch {
            None | Some("x86_64" | "amd64") => Some(Isa::X86_64),
            Some("aarch64" | "arm64") => Some(Isa::Aarch64),
            Some(_) => None,
        }
    }
}

/// The instructions of little-endian AArch64 `bytes` at ELF address `start`: yaxpeax-arm's
/// text, with its PC-relative operands (`$+0x88`) written as the absolute address objdump
/// prints (`adrp`'s counted from the instruction's 4 KiB page). A word that decodes to no
/// instruction is `.inst 0xWORD`, as objdump writes it.
fn disassemble_aarch64(start: u64, bytes: &[u8]) -> Vec<(u64, String)> {
    use yaxpeax_arch::{Decoder, U8Reader};
    use yaxpeax_arm::armv8::a64::{InstDecoder, Opcode, Operand};
    let decoder = InstDecoder::default();
    let mut out = Vec::new();
    for (k, word) in bytes.chunks_exact(4).enumerate() {
        let address = start + 4 * k as u64;
        let text = match decoder.decode(&mut U8Reader::new(word)) {
            Ok(instruction) => {
                let mut text = instruction.to_string();
                for operand in &instruction.operands {
                    let &Operand::PCOffset(offset) = operand else {
                        continue;
                    };
                    let base = match instruction.opcode {
                        Opcode::ADRP => address & !0xfff,
                        _ => address,
                    };
                    let shown = match offset < 0 {
                        true => format!("$-{:#x}", offset.unsigned_abs()),
                        false => format!("$+{offset:#x}"),
                    };
                    let target = base.wrapping_add_signed(offset);
                    text = text.replacen(&shown, &format!("{target:#x}"), 1);
                }
                text
            }
            Err(_) => {
                let word = u32::from_le_bytes(word.try_into().expect("4 bytes"));
                format!(".inst {word:#010x}")
            }
        };
        out.push((address, text));
    }
    out
}

/// The instructions of `bytes` at ELF address `start`, in AT&T syntax.
fn disassemble(start: u64, bytes: &[u8]) -> Vec<(u64, String)> {
    use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter};
    let mut decoder = Decoder::with_ip(64, bytes, start, DecoderOptions::NONE);
    let mut formatter = GasFormatter::new();
    // Closer to objdump's AT&T text, which perf annotate shows: lower-case hex, branch
    // targets without leading zeros.
    formatter.options_mut().set_uppercase_hex(false);
    formatter.options_mut().set_branch_leading_zeros(false);
    let mut out = Vec::new();
    while decoder.can_decode() {
        let instruction = decoder.decode();
        let mut text = String::new();
        formatter.format(&instruction, &mut text);
        out.push((instruction.ip(), text));
    }
    out
}

/// The source lines of `instructions`: each instruction counts on its innermost frame's
/// line (inlined code on its own line).
fn lines(
    instructions: &[Instruction],
    paths: &SourcePaths,
    cache: &mut source::Cache,
) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    let mut index: HashMap<(String, u32), usize> = HashMap::new();
    for i in instructions {
        let Some(inner) = i.frames.first() else {
            continue;
        };
        let (Some(file), Some(line)) = (&inner.line.file, inner.line.line) else {
            continue;
        };
        let at = *index.entry((file.clone(), line)).or_insert_with(|| {
            let inlined = i
                .frames
                .iter()
                .filter(|f| f.inlined)
                .map(|f| f.function.clone())
                .collect();
            lines.push(Line {
                file: file.clone(),
                line,
                weights: Weights::default(),
                source: cache.line(paths, file, line),
                inlined,
            });
            lines.len() - 1
        });
        lines[at].weights.add(&i.weights);
    }
    lines.sort_by(|a, b| {
        b.weights
            .period
            .cmp(&a.weights.period)
            .then_with(|| (&a.file, a.line).cmp(&(&b.file, b.line)))
    });
    lines
}

/// `part` of `whole` in percent; `None` for an empty whole.
fn percent(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 * 100.0 / whole as f64)
}

impl Function {
    fn share(&self, w: &Weights) -> Option<f64> {
        percent(w.period, self.period)
    }
    fn stall_share(&self, w: &Weights) -> Option<f64> {
        self.has_stalls
            .then(|| percent(w.stalls, w.cycles))
            .flatten()
    }
    /// The top-down fractions of `sums` (an instruction's, a line's, the function's);
    /// `None` without top-down formulas, `Some(None)` where they give none.
    pub fn topdown(&self, sums: &[u64]) -> Option<Option<Breakdown>> {
        self.topdown_plan.as_ref().map(|plan| plan.apply(sums))
    }
    fn cpi(&self, w: &Weights) -> Option<f64> {
        self.has_cpi
            .then(|| (w.instructions > 0).then(|| w.cycles as f64 / w.instructions as f64))
            .flatten()
    }
}

/// The line a non-precise event's annotation starts with.
pub fn skid_note(event: &str) -> String {
    format!(
        "note: {event} is not precise (precise_ip 0): samples skid past the instruction that caused them; :pp/:ppp (PEBS) or IBS narrows it"
    )
}

/// The line that points from a function to its cold part, annotated apart.
pub fn cold_note(f: &Function, part: &ColdPart) -> String {
    format!(
        "note: GCC moved part of {} out of line: {} has {} samples more (self weight {}), annotated apart as perf does (SYMBOL {})",
        f.name, part.name, part.samples, part.period, part.name
    )
}

/// The functions as text: a header, the instructions (hottest marked `>`), the source lines.
pub fn write_text(functions: &[Function], out: &mut dyn Write) -> std::io::Result<()> {
    for (n, f) in functions.iter().enumerate() {
        if n > 0 {
            writeln!(out)?;
        }
        writeln!(
            out,
            "{} [{}]: {} samples of {}, self weight {}",
            f.name, f.module, f.samples, f.event, f.period
        )?;
        if f.skids {
            writeln!(out, "{}", skid_note(&f.event))?;
        }
        if let Some(part) = &f.cold_part {
            writeln!(out, "{}", cold_note(f, part))?;
        }
        let pct = |v: Option<f64>| v.map_or("      ".to_string(), |v| format!("{v:6.2}"));
        let cpi = |v: Option<f64>| v.map_or("      ".to_string(), |v| format!("{v:6.2}"));
        let mut head = String::from("    share");
        if f.has_stalls {
            head.push_str("  stall%");
        }
        if f.has_cpi {
            head.push_str("     CPI");
        }
        // The top-down column: the largest level-1 category, as `report` shows it.
        let td = |sums: &[u64]| {
            f.topdown(sums)
                .map(|b| format!("  {:>8}", topdown_cell(b)))
                .unwrap_or_default()
        };
        if let Some(whole) = f.topdown(&f.sums) {
            writeln!(out, "top-down: {}", topdown_text(whole))?;
            head.push_str("  top-down");
        }
        writeln!(out, "{head}  address           instruction")?;
        let hot = hottest(f.instructions.iter().map(|i| i.weights.period));
        for (k, i) in f.instructions.iter().enumerate() {
            let mark = if Some(k) == hot { '>' } else { ' ' };
            let mut row = format!("{mark}  {}", pct(f.share(&i.weights)));
            if f.has_stalls {
                row.push_str(&format!("  {}", pct(f.stall_share(&i.weights))));
            }
            if f.has_cpi {
                row.push_str(&format!("  {}", cpi(f.cpi(&i.weights))));
            }
            row.push_str(&td(&i.weights.sums));
            let text = i.text.as_deref().unwrap_or("");
            let line = i
                .frames
                .first()
                .and_then(|s| {
                    Some(format!(
                        "  {}:{}",
                        short(s.line.file.as_deref()?),
                        s.line.line?
                    ))
                })
                .unwrap_or_default();
            let row = format!("{row}  {:>16x}: {text:<40}{line}", i.address);
            writeln!(out, "{}", row.trim_end())?;
        }
        if !f.lines.is_empty() {
            writeln!(out, "source lines:")?;
            let hot = hottest(f.lines.iter().map(|l| l.weights.period));
            for (k, l) in f.lines.iter().enumerate() {
                let mark = if Some(k) == hot { '>' } else { ' ' };
                let mut row = format!("{mark}  {}", pct(f.share(&l.weights)));
                if f.has_stalls {
                    row.push_str(&format!("  {}", pct(f.stall_share(&l.weights))));
                }
                if f.has_cpi {
                    row.push_str(&format!("  {}", cpi(f.cpi(&l.weights))));
                }
                row.push_str(&td(&l.weights.sums));
                let inlined = if l.inlined.is_empty() {
                    String::new()
                } else {
                    format!("  (inlined: {})", l.inlined.join(" <- "))
                };
                let source = l
                    .source
                    .as_deref()
                    .map_or(String::new(), |s| format!("  | {}", s.trim()));
                writeln!(out, "{row}  {}:{}{inlined}{source}", l.file, l.line)?;
            }
        }
    }
    Ok(())
}

/// A function's whole top-down split in words: `retiring 50.0%, bad speculation 9.4%, ...`.
fn topdown_text(b: Option<Breakdown>) -> String {
    let Some(b) = b else {
        return "none (no slots in its samples)".to_string();
    };
    let parts = [
        ("retiring", b.retiring),
        ("bad speculation", b.bad_speculation),
        ("front-end bound", b.frontend_bound),
        ("back-end bound", b.backend_bound),
    ];
    parts
        .iter()
        .map(|(name, v)| format!("{name} {:.1}%", v * 100.0))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The index of the largest non-zero value.
fn hottest(values: impl Iterator<Item = u64>) -> Option<usize> {
    values
        .enumerate()
        .filter(|&(_, v)| v > 0)
        .max_by_key(|&(i, v)| (v, std::cmp::Reverse(i)))
        .map(|(i, _)| i)
}

/// A path's file name.
fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The functions as text ([`write_text`]) or JSON ([`write_json`]), `out` flushed.
pub fn write(functions: &[Function], json: bool, out: &mut dyn Write) -> std::io::Result<()> {
    match json {
        true => write_json(functions, out)?,
        false => write_text(functions, out)?,
    }
    out.flush()
}

/// The functions as pretty JSON and a newline (see [`to_json`]).
pub fn write_json(functions: &[Function], out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &to_json(functions))?;
    writeln!(out)
}

/// The functions as JSON: an array of the schema in docs/cli.md.
/// A percentage as the JSON's fraction (0 to 1, as `report --json` gives shares).
fn fraction(percent: Option<f64>) -> Option<f64> {
    percent.map(|p| p / 100.0)
}

/// `object` with a `topdown` key (report's object, `null` where the formulas give none)
/// when `f` has top-down formulas; as it is without.
fn with_topdown(f: &Function, sums: &[u64], mut object: Value) -> Value {
    if let (Some(b), Some(map)) = (f.topdown(sums), object.as_object_mut()) {
        map.insert(
            "topdown".into(),
            serde_json::to_value(b).unwrap_or(Value::Null),
        );
    }
    object
}

pub fn to_json(functions: &[Function]) -> Value {
    let functions: Vec<Value> = functions
        .iter()
        .map(|f| {
            let instructions: Vec<Value> = f
                .instructions
                .iter()
                .map(|i| {
                    let line = i.frames.first().map(|s| &s.line);
                    with_topdown(
                        f,
                        &i.weights.sums,
                        json!({
                            "address": format!("{:x}", i.address),
                            "samples": i.weights.samples,
                            "share": fraction(f.share(&i.weights)),
                            "stall_share": fraction(f.stall_share(&i.weights)),
                            "cpi": f.cpi(&i.weights),
                            "file": line.and_then(|l| l.file.clone()),
                            "line": line.and_then(|l| l.line),
                            "text": i.text,
                            "frames": i.frames.iter().map(|f| json!({
                                "function": f.function,
                                "inlined": f.inlined,
                                "file": f.line.file,
                                "line": f.line.line,
                            })).collect::<Vec<Value>>(),
                        }),
                    )
                })
                .collect();
            let lines: Vec<Value> = f
                .lines
                .iter()
                .map(|l| {
                    with_topdown(
                        f,
                        &l.weights.sums,
                        json!({
                            "file": l.file,
                            "line": l.line,
                            "samples": l.weights.samples,
                            "share": fraction(f.share(&l.weights)),
                            "stall_share": fraction(f.stall_share(&l.weights)),
                            "cpi": f.cpi(&l.weights),
                            "source": l.source,
                        }),
                    )
                })
                .collect();
            with_topdown(
                f,
                &f.sums,
                json!({
                    "function": f.name,
                    "module": f.module,
                    "samples": f.samples,
                    "cold_part": f.cold_part.as_ref().map(|p| json!({
                        "function": p.name,
                        "samples": p.samples,
                    })),
                    "instructions": instructions,
                    "lines": lines,
                }),
            )
        })
        .collect();
    Value::Array(functions)
}

#[cfg(test)]
mod tests;
