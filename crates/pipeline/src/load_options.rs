//! How to read a recording (`LoadOptions`: the choices every reading command makes, the
//! resolver and `--time` ranges they give) and why reading fails (`LoadError`).

use std::fmt;
use std::path::{Path, PathBuf};

use cpiflame_events::Roles;
use cpiflame_perf_data::{Meta, PerfData, ReadError};
use cpiflame_profile::{FoldedError, PerfScriptError, Profile};
use cpiflame_unwind::{Kallsyms, KallsymsError, Options as ResolveOptions, Resolver};

use crate::group::{GroupBy, GroupByError};
use crate::time::TimeRanges;

/// How to read a recording.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    pub file: PathBuf,
    /// The events named by `--stalls`, `--cycles` and `--instructions`, overriding what the
    /// recording notes and detection; resolved to columns when the recording is read.
    pub roles: Roles<String>,
    /// How the resolver finds binaries and kernel symbols: `--symfs`, `--kallsyms` (checked
    /// to be readable when the resolver is built) and what the environment says
    /// ([`Environment::resolve_options`](crate::options::Environment::resolve_options)).
    pub resolve: ResolveOptions,
    /// Keep kernel frames.
    pub kernel: bool,
    /// The root frames (`--group-by`); `None`: the recording's default (see
    /// [`GroupBy::default_for`]).
    pub group_by: Option<GroupBy>,
    /// Root frame `comm-PID`.
    pub pid: bool,
    /// Root frame `comm-PID/TID`.
    pub tid: bool,
    /// Leave off-CPU time out (`--on-cpu-only`): no wall-time columns even when the
    /// recording has context-switch data, the graph of on-CPU samples alone.
    pub on_cpu_only: bool,
    /// Keep the source line of every frame ([`Loaded::lines`](crate::Loaded::lines)): the graph's hottest lines,
    /// `report --lines`. Costs a line lookup per distinct code address in the stacks.
    pub lines: bool,
    /// `--time`: only the samples in these ranges (perf's syntax, see [`crate::time`]),
    /// resolved against each recording read ([`LoadOptions::time_ranges`]).
    pub time: Option<String>,
    /// `--region`: only the samples inside this region's intervals, per thread, from the
    /// marker files the recording mapped ([`crate::region`]).
    pub region: Option<String>,
    /// `--topdown-cpu`: the CPU the top-down events were counted on, as perf.data's CPUID
    /// (`GenuineIntel,6,143,8`, `AuthenticAMD,25,17,1`, an Arm MIDR `0x...`), overriding
    /// the recording's; what text input needs where the formulas depend on the model.
    pub topdown_cpu: Option<String>,
}

impl LoadOptions {
    /// Reading `file` with kernel frames, roles detected, binaries looked up under `symfs`
    /// first and kernel frames named from `kallsyms`, caches and threads as `env` says.
    pub fn new(
        file: PathBuf,
        symfs: Option<PathBuf>,
        kallsyms: Option<PathBuf>,
        env: &crate::options::Environment,
    ) -> LoadOptions {
        LoadOptions {
            file,
            resolve: ResolveOptions {
                symfs,
                kallsyms,
                ..env.resolve_options()
            },
            kernel: true,
            ..LoadOptions::default()
        }
    }

    /// The resolver for a recording with header `meta`: the one place the commands' resolver
    /// is built ([`Walker::new`] calls it). A `--kallsyms` file that cannot be read is an
    /// error naming it (the resolver would quietly leave kernel frames unnamed, but a file
    /// the user named must exist).
    pub(crate) fn resolver(&self, meta: &Meta) -> Result<Resolver, LoadError> {
        self.check_kallsyms()?;
        self.check_jit_dirs()?;
        Ok(Resolver::new(meta, self.resolve_options()))
    }

    /// The resolver's options for this recording: [`LoadOptions::resolve`], with the folders
    /// JIT dumps and perf maps are looked for in ([`jit_dirs_of`]) after `--jit-dir`'s.
    pub fn resolve_options(&self) -> ResolveOptions {
        let mut resolve = self.resolve.clone();
        for dir in jit_dirs_of(&self.file) {
            if !resolve.jit_dirs.contains(&dir) {
                resolve.jit_dirs.push(dir);
            }
        }
        resolve
    }

    /// These options with `--jit-dir`'s folders (looked in first, in this order).
    pub fn with_jit_dirs(mut self, dirs: Vec<PathBuf>) -> LoadOptions {
        self.resolve.jit_dirs = dirs;
        self
    }

    /// An error naming a `--jit-dir` that is not a folder.
    pub fn check_jit_dirs(&self) -> Result<(), LoadError> {
        match self.resolve.jit_dirs.iter().find(|d| !d.is_dir()) {
            Some(dir) => Err(LoadError::JitDir(dir.clone())),
            None => Ok(()),
        }
    }

    /// These options with `--time`'s text.
    pub fn with_time(self, time: Option<String>) -> LoadOptions {
        LoadOptions { time, ..self }
    }

    /// These options with `--region`'s name.
    pub fn with_region(self, region: Option<String>) -> LoadOptions {
        LoadOptions { region, ..self }
    }

    /// The `--time` ranges for `file` (percentages of its first to last sample), with
    /// `--region`'s intervals (read from the marker files `file` mapped); `None` without
    /// either.
    pub fn time_ranges(&self, file: &PerfData) -> Result<Option<TimeRanges>, LoadError> {
        let ranges = match &self.time {
            Some(text) => Some(crate::time::ranges_of(text, file)?),
            None => None,
        };
        let Some(name) = &self.region else {
            return Ok(ranges);
        };
        let spans = crate::region::RegionSpans::read(file, &self.file, name)
            .map_err(|e| LoadError::Region(Box::new(e)))?;
        Ok(Some(
            ranges
                .unwrap_or_else(|| TimeRanges::from_ranges(Vec::new()))
                .with_region(spans),
        ))
    }

    /// `--region` on text input (`kind`): an error, as such text has no marker files.
    pub(crate) fn check_text_region(&self, kind: &'static str) -> Result<(), LoadError> {
        match self.region {
            Some(_) => Err(LoadError::Region(Box::new(
                crate::region::RegionError::NeedsPerfData {
                    file: self.file.clone(),
                    kind,
                },
            ))),
            None => Ok(()),
        }
    }

    /// The error for a recording with none of its `samples` in `times`.
    pub fn nothing_in_time(&self, file: &PerfData, times: &TimeRanges, samples: u64) -> LoadError {
        if let Some(region) = times.region() {
            return LoadError::Region(Box::new(crate::region::RegionError::NothingInside {
                file: self.file.clone(),
                name: region.name().to_string(),
                intervals: region.intervals(),
                samples,
            }));
        }
        let (first, last) = crate::time::sample_span(file).unwrap_or_default();
        crate::time::TimeError::nothing_in(
            &self.file,
            self.time.as_deref(),
            times,
            samples,
            (first, last),
        )
        .into()
    }

    /// The root frames to read `file` with: `--group-by`, else the recording's default (an
    /// error naming the file when the flags ask for what it cannot give).
    pub fn group_by(&self, file: &PerfData) -> Result<GroupBy, LoadError> {
        GroupBy::choose(self.group_by, self.pid, self.tid, file).map_err(|source| {
            LoadError::GroupBy {
                file: self.file.clone(),
                source,
            }
        })
    }

    /// Text input keeps its root frames: an error for a `--group-by` that would change them.
    pub(crate) fn check_text_group_by(&self) -> Result<(), LoadError> {
        match self.group_by {
            Some(g) if g != GroupBy::Comm => Err(LoadError::GroupBy {
                file: self.file.clone(),
                source: GroupByError::Text(g),
            }),
            _ => Ok(()),
        }
    }

    /// An error naming the `--kallsyms` file when it cannot be read or names no kernel
    /// function (garbage, or a copy with hidden addresses).
    pub fn check_kallsyms(&self) -> Result<(), LoadError> {
        if let Some(path) = &self.resolve.kallsyms {
            Kallsyms::check(path).map_err(|source| LoadError::Kallsyms {
                path: path.clone(),
                source,
            })?;
        }
        Ok(())
    }
}

/// Where the JIT dumps and perf maps of the recording `file` are looked for besides their
/// recorded paths (after `--jit-dir`'s folders): `FILE.jit/`, where `cpiflame record` keeps
/// them; for a `--switch-output` file named `X.TIMESTAMP` (perf's 16 digits), also `X.jit/`,
/// the folder its recording kept them in; then the recording's own folder (where node left
/// its dump when perf recorded it). None for standard input.
pub fn jit_dirs_of(file: &Path) -> Vec<PathBuf> {
    if file.as_os_str() == "-" {
        return Vec::new();
    }
    let beside = |path: &Path| {
        let mut name = path.as_os_str().to_owned();
        name.push(".jit");
        PathBuf::from(name)
    };
    let mut dirs = vec![beside(file)];
    let piece_of = file
        .extension()
        .and_then(|e| e.to_str())
        .filter(|e| e.len() == 16 && e.bytes().all(|b| b.is_ascii_digit()));
    if piece_of.is_some() {
        dirs.push(beside(&file.with_extension("")));
    }
    dirs.push(match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    });
    dirs
}

/// Why a recording could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A `--jit-dir` that is not a folder.
    #[error("--jit-dir {}: not a folder", .0.display())]
    JitDir(PathBuf),
    /// The `--kallsyms` file cannot be read or names no kernel function.
    #[error("--kallsyms {}: {source}", path.display())]
    Kallsyms {
        path: PathBuf,
        source: KallsymsError,
    },
    /// A perf.data file that does not parse (the error names the file and offset).
    #[error(transparent)]
    PerfData(#[from] ReadError),
    /// A folded file that does not parse (the error names the file and line).
    #[error(transparent)]
    Folded(#[from] FoldedError),
    /// `perf script` text that does not parse (the error names the file and line).
    #[error(transparent)]
    PerfScript(#[from] PerfScriptError),
    /// A flag named an event the recording does not have.
    #[error("{flag} {name}: {} has no such event (events: {events})", file.display())]
    NoSuchEvent {
        flag: &'static str,
        name: String,
        file: PathBuf,
        events: EventList,
    },
    /// Nothing was sampled.
    #[error("{}: contains no samples", file.display())]
    NoSamples { file: PathBuf },
    /// `--time` cannot be applied (bad syntax, no timestamps, no sample in the ranges).
    #[error(transparent)]
    Time(Box<crate::time::TimeError>),
    /// `--region` cannot be applied (no marker file, no such region, text input).
    #[error(transparent)]
    Region(Box<crate::region::RegionError>),
    /// Top-down events whose formulas need a CPU that is neither in the recording nor given
    /// (or a `--topdown-cpu` that names none).
    #[error("{}: {reason}", file.display())]
    Topdown { file: PathBuf, reason: String },
    /// Text input (folded stacks, `perf script` text) to a command that reads the records
    /// of a perf.data file (`script`, `c2c`).
    #[error("{}: this is {kind} text; this command reads perf.data (a recording by cpiflame record or perf record)", file.display())]
    NeedsPerfData { file: PathBuf, kind: &'static str },
    /// `--group-by` (or `--pid`/`--tid`) asked for root frames the input cannot give.
    #[error("{}: {source}", file.display())]
    GroupBy { file: PathBuf, source: GroupByError },
}

impl From<crate::time::TimeError> for LoadError {
    fn from(e: crate::time::TimeError) -> LoadError {
        LoadError::Time(Box::new(e))
    }
}

/// The event names of a profile, for messages: `cpu-clock, task-clock`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventList(pub Vec<String>);

impl EventList {
    pub fn of(profile: &Profile) -> EventList {
        EventList(profile.events.iter().map(|e| e.name.clone()).collect())
    }
}

impl fmt::Display for EventList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(", "))
    }
}
