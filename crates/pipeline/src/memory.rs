//! The load samples of a memory recording, collapsed per stack and per place they were
//! served from: what `render --mem` draws.

use std::collections::HashMap;
use std::path::PathBuf;

use cpiflame_memaccess::{DataSource, ServedFrom};
use cpiflame_perf_data::abi::sample as st;
use cpiflame_perf_data::{PerfData, ReadError, Weight};
use cpiflame_profile::{Count, EventColumn, Profile};

use crate::collapse::named_profile;
use crate::group::Roots;
use crate::walker::Walker;
use crate::{CollapseOptions, CollapseStats, LoadError, LoadOptions};

/// Reads the perf.data file `options.file` names (plain or compressed, or `-`) into its
/// load profile; `options.roles` does not apply. Warnings are
/// pushed to `warnings` as for [`load_any`](crate::load_any).
pub fn load_loads(
    options: &LoadOptions,
    warnings: &mut Vec<String>,
) -> Result<LoadProfile, MemoryError> {
    crate::Recording::open(options)?.loads(warnings)
}

/// [`load_loads`] of a perf.data file already read.
pub(crate) fn load_profile(
    file: &PerfData,
    options: &LoadOptions,
    warnings: &mut Vec<String>,
) -> Result<LoadProfile, MemoryError> {
    let mut walker = Walker::new(file, options, warnings)?;
    let collapse = CollapseOptions {
        group_by: options.group_by(file)?,
        pid: options.pid,
        tid: options.tid,
        kernel: options.kernel,
        lines: false,
        timed: false,
    };
    let in_file = |e: MemoryError| match e {
        e @ (MemoryError::Read(_) | MemoryError::Load(_)) => e,
        e => MemoryError::InFile {
            file: options.file.clone(),
            source: Box::new(e),
        },
    };
    let (loads, stats) = collapse_loads(&mut walker, collapse).map_err(in_file)?;
    let path = options.file.display();
    if let Some(offset) = stats.cut_short_at {
        warnings.push(format!(
            "{path}: offset {offset:#x}: last record cut short (recorder killed?); ignored"
        ));
    }
    let lost = stats.lost.max(stats.lost_samples);
    if lost > 0 {
        warnings.push(format!(
            "{path}: the kernel lost {lost} samples (ring buffer full); the graph undercounts"
        ));
    }
    crate::load::naming_warnings(&walker.resolver, warnings);
    Ok(loads)
}

/// A profile of load samples: one event column per [`ServedFrom`] class, in the order of
/// [`LoadProfile::classes`] (nearest first); each sample adds to its stack's column of its
/// class one sample and its weight (the load latency) as the period.
#[derive(Clone, Debug)]
pub struct LoadProfile {
    pub profile: Profile,
    /// The class of each column.
    pub classes: Vec<ServedFrom>,
    pub stats: LoadStats,
}

impl LoadProfile {
    /// The memory graph's subtitle: what the width is and what was left out.
    pub fn subtitle(&self) -> String {
        format!(
            "width: load latency (cycles) · left out: {} store and {} other samples",
            self.stats.stores, self.stats.other
        )
    }
}

/// What was counted and what was left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Load samples drawn.
    pub loads: u64,
    /// Their summed weight.
    pub load_weight: u64,
    /// Samples whose data source says store (left out).
    pub stores: u64,
    /// Samples without a data source (events that do not sample it) or whose data source
    /// says neither load nor store (IBS ops that touch no memory, the aux event of
    /// Intel's load group): left out.
    pub other: u64,
}

/// Why a file has no load picture.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The file could not be opened or read (the error names it).
    #[error(transparent)]
    Load(#[from] LoadError),
    /// What is wrong with the named file's samples.
    #[error("{}: {source}", file.display())]
    InFile {
        file: PathBuf,
        source: Box<MemoryError>,
    },
    /// No event of the file samples data sources.
    #[error("no memory samples: no event samples data sources (PERF_SAMPLE_DATA_SRC); record with `cpiflame record --mem` or `perf mem record`")]
    NoDataSource,
    /// Data sources, but no loads among them (inside `--time`'s ranges: `outside` were not).
    #[error("no load samples ({stores} store and {other} other samples{}): nothing to draw", match outside { 0 => String::new(), n => format!("; {n} samples outside --time") })]
    NoLoads {
        stores: u64,
        other: u64,
        outside: u64,
    },
    /// Loads, but without weights (no PERF_SAMPLE_WEIGHT or WEIGHT_STRUCT, or all zero).
    #[error("{loads} load samples but no load latency in them (PERF_SAMPLE_WEIGHT / WEIGHT_STRUCT, `perf mem record` and `cpiflame record --mem` record it): nothing gives the width")]
    NoWeight { loads: u64 },
}

/// The load latency of a sample's weight, as perf reads it: the whole word of
/// PERF_SAMPLE_WEIGHT, `var1_dw` of PERF_SAMPLE_WEIGHT_STRUCT.
fn latency(weight: Weight) -> u64 {
    match weight {
        Weight::Full(w) => w,
        Weight::Struct { var1_dw, .. } => u64::from(var1_dw),
    }
}

/// Collapses the load samples of the walker's file (those whose data source says load) per
/// stack, with one column per served-from class; stores and other samples are counted and
/// left out, as are samples outside `--time`. Roots and frames are named as
/// [`collapse`](crate::collapse) names them.
pub fn collapse_loads(
    walker: &mut Walker<'_>,
    options: CollapseOptions,
) -> Result<(LoadProfile, CollapseStats), MemoryError> {
    let file = walker.file;
    if !file.attrs.iter().any(|a| a.sample_type & st::DATA_SRC != 0) {
        return Err(MemoryError::NoDataSource);
    }
    let classes: Vec<ServedFrom> = ServedFrom::ALL.to_vec();
    let column = |c: ServedFrom| classes.iter().position(|k| *k == c).unwrap_or(0);
    let mut stats = LoadStats::default();
    let mut roots = Roots::new(options.group_by, options.pid, options.tid);
    let mut raw: HashMap<Vec<u32>, Vec<Count>> = HashMap::new();
    let mut key: Vec<u32> = Vec::new();
    let walk = walker.walk(None, |sample, entries, resolver| {
        let Some(entries) = entries else { return };
        let source = match sample.data_src.map(DataSource) {
            Some(d) if d.is_load() => d,
            Some(d) if d.is_store() => {
                stats.stores += 1;
                return;
            }
            _ => {
                stats.other += 1;
                return;
            }
        };
        let weight = sample.weight.map_or(0, latency);
        stats.loads += 1;
        stats.load_weight = stats.load_weight.saturating_add(weight);
        let root = roots.of(sample, resolver);
        key.clear();
        key.push(root);
        key.extend(entries.iter().map(|e| e.frame));
        let counts = raw
            .entry(key.clone())
            .or_insert_with(|| vec![Count::default(); classes.len()]);
        counts[column(source.served_from())].add(Count {
            samples: 1,
            period: weight,
        });
    })?;
    let resolver = &mut walker.resolver;
    resolver.finish_names();
    if stats.loads == 0 {
        return Err(MemoryError::NoLoads {
            stores: stats.stores,
            other: stats.other,
            outside: walk.outside_time,
        });
    }
    if stats.load_weight == 0 {
        return Err(MemoryError::NoWeight { loads: stats.loads });
    }

    let mut profile = named_profile(
        classes
            .iter()
            .map(|c| EventColumn {
                name: format!("loads from {}", c.name()),
            })
            .collect(),
        roots.into_chains(),
        raw,
        resolver,
        options.kernel,
    );
    profile.sort();
    Ok((
        LoadProfile {
            profile,
            classes,
            stats,
        },
        walk,
    ))
}
