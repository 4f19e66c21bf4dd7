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
//! Modules: `model` (what an annotation is), `walk` (the sites kept from the loader's walk),
//! `disasm` (instruction text), `output` (text and JSON), `source` (finding source files).
//!
//! Disassembly: x86-64 (`iced-x86`, AT&T syntax) and AArch64 (`yaxpeax-arm`, its text with
//! PC-relative targets made absolute, as objdump prints them); a recording of another
//! architecture gets its sampled addresses and source lines without instruction text. Kernel
//! functions get their sampled addresses only: the kernel's code is not in the recording.
//!
//! Never prints or exits: the binary hands [`write()`] its writer; warnings are returned. Never
//! weighs a sample differently from `fold`: the columns, roles and weights are the loader's.

mod disasm;
mod model;
mod output;
mod source;
mod walk;

use std::collections::HashMap;
use std::path::PathBuf;

use cpiflame_pipeline::{
    event_columns, load_walked, ratio_cycles_events, LoadError, LoadOptions, Recording, WalkAlso,
    Walked,
};
use cpiflame_unwind::{CodeAddress, CodeFile, Resolver};

use disasm::{disassemble, disassemble_aarch64, Isa};
use model::{add_sums, is_cold_part, COLD};
use walk::{Columns, Site, SiteWalk};

pub use model::{ColdPart, Function, Instruction, Line, Weights};
pub use output::{cold_note, skid_note, to_json, write, write_json, write_text};
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
    let mut site_walk = SiteWalk::new(load.kernel);
    let also = WalkAlso {
        visit: Some(&mut site_walk),
        ..WalkAlso::default()
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

#[cfg(test)]
mod tests;
