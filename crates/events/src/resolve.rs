//! The attr fields an event spec fixes ([`ResolvedEvent`]), so that the recorder, `stat` and
//! the markers library build their `perf_event_attr` from one value, equal to what perf
//! writes for the same spec.
//!
//! [`EventSpec::resolve`] is pure (the PMU's type number comes from the caller);
//! [`EventSpec::resolve_in`] and [`resolve_events`] read `type` and `format/` under a sysfs
//! root (normally [`SYSFS_ROOT`]). Nothing here opens an event.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::spec::{
    devices_dir, named_item_base, parse_events_with, pmu_dir, pmu_format, pmu_type, split_list,
    EventSpec, Formats, SpecError,
};
#[cfg(doc)]
use crate::spec::SYSFS_ROOT;

/// How often a sampling event fires, when its spec says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    /// `period=N`: attr.sample_period = N, attr.freq = 0. (perf then leaves
    /// PERF_SAMPLE_PERIOD out of attr.sample_type, unless told otherwise.)
    Period(u64),
    /// `freq=N`: attr.sample_freq = N, attr.freq = 1.
    Frequency(u64),
}

/// Bits of the `perf_event_attr` bitfield word (include/uapi/linux/perf_event.h) that
/// [`ResolvedEvent::attr_flags`] sets.
pub mod attr_bits {
    pub const PINNED: u64 = 1 << 2;
    pub const EXCLUSIVE: u64 = 1 << 3;
    pub const EXCLUDE_USER: u64 = 1 << 4;
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    pub const EXCLUDE_HV: u64 = 1 << 6;
    pub const EXCLUDE_IDLE: u64 = 1 << 7;
    pub const FREQ: u64 = 1 << 10;
    /// Shift of the 2-bit precise_ip field.
    pub const PRECISE_IP_SHIFT: u32 = 15;
    pub const EXCLUDE_HOST: u64 = 1 << 19;
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
}

/// `attr.sample_type` bits perf adds for the `S` modifier ([`ResolvedEvent::sample_read`]):
/// PERF_SAMPLE_READ | PERF_SAMPLE_ID (perf 6.1 writes `IP|TID|TIME|READ|ID|PERIOD` for
/// `cpu-clock:S`).
pub const SAMPLE_READ_TYPE: u64 = (1 << 4) | (1 << 6);

/// Everything an event spec fixes in the `perf_event_attr` that is opened for it, with
/// perf's values (perf 6.1 `perf evlist -v` agrees field by field). What a spec does not
/// fix (sample_type, read_format, disabled, inherit, mmap, ...) is the caller's.
///
/// Sampling (the recorder): every field. Counting (`stat`, markers): type, config words,
/// exclusions, precise_ip, pinned, exclusive and name; [`ResolvedEvent::rate`] and
/// [`ResolvedEvent::sample_read`] only matter when sampling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedEvent {
    /// attr.type: 0 hardware, 1 software, 4 raw, or the PMU's sysfs `type`.
    pub type_: u32,
    /// attr.config.
    pub config: u64,
    /// attr.config1 (also `bp_addr`).
    pub config1: u64,
    /// attr.config2 (also `bp_len`).
    pub config2: u64,
    /// attr.sample_period or attr.sample_freq with attr.freq ([`Rate`]); `None`: the
    /// caller's default (perf's is `freq` 4000).
    pub rate: Option<Rate>,
    /// attr.precise_ip, 0..=3 (`p`, `pp`, `ppp`).
    pub precise_ip: u8,
    /// attr.exclude_user.
    pub exclude_user: bool,
    /// attr.exclude_kernel.
    pub exclude_kernel: bool,
    /// attr.exclude_hv.
    pub exclude_hv: bool,
    /// attr.exclude_host (`G`).
    pub exclude_host: bool,
    /// attr.exclude_guest (perf's default; see the modifier rules in the crate's spec docs).
    pub exclude_guest: bool,
    /// attr.exclude_idle (`I`).
    pub exclude_idle: bool,
    /// `S`: add [`SAMPLE_READ_TYPE`] to attr.sample_type, so each sample carries the counts
    /// (with the attr.read_format the caller chooses).
    pub sample_read: bool,
    /// attr.pinned (`D`). perf sets it on group leaders only.
    pub pinned: bool,
    /// attr.exclusive (`e`). perf sets it on group leaders only.
    pub exclusive: bool,
    /// The name perf stores in the EVENT_DESC feature: the `name=` term, else the event as
    /// typed, modifiers included (`cpu-clock:pp`, `cpu-clock/period=1000/u`).
    pub name: String,
}

impl ResolvedEvent {
    /// The bits of the attr bitfield word this event fixes ([`attr_bits`]): pinned,
    /// exclusive, the exclusions, precise_ip, and freq when [`ResolvedEvent::rate`] is a
    /// frequency. The caller ORs in its own (disabled, inherit, mmap, ...).
    pub fn attr_flags(&self) -> u64 {
        let bit = |on: bool, b: u64| if on { b } else { 0 };
        bit(self.pinned, attr_bits::PINNED)
            | bit(self.exclusive, attr_bits::EXCLUSIVE)
            | bit(self.exclude_user, attr_bits::EXCLUDE_USER)
            | bit(self.exclude_kernel, attr_bits::EXCLUDE_KERNEL)
            | bit(self.exclude_hv, attr_bits::EXCLUDE_HV)
            | bit(self.exclude_idle, attr_bits::EXCLUDE_IDLE)
            | bit(
                matches!(self.rate, Some(Rate::Frequency(_))),
                attr_bits::FREQ,
            )
            | (u64::from(self.precise_ip & 3) << attr_bits::PRECISE_IP_SHIFT)
            | bit(self.exclude_host, attr_bits::EXCLUDE_HOST)
            | bit(self.exclude_guest, attr_bits::EXCLUDE_GUEST)
    }

    /// attr.sample_period / attr.sample_freq: the spec's rate, else `default`.
    pub fn rate_or(&self, default: Rate) -> Rate {
        self.rate.unwrap_or(default)
    }
}

/// Why a spec does not resolve. Display names the event as typed and what is wrong.
#[derive(Debug)]
pub enum ResolveError {
    /// The text does not parse.
    Spec(SpecError),
    /// No `<devices>/<pmu>` directory.
    NoPmu {
        /// The event as typed.
        spec: String,
        pmu: String,
        /// `<sysfs_root>/bus/event_source/devices`.
        devices: PathBuf,
    },
    /// The PMU's `type` file is unreadable or not a number.
    BadPmuType {
        spec: String,
        pmu: String,
        error: io::Error,
    },
    /// The PMU's `format/` directory is unreadable or does not parse.
    BadPmuFormat {
        spec: String,
        pmu: String,
        error: io::Error,
    },
}

impl ResolveError {
    /// The event text at fault (the whole list for [`ResolveError::Spec`]).
    pub fn spec(&self) -> &str {
        match self {
            ResolveError::Spec(e) => e.spec(),
            ResolveError::NoPmu { spec, .. }
            | ResolveError::BadPmuType { spec, .. }
            | ResolveError::BadPmuFormat { spec, .. } => spec,
        }
    }
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::Spec(e) => e.fmt(f),
            ResolveError::NoPmu { spec, pmu, devices } => {
                write!(f, "{spec}: no PMU '{pmu}' under {}", devices.display())
            }
            ResolveError::BadPmuType { spec, pmu, error } => {
                write!(f, "{spec}: no type number for PMU '{pmu}': {error}")
            }
            ResolveError::BadPmuFormat { spec, pmu, error } => {
                write!(f, "{spec}: unreadable term formats for PMU '{pmu}': {error}")
            }
        }
    }
}

impl std::error::Error for ResolveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ResolveError::Spec(e) => Some(e),
            ResolveError::NoPmu { .. } => None,
            ResolveError::BadPmuType { error, .. } | ResolveError::BadPmuFormat { error, .. } => {
                Some(error)
            }
        }
    }
}

impl From<SpecError> for ResolveError {
    fn from(e: SpecError) -> ResolveError {
        ResolveError::Spec(e)
    }
}

fn no_pmu(spec: &str, pmu: &str, sysfs_root: &Path) -> ResolveError {
    ResolveError::NoPmu {
        spec: spec.to_string(),
        pmu: pmu.to_string(),
        devices: devices_dir(sysfs_root),
    }
}

/// Whether `<devices>/<pmu>` is a directory (a bad name is no PMU).
fn pmu_exists(sysfs_root: &Path, pmu: &str) -> bool {
    pmu_dir(sysfs_root, pmu).is_ok_and(|d| d.is_dir())
}

impl EventSpec {
    /// The attr fields this spec fixes. `pmu_type` (the PMU's sysfs `type`, see
    /// [`pmu_type`]) is used for `pmu/terms/` specs only.
    pub fn resolve(&self, pmu_type: u32) -> ResolvedEvent {
        let attr = self.kind.resolve(pmu_type);
        let rate = match (self.period, self.freq) {
            (Some(p), _) => Some(Rate::Period(p)),
            (None, Some(f)) => Some(Rate::Frequency(f)),
            (None, None) => None,
        };
        ResolvedEvent {
            type_: attr.type_,
            config: attr.config,
            config1: attr.config1,
            config2: attr.config2,
            rate,
            precise_ip: self.precise,
            exclude_user: self.exclude_user,
            exclude_kernel: self.exclude_kernel,
            exclude_hv: self.exclude_hv,
            exclude_host: self.exclude_host,
            exclude_guest: self.exclude_guest,
            exclude_idle: self.exclude_idle,
            sample_read: self.sample_read,
            pinned: self.pinned,
            exclusive: self.exclusive,
            name: self.name.clone(),
        }
    }

    /// [`EventSpec::resolve`] reading the PMU's type under `sysfs_root` (normally
    /// [`SYSFS_ROOT`]) when the spec names a PMU.
    pub fn resolve_in(&self, sysfs_root: &Path) -> Result<ResolvedEvent, ResolveError> {
        let Some(pmu) = self.kind.pmu() else {
            return Ok(self.resolve(0));
        };
        if !pmu_exists(sysfs_root, pmu) {
            return Err(no_pmu(&self.text, pmu, sysfs_root));
        }
        let type_ = pmu_type(sysfs_root, pmu).map_err(|error| ResolveError::BadPmuType {
            spec: self.text.clone(),
            pmu: pmu.to_string(),
            error,
        })?;
        Ok(self.resolve(type_))
    }
}

/// Parses a comma-separated event list and resolves every event against the PMUs under
/// `sysfs_root` (normally [`SYSFS_ROOT`]): each named PMU must exist; its `format/` (when
/// present; else the built-in layout) gives the terms, its `type` the attr type.
pub fn resolve_events(text: &str, sysfs_root: &Path) -> Result<Vec<ResolvedEvent>, ResolveError> {
    let mut formats = Formats::new();
    for item in split_list(text)? {
        let part = item.trim();
        let Some(pmu) = named_item_base(part) else {
            continue;
        };
        if formats.contains_key(pmu) || pmu_dir(sysfs_root, pmu).is_err() {
            // Bad names are the parser's to report.
            continue;
        }
        if !pmu_exists(sysfs_root, pmu) {
            return Err(no_pmu(part, pmu, sysfs_root));
        }
        match pmu_format(sysfs_root, pmu) {
            Ok(format) => {
                formats.insert(pmu.to_string(), format);
            }
            // No format/ directory: the built-in layout.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(error) => {
                return Err(ResolveError::BadPmuFormat {
                    spec: part.to_string(),
                    pmu: pmu.to_string(),
                    error,
                })
            }
        }
    }
    parse_events_with(text, &formats)?
        .iter()
        .map(|spec| spec.resolve_in(sysfs_root))
        .collect()
}

/// [`resolve_events`] for exactly one event (`--stalls SPEC`, `--cycles SPEC`).
pub fn resolve_event(text: &str, sysfs_root: &Path) -> Result<ResolvedEvent, ResolveError> {
    let mut events = resolve_events(text, sysfs_root)?;
    if events.len() != 1 {
        return Err(ResolveError::Spec(SpecError::NotOneEvent {
            spec: text.to_string(),
            count: events.len(),
        }));
    }
    Ok(events.remove(0))
}
