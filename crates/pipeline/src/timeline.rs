//! When each sample was taken: a recording read as [`load_opened`](crate::load_opened) reads
//! it (the profile, its roles and wall-time columns), keeping from the same walk, for every
//! sample, its time, thread, profile stack and weights
//! ([`cpiflame_profile::timed::Timed`]): `cpiflame timeline` and `render --strip` sum any time
//! range of it again.
//!
//! The walk is the collapse's own ([`crate::collapse::collapse_all`] with `timed`): every
//! weight it adds to a stack it also keeps with the sample's time, so the table's sums over
//! all time are the profile's counts exactly (a test checks it).
//!
//! `perf script` text is read once ([`read_timed`]): the reader that builds its profile
//! keeps each sample's time, thread and weight as it adds it, so the sums are the profile's
//! by construction. Folded text has no times at all, and is refused saying so.

use foldhash::HashMap;

use cpiflame_perf_data::PerfData;
use cpiflame_profile::timed::Timed;
use cpiflame_profile::FrameId;

use crate::collapse::TimedWalk;
use crate::load::{load_walked, Loaded, WalkAlso, Walked};
use crate::load_options::{LoadError, LoadOptions};

/// A recording read with the time of each sample.
#[derive(Debug)]
pub struct TimedLoad {
    /// The recording read as every other command reads it.
    pub loaded: Loaded,
    /// Every sample's time, thread, stack (an index into `loaded.profile.stacks`) and
    /// weights, in the profile's columns.
    pub timed: Timed,
    /// Every interval of the marker files the recording mapped
    /// ([`read_all`](crate::region::read_all)): empty for `perf script` text, or a recording
    /// of a program that marked no region.
    pub regions: Vec<crate::region::Marked>,
}

/// Reads `file` as [`load_opened`](crate::load_opened) does, keeping from the same walk the time of each sample.
pub fn load_timed(
    file: &PerfData,
    options: &LoadOptions,
    warnings: &mut Vec<String>,
) -> Result<TimedLoad, LoadError> {
    let also = WalkAlso {
        timed: true,
        wall_placed: true,
        ..WalkAlso::default()
    };
    let Walked { loaded, timed, .. } = load_walked(file, options, also, warnings)?;
    let TimedWalk { mut timed, stacks } = timed.unwrap_or_default();
    // The walk's columns are the attrs', then the wall-time ones; the profile's merge attrs
    // of one event (hybrid core types) into one column.
    let (names, column_of) = crate::event_columns(file);
    let n_attrs = file.attrs.len();
    let column = |c: u32| -> u32 {
        let c = c as usize;
        if c < n_attrs {
            column_of[c] as u32
        } else {
            (names.len() + (c - n_attrs)) as u32
        }
    };
    // Each walk stack's profile stack, found by its frames (the profile's stacks are sorted).
    let index: HashMap<&[FrameId], u32> = loaded
        .profile
        .stacks
        .iter()
        .enumerate()
        .map(|(i, s)| (s.frames.as_slice(), i as u32))
        .collect();
    let stack_of: Vec<u32> = stacks
        .iter()
        .map(|f| index.get(f.as_slice()).copied().unwrap_or(u32::MAX))
        .collect();
    // A stack the profile does not have had no weight in it (a sample of period 0 only);
    // one with weight would be a profile that dropped a stack: said, not hidden.
    let mut unmatched = 0;
    timed.samples.retain_mut(|s| {
        s.stack = stack_of[s.stack as usize];
        s.column = column(s.column);
        unmatched += usize::from(s.stack == u32::MAX && s.period > 0);
        s.stack != u32::MAX
    });
    if unmatched > 0 {
        warnings.push(format!(
            "{}: {unmatched} sample weights match no stack of the graph: the timeline leaves them out",
            options.file.display()
        ));
    }
    let regions = crate::region::read_all(file, &options.file);
    Ok(TimedLoad {
        loaded,
        timed,
        regions,
    })
}

/// Why a recording could not be read with the time of each sample.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Folded text: stacks and their counts, summed over the whole run.
    #[error("{}: this is folded text, which keeps each stack's total only, no time per sample: `timeline` and `render --strip` read perf.data or perf script text with its time field", file.display())]
    Folded { file: std::path::PathBuf },
    /// `perf script` text printed without its `time` field (`-F comm,tid,event,ip,sym`).
    #[error("{}: this perf script text has no time per sample: print it with the time field (perf script's default fields, or -F +time)", file.display())]
    ScriptWithoutTimes { file: std::path::PathBuf },
    /// No event of the recording samples the time (PERF_SAMPLE_TIME).
    #[error("{}: its samples carry no time (record with perf record -T, or cpiflame record)", file.display())]
    NoTimes { file: std::path::PathBuf },
}

/// Opens and reads `options.file` with the time of each sample: a perf.data file as
/// [`load_timed`] reads it, `perf script` text in one pass that keeps each sample's time
/// as printed. Folded text, and `perf script` text printed without times, are an error
/// naming the file and why.
pub fn read_timed(
    options: &LoadOptions,
    warnings: &mut Vec<String>,
) -> Result<TimedLoad, TimelineError> {
    use cpiflame_perf_data::InputKind;
    let recording = crate::Recording::open(options)?;
    match recording.kind() {
        InputKind::Folded => {
            return Err(TimelineError::Folded {
                file: options.file.clone(),
            })
        }
        InputKind::PerfScript => return read_timed_script(options, recording, warnings),
        _ => {}
    }
    let file = recording.perf_data()?;
    let time = cpiflame_perf_data::abi::sample::TIME;
    if file.attrs.iter().all(|a| a.sample_type & time == 0) {
        return Err(TimelineError::NoTimes {
            file: options.file.clone(),
        });
    }
    Ok(load_timed(&file, options, warnings)?)
}

/// `perf script` text read once into its profile and the time of each of its samples.
fn read_timed_script(
    options: &LoadOptions,
    recording: crate::Recording<'_>,
    warnings: &mut Vec<String>,
) -> Result<TimedLoad, TimelineError> {
    let (loaded, timed) =
        crate::load::load_perf_script(options, recording.bytes(), true, warnings)?;
    let no_times = || TimelineError::ScriptWithoutTimes {
        file: options.file.clone(),
    };
    // Every sample needs its time, or the table's sums would not be the graph's.
    let (mut timed, untimed) = timed.ok_or_else(no_times)?;
    if untimed > 0 || timed.samples.is_empty() {
        return Err(no_times());
    }
    // Each stack was found again after the profile was sorted; none is missing.
    timed.samples.retain(|s| s.stack != u32::MAX);
    Ok(TimedLoad {
        loaded,
        timed,
        regions: Vec::new(),
    })
}
