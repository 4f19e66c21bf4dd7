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

use crate::attr_flags;
use crate::spec::{
    bare_alias_candidate, generic_names, named_item_base, nearest, or_list, parse_list_item,
    split_groups, EventSpec, Formats, SpecError,
};
#[cfg(doc)]
use crate::sysfs::SYSFS_ROOT;
use crate::sysfs::{devices_dir, pmu_aliases, pmu_dir, pmu_format, pmu_type};
use crate::PmuFormat;

/// How often a sampling event fires, when its spec says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    /// `period=N`: attr.sample_period = N, attr.freq = 0. (perf then leaves
    /// PERF_SAMPLE_PERIOD out of attr.sample_type, unless told otherwise.)
    Period(u64),
    /// `freq=N`: attr.sample_freq = N, attr.freq = 1.
    Frequency(u64),
}

/// `attr.sample_type` bits perf adds for the `S` modifier ([`ResolvedEvent::sample_read`]):
/// PERF_SAMPLE_READ | PERF_SAMPLE_ID (perf 6.1 writes `IP|TID|TIME|READ|ID|PERIOD` for
/// `cpu-clock:S`).
pub const SAMPLE_READ_TYPE: u64 = crate::abi::sample::READ | crate::abi::sample::ID;

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
    /// attr.exclude_guest: perf's default, kept or dropped by the modifiers as the
    /// [crate doc](crate#event-specs) says.
    pub exclude_guest: bool,
    /// attr.exclude_idle (`I`).
    pub exclude_idle: bool,
    /// `S`: leader sampling: the leader's samples carry the group's counts (PERF_SAMPLE_READ
    /// with read_format GROUP; perf also sets PERF_SAMPLE_ID, [`SAMPLE_READ_TYPE`], where the
    /// recorder identifies samples by PERF_SAMPLE_IDENTIFIER instead).
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
    /// The bits of the attr bitfield word this event fixes ([`attr_flags`](crate::attr_flags)): pinned,
    /// exclusive, the exclusions, precise_ip, and freq when [`ResolvedEvent::rate`] is a
    /// frequency (a counting caller that sets no sample rate masks [`attr_flags::FREQ`] out).
    /// The caller ORs in its own bits (disabled, inherit, mmap, ...).
    pub fn attr_flags(&self) -> u64 {
        let bit = |on: bool, b: u64| if on { b } else { 0 };
        bit(self.pinned, attr_flags::PINNED)
            | bit(self.exclusive, attr_flags::EXCLUSIVE)
            | bit(self.exclude_user, attr_flags::EXCLUDE_USER)
            | bit(self.exclude_kernel, attr_flags::EXCLUDE_KERNEL)
            | bit(self.exclude_hv, attr_flags::EXCLUDE_HV)
            | bit(self.exclude_idle, attr_flags::EXCLUDE_IDLE)
            | bit(
                matches!(self.rate, Some(Rate::Frequency(_))),
                attr_flags::FREQ,
            )
            | (u64::from(self.precise_ip & 3) << attr_flags::PRECISE_IP_SHIFT)
            | bit(self.exclude_host, attr_flags::EXCLUDE_HOST)
            | bit(self.exclude_guest, attr_flags::EXCLUDE_GUEST)
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
        /// The nearest PMU directories and generic event names.
        suggestions: Vec<String>,
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
            ResolveError::NoPmu {
                spec,
                pmu,
                devices,
                suggestions,
            } => {
                write!(f, "{spec}: no PMU '{pmu}' under {}", devices.display())?;
                if !suggestions.is_empty() {
                    write!(f, " (did you mean {}?)", or_list(suggestions))?;
                }
                Ok(())
            }
            ResolveError::BadPmuType { spec, pmu, error } => {
                write!(f, "{spec}: no type number for PMU '{pmu}': {error}")
            }
            ResolveError::BadPmuFormat { spec, pmu, error } => {
                write!(
                    f,
                    "{spec}: unreadable term formats for PMU '{pmu}': {error}"
                )
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
    let devices = devices_dir(sysfs_root);
    let mut names: Vec<String> = std::fs::read_dir(&devices)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    names.extend(generic_names().map(str::to_string));
    let suggestions = nearest(pmu, names.iter().map(String::as_str));
    ResolveError::NoPmu {
        spec: spec.to_string(),
        pmu: pmu.to_string(),
        devices,
        suggestions,
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

/// A kernel group of resolved events: one `{...}` group of a spec list, or one event given
/// outside braces (which perf opens as a group of its own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventGroup {
    /// The events, the leader first; a group's modifiers are already applied to each.
    pub events: Vec<ResolvedEvent>,
    /// Written as `{...}`.
    pub braced: bool,
}

impl EventGroup {
    /// The leader samples and every sample reads the whole group's counts (`{a,b}:S`, which
    /// sets [`ResolvedEvent::sample_read`] on every member; or a lone `a:S`, which perf takes
    /// as a group of one). perf decides it by the leader's `S` alone.
    pub fn leader_sampling(&self) -> bool {
        self.events.first().is_some_and(|e| e.sample_read)
    }
}

/// Parses a comma-separated event list and resolves every event against the PMUs under
/// `sysfs_root` (normally [`SYSFS_ROOT`]), in order: a named PMU must exist; its `format/`
/// (when present; else the built-in layout of [`PmuFormat::default_for`]) gives the terms,
/// its `type` the attr type. Groups (`{a,b}:S`) are flattened into their members
/// ([`resolve_groups`] keeps them apart).
pub fn resolve_events(text: &str, sysfs_root: &Path) -> Result<Vec<ResolvedEvent>, ResolveError> {
    Ok(resolve_groups(text, sysfs_root)?
        .into_iter()
        .flat_map(|g| g.events)
        .collect())
}

/// [`resolve_events`] keeping the groups: one [`EventGroup`] per `{...}` and one per event
/// outside braces, in order.
pub fn resolve_groups(text: &str, sysfs_root: &Path) -> Result<Vec<EventGroup>, ResolveError> {
    let mut formats = Formats::new();
    let mut groups = Vec::new();
    // Item by item, so the first item's fault is the one reported.
    for item in split_groups(text)? {
        for part in item.parts() {
            let part = part.trim();
            // A bare name that is no generic event may be an alias of a core PMU's.
            if bare_alias_candidate(part).is_some() {
                for pmu in ["cpu", "cpu_core"]
                    .into_iter()
                    .map(String::from)
                    .chain(arm_pmus(sysfs_root))
                {
                    if pmu_exists(sysfs_root, &pmu) {
                        load_format(&mut formats, sysfs_root, part, &pmu)?;
                    }
                }
                continue;
            }
            // Bad PMU names are the parser's to report.
            let Some(pmu) = named_item_base(part).filter(|p| pmu_dir(sysfs_root, p).is_ok()) else {
                continue;
            };
            if !pmu_exists(sysfs_root, pmu) {
                return Err(no_pmu(part, pmu, sysfs_root));
            }
            load_format(&mut formats, sysfs_root, part, pmu)?;
        }
        let group = parse_list_item(text, item, &formats)?;
        groups.push(EventGroup {
            events: group
                .events
                .iter()
                .map(|e| e.resolve_in(sysfs_root))
                .collect::<Result<_, _>>()?,
            braced: group.braced,
        });
    }
    Ok(groups)
}

/// Reads `pmu`'s format (the built-in layout where it has no `format/`) and event aliases
/// into `formats`, once.
fn load_format(
    formats: &mut Formats,
    sysfs_root: &Path,
    part: &str,
    pmu: &str,
) -> Result<(), ResolveError> {
    if formats.contains_key(pmu) {
        return Ok(());
    }
    let bad = |error| ResolveError::BadPmuFormat {
        spec: part.to_string(),
        pmu: pmu.to_string(),
        error,
    };
    let format = match pmu_format(sysfs_root, pmu) {
        Ok(format) => format,
        Err(e) if e.kind() == io::ErrorKind::NotFound => PmuFormat::default_for(pmu),
        Err(error) => return Err(bad(error)),
    };
    let aliases = pmu_aliases(sysfs_root, pmu).map_err(bad)?;
    let format = format.with_aliases(aliases.iter().map(|(n, t)| (n.as_str(), t.as_str())));
    formats.insert(pmu.to_string(), format);
    Ok(())
}

/// The Arm PMUv3 PMUs under `sysfs_root` (`armv8_*`, `armv9_*`), sorted.
fn arm_pmus(sysfs_root: &Path) -> Vec<String> {
    let mut pmus: Vec<String> = std::fs::read_dir(devices_dir(sysfs_root))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("armv8") || n.starts_with("armv9"))
        .collect();
    pmus.sort();
    pmus
}

/// cpiflame's grouping of a list: each `{...}` group is a group, and each run of events
/// outside braces is one group too (as `cpiflame record -e a,b` and `stat -e a,b` always
/// grouped them, where perf opens each alone), except an event with `S` outside braces,
/// which stays a group of one as perf makes it (it reads only itself into its samples).
pub fn join_unbraced(groups: Vec<EventGroup>) -> Vec<EventGroup> {
    let mut joined: Vec<EventGroup> = Vec::with_capacity(groups.len());
    let loose = |g: &EventGroup| !g.braced && !g.leader_sampling();
    for g in groups {
        match joined.last_mut() {
            Some(last) if loose(last) && loose(&g) => last.events.extend(g.events),
            _ => joined.push(g),
        }
    }
    joined
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{parse_event, parse_events};

    fn root(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/roots")
            .join(name)
            .join("sys")
    }

    /// (type, config, name) of each event of `text` resolved on the saved machine `name`.
    fn on(name: &str, text: &str) -> Vec<(u32, u64, String)> {
        resolve_events(text, &root(name))
            .unwrap_or_else(|e| panic!("{name}: {text}: {e}"))
            .into_iter()
            .map(|e| (e.type_, e.config, e.name))
            .collect()
    }

    fn encodings(name: &str, text: &str) -> Vec<(u32, u64)> {
        on(name, text).into_iter().map(|e| (e.0, e.1)).collect()
    }

    /// perf's spellings of the top-down events resolve through the PMU's sysfs aliases, as
    /// perf resolves them: the saved roots' `events/slots` is `event=0x00,umask=0x4` and
    /// `events/topdown-*` `event=0x00,umask=0x80..0x87` (the kernel's
    /// arch/x86/events/intel/core.c aliases), so the configs are 0x400 and
    /// 0x8000..0x8700 on the core PMU's type (4 in these roots).
    #[test]
    fn pmu_event_aliases_as_perf_spells_them() {
        let group =
            "{slots,cycles,topdown-retiring,topdown-bad-spec,topdown-fe-bound,topdown-be-bound}:S";
        let want = [
            (4, 0x400),
            (0, 0), // cycles stays perf's generic event
            (4, 0x8000),
            (4, 0x8100),
            (4, 0x8200),
            (4, 0x8300),
        ];
        assert_eq!(encodings("icelake-x", group), want);
        assert_eq!(on("icelake-x", group)[0].2, "slots");
        let groups = resolve_groups(group, &root("icelake-x")).unwrap();
        assert!(groups[0].leader_sampling());
        // pmu/alias/, with modifiers and other terms.
        let got = on(
            "sapphire-rapids",
            "cpu/slots/,cpu/topdown-retiring/u,cpu/topdown-mem-bound,name=mem/",
        );
        assert_eq!(
            got,
            [
                (4, 0x400, "cpu/slots/".to_string()),
                (4, 0x8000, "cpu/topdown-retiring/u".to_string()),
                (4, 0x8700, "mem".to_string()),
            ]
        );
        let e = &resolve_events("cpu/topdown-retiring/u", &root("sapphire-rapids")).unwrap()[0];
        assert!(e.exclude_kernel && !e.exclude_user);
        // Hybrid: cpu_core/alias/, and a bare alias found on cpu_core (no cpu PMU there).
        assert_eq!(
            encodings("alder-lake", "cpu_core/topdown-be-bound/,slots:u"),
            [(4, 0x8300), (4, 0x400)]
        );
        // Arm: armv8_pmuv3_0/events/stall_slot is `event=0x003f`.
        assert_eq!(
            encodings("neoverse-n2-r0p3", "stall_slot,armv8_pmuv3_0/stall_slot/"),
            [(8, 0x3f), (8, 0x3f)]
        );
    }

    /// Where the alias does not exist, one line naming the event.
    #[test]
    fn missing_aliases_are_one_line_naming_the_event() {
        for (machine, text, part) in [
            ("vm-no-pmu", "{slots,cycles}:S", "unknown event 'slots'"),
            ("vm-no-pmu", "cpu/slots/", "no PMU 'cpu'"),
            (
                "icelake-x",
                "topdown-mem-bound",
                "unknown event 'topdown-mem-bound'",
            ),
            ("icelake-x", "cpu/topdown-mem-bound/", "topdown-mem-bound"),
            // A near miss suggests the alias.
            (
                "icelake-x",
                "topdown-retirin",
                "did you mean topdown-retiring?",
            ),
        ] {
            let e = resolve_events(text, &root(machine))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(part) && !e.contains('\n'),
                "{machine}: {text}: {e}"
            );
        }
    }

    /// `perf record -e SPEC -o x true; perf evlist -v -i x`, as observed from perf 6.1
    /// (Debian linux-perf 6.1) on a VM without a hardware PMU, trimmed of the fields perf
    /// sets for every event (size, read_format, disabled, inherit, mmap, comm,
    /// enable_on_exec, task, sample_id_all, mmap2, comm_exec, ksymbol, bpf_event). A later
    /// integration test compares against perf live.
    const PERF_6_1_EVLIST: &[(&str, &str)] = &[
        ("cpu-clock", "cpu-clock: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, exclude_guest: 1"),
        ("cpu-clock:u", "cpu-clock:u: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_kernel: 1, exclude_hv: 1, freq: 1, exclude_guest: 1"),
        ("cpu-clock:k", "cpu-clock:k: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_user: 1, exclude_hv: 1, freq: 1"),
        ("cpu-clock:uk", "cpu-clock:uk: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_hv: 1, freq: 1, exclude_guest: 1"),
        ("cpu-clock:ku", "cpu-clock:ku: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_hv: 1, freq: 1, exclude_guest: 1"),
        ("cpu-clock:h", "cpu-clock:h: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_user: 1, exclude_kernel: 1, freq: 1"),
        ("cpu-clock:uh", "cpu-clock:uh: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_kernel: 1, freq: 1, exclude_guest: 1"),
        ("cpu-clock:kh", "cpu-clock:kh: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_user: 1, freq: 1"),
        ("cpu-clock:H", "cpu-clock:H: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, exclude_guest: 1"),
        ("cpu-clock:G", "cpu-clock:G: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, exclude_host: 1"),
        ("cpu-clock:GH", "cpu-clock:GH: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1"),
        ("cpu-clock:HG", "cpu-clock:HG: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1"),
        ("cpu-clock:uG", "cpu-clock:uG: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_kernel: 1, exclude_hv: 1, freq: 1, exclude_host: 1"),
        ("cpu-clock:Gu", "cpu-clock:Gu: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_kernel: 1, exclude_hv: 1, freq: 1, exclude_host: 1"),
        ("cpu-clock:uH", "cpu-clock:uH: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_kernel: 1, exclude_hv: 1, freq: 1, exclude_guest: 1"),
        ("cpu-clock:Hu", "cpu-clock:Hu: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_kernel: 1, exclude_hv: 1, freq: 1, exclude_guest: 1"),
        ("cpu-clock:p", "cpu-clock:p: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, precise_ip: 1, exclude_guest: 1"),
        ("cpu-clock:pp", "cpu-clock:pp: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, precise_ip: 2, exclude_guest: 1"),
        ("cpu-clock:ppp", "cpu-clock:ppp: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, precise_ip: 3, exclude_guest: 1"),
        ("cpu-clock:upp", "cpu-clock:upp: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_kernel: 1, exclude_hv: 1, freq: 1, precise_ip: 2, exclude_guest: 1"),
        ("cpu-clock:pu", "cpu-clock:pu: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_kernel: 1, exclude_hv: 1, freq: 1, precise_ip: 1, exclude_guest: 1"),
        ("cpu-clock:pG", "cpu-clock:pG: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, precise_ip: 1, exclude_host: 1"),
        ("cpu-clock:Gp", "cpu-clock:Gp: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, precise_ip: 1, exclude_host: 1"),
        ("cpu-clock:S", "cpu-clock:S: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|READ|ID|PERIOD, freq: 1"),
        ("cpu-clock:D", "cpu-clock:D: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, pinned: 1, freq: 1"),
        ("cpu-clock:I", "cpu-clock:I: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_idle: 1, freq: 1"),
        ("cpu-clock:e", "cpu-clock:e: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclusive: 1, freq: 1"),
        ("cpu-clock:DI", "cpu-clock:DI: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, pinned: 1, exclude_idle: 1, freq: 1"),
        ("cpu-clock/period=100000/", "cpu-clock/period=100000/: type: 1, { sample_period, sample_freq }: 100000, sample_type: IP|TID|TIME, exclude_guest: 1"),
        ("cpu-clock/freq=500/", "cpu-clock/freq=500/: type: 1, { sample_period, sample_freq }: 500, sample_type: IP|TID|TIME|PERIOD, freq: 1, exclude_guest: 1"),
        ("cpu-clock/name=foo/", "foo: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, exclude_guest: 1"),
        ("cpu-clock/period=1000/u", "cpu-clock/period=1000/u: type: 1, { sample_period, sample_freq }: 1000, sample_type: IP|TID|TIME, exclude_kernel: 1, exclude_hv: 1, exclude_guest: 1"),
        ("cpu-clock/name=foo/u", "foo: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_kernel: 1, exclude_hv: 1, freq: 1, exclude_guest: 1"),
        ("cpu-clock/period=100000,name=foo/u", "foo: type: 1, { sample_period, sample_freq }: 100000, sample_type: IP|TID|TIME, exclude_kernel: 1, exclude_hv: 1, exclude_guest: 1"),
        ("cpu-clock/freq=500,name=foo/", "foo: type: 1, { sample_period, sample_freq }: 500, sample_type: IP|TID|TIME|PERIOD, freq: 1, exclude_guest: 1"),
        ("cpu-clock/freq=500/pp", "cpu-clock/freq=500/pp: type: 1, { sample_period, sample_freq }: 500, sample_type: IP|TID|TIME|PERIOD, freq: 1, precise_ip: 2, exclude_guest: 1"),
        ("cpu-clock/period=100000/S", "cpu-clock/period=100000/S: type: 1, { sample_period, sample_freq }: 100000, sample_type: IP|TID|TIME|READ|ID"),
        ("cpu-clock//", "cpu-clock//: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, exclude_guest: 1"),
        ("task-clock:pp", "task-clock:pp: type: 1, config: 0x1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, precise_ip: 2, exclude_guest: 1"),
        ("page-faults:u", "page-faults:u: type: 1, config: 0x2, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_kernel: 1, exclude_hv: 1, freq: 1, exclude_guest: 1"),
        ("faults", "faults: type: 1, config: 0x2, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, exclude_guest: 1"),
        ("faults:u", "faults:u: type: 1, config: 0x2, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_kernel: 1, exclude_hv: 1, freq: 1, exclude_guest: 1"),
        ("cs", "cs: type: 1, config: 0x3, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, exclude_guest: 1"),
        // The `software` PMU (sysfs type 1) with terms.
        ("software/config=0/", "software/config=0/: type: 1, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, freq: 1, exclude_guest: 1"),
        ("software/config=2,name=pf/u", "pf: type: 1, config: 0x2, { sample_period, sample_freq }: 4000, sample_type: IP|TID|TIME|PERIOD, exclude_kernel: 1, exclude_hv: 1, freq: 1, exclude_guest: 1"),
        ("software/config=1,period=1000/pp", "software/config=1,period=1000/pp: type: 1, config: 0x1, { sample_period, sample_freq }: 1000, sample_type: IP|TID|TIME, precise_ip: 2, exclude_guest: 1"),
    ];

    /// perf's default rate when the spec sets none (`-F 4000`).
    const PERF_DEFAULT_RATE: Rate = Rate::Frequency(4000);

    fn number(v: &str) -> u64 {
        match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
            None => v.parse().unwrap(),
        }
    }

    /// The fields of one `perf evlist -v` line that an event spec fixes.
    fn from_evlist(line: &str) -> (ResolvedEvent, Vec<String>) {
        let (name, rest) = line.split_once(": type: ").unwrap();
        let rest = format!("type: {rest}")
            .replace("{ sample_period, sample_freq }", "sample_period_or_freq")
            .replace("{ bp_addr, config1 }", "config1");
        let mut r = ResolvedEvent {
            type_: 0,
            config: 0,
            config1: 0,
            config2: 0,
            rate: None,
            precise_ip: 0,
            exclude_user: false,
            exclude_kernel: false,
            exclude_hv: false,
            exclude_host: false,
            exclude_guest: false,
            exclude_idle: false,
            sample_read: false,
            pinned: false,
            exclusive: false,
            name: name.to_string(),
        };
        let (mut n, mut freq, mut sample_type) = (None, false, Vec::new());
        for field in rest.split(", ") {
            let (k, v) = field.split_once(": ").unwrap();
            let on = v == "1";
            match k {
                "type" => r.type_ = number(v) as u32,
                "config" => r.config = number(v),
                "config1" => r.config1 = number(v),
                "config2" => r.config2 = number(v),
                "sample_period_or_freq" => n = Some(number(v)),
                "freq" => freq = on,
                "sample_type" => sample_type = v.split('|').map(str::to_string).collect(),
                "precise_ip" => r.precise_ip = number(v) as u8,
                "exclude_user" => r.exclude_user = on,
                "exclude_kernel" => r.exclude_kernel = on,
                "exclude_hv" => r.exclude_hv = on,
                "exclude_host" => r.exclude_host = on,
                "exclude_guest" => r.exclude_guest = on,
                "exclude_idle" => r.exclude_idle = on,
                "pinned" => r.pinned = on,
                "exclusive" => r.exclusive = on,
                other => panic!("unexpected field {other} in {line}"),
            }
        }
        r.rate = n.map(|n| {
            if freq {
                Rate::Frequency(n)
            } else {
                Rate::Period(n)
            }
        });
        r.sample_read = sample_type.iter().any(|b| b == "READ");
        (r, sample_type)
    }

    #[test]
    fn resolved_fields_equal_perf_6_1() {
        for &(spec, line) in PERF_6_1_EVLIST {
            let (want, _) = from_evlist(line);
            let parsed = parse_event(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            let mut got = parsed.resolve(1);
            // None is "the caller's default"; perf's is -F 4000.
            got.rate = Some(got.rate_or(PERF_DEFAULT_RATE));
            assert_eq!(got, want, "{spec}");
        }
    }

    #[test]
    fn sample_read_adds_read_and_id_to_sample_type() {
        let bits = |names: &[String]| -> u64 {
            names
                .iter()
                .map(|n| match n.as_str() {
                    "IP" => 1 << 0,
                    "TID" => 1 << 1,
                    "TIME" => 1 << 2,
                    "READ" => 1 << 4,
                    "ID" => 1 << 6,
                    "PERIOD" => 1 << 8,
                    other => panic!("sample bit {other}"),
                })
                .sum()
        };
        let line = |spec: &str| PERF_6_1_EVLIST.iter().find(|(s, _)| *s == spec).unwrap().1;
        let (_, plain) = from_evlist(line("cpu-clock"));
        let (_, s) = from_evlist(line("cpu-clock:S"));
        assert_eq!(bits(&s) & !bits(&plain), SAMPLE_READ_TYPE);
    }

    #[test]
    fn modifiers_after_a_colon_equal_modifiers_after_the_slash() {
        // perf 6.1 refuses `/:u` ("parser error"); cpiflame accepts it as `/u`.
        let a = parse_event("cpu-clock/period=100000,name=foo/:u").unwrap();
        let b = parse_event("cpu-clock/period=100000,name=foo/u").unwrap();
        assert_eq!(a.resolve(1), b.resolve(1));
        let r = a.resolve(1);
        assert_eq!(r.name, "foo");
        assert_eq!(r.rate, Some(Rate::Period(100_000)));
        assert!(r.exclude_kernel && r.exclude_hv && r.exclude_guest && !r.exclude_user);
        let c = parse_event("cycles/period=100000,name=foo/")
            .unwrap()
            .resolve(7);
        assert_eq!((c.type_, c.config), (0, 0));
        assert_eq!(
            (c.name.as_str(), c.rate),
            ("foo", Some(Rate::Period(100_000)))
        );
        let raw = parse_event("r1a2/name=x,freq=99/:uk").unwrap().resolve(7);
        assert_eq!((raw.type_, raw.config, raw.name.as_str()), (4, 0x1a2, "x"));
        assert_eq!(raw.rate, Some(Rate::Frequency(99)));
        assert!(!raw.exclude_user && !raw.exclude_kernel && raw.exclude_hv);
        let pmu = parse_event("cpu/event=0x3c,freq=500/pp")
            .unwrap()
            .resolve(4);
        assert_eq!((pmu.type_, pmu.config, pmu.precise_ip), (4, 0x3c, 2));
        assert_eq!(pmu.rate, Some(Rate::Frequency(500)));
        assert_eq!(pmu.name, "cpu/event=0x3c,freq=500/pp");
    }

    #[test]
    fn attr_flags_are_the_uapi_bits() {
        let r = parse_event("cpu-clock/freq=500/upp").unwrap().resolve(1);
        assert_eq!(
            r.attr_flags(),
            (1 << 5) | (1 << 6) | (1 << 10) | (2 << 15) | (1 << 20)
        );
        let r = parse_event("cycles:kGIDe").unwrap().resolve(1);
        assert_eq!(
            r.attr_flags(),
            (1 << 2) | (1 << 3) | (1 << 4) | (1 << 6) | (1 << 7) | (1 << 19)
        );
        let r = parse_event("cycles/period=7/").unwrap().resolve(1);
        assert_eq!(r.attr_flags(), 1 << 20);
        assert_eq!(r.rate_or(Rate::Frequency(1)), Rate::Period(7));
    }

    /// Every message from a refused spec: no Rust debug formatting.
    fn message(e: &dyn fmt::Display) -> String {
        let m = e.to_string();
        for debug in ["Some(", "None", "Os {", "kind:", "\\\""] {
            assert!(!m.contains(debug), "{m}");
        }
        m
    }

    fn refused(spec: &str) -> String {
        match parse_events(spec) {
            Ok(v) => panic!("{spec} parsed: {v:?}"),
            Err(e) => message(&e),
        }
    }

    #[test]
    fn refused_modifiers_are_named_with_the_reason() {
        for (spec, modifier, why) in [
            ("cpu-clock:P", 'P', "highest precise level"),
            ("cycles:uW", 'W', "weak groups"),
            ("cycles:b", 'b', "BPF counters"),
            ("cpu/event=0x3c/R", 'R', "retirement latency"),
            ("cycles:X", 'X', "regroup"),
        ] {
            let m = refused(spec);
            assert!(
                m.starts_with(&format!(
                    "modifier '{modifier}' in '{spec}' is not supported: "
                )),
                "{m}"
            );
            assert!(m.contains(why), "{m}");
        }
        assert_eq!(
            refused("cpu-clock:uu"),
            "modifier 'u' given twice in 'cpu-clock:uu'"
        );
        assert_eq!(
            refused("cycles,cpu-clock:SpS"),
            "modifier 'S' given twice in 'cpu-clock:SpS' in 'cycles,cpu-clock:SpS'"
        );
        assert!(refused("cpu-clock:pppp").contains("precise level above 3"));
        assert!(refused("cpu-clock:z").contains("unknown modifier 'z'"));
        assert!(refused("cpu-clock:").contains("nothing after ':'"));
    }

    #[test]
    fn terms_other_than_period_freq_name_are_refused_on_generic_events() {
        assert_eq!(
            refused("cpu-clock/config=5/"),
            "term 'config' is not supported on 'cpu-clock' in 'cpu-clock/config=5/' (generic and raw events take period, freq and name)"
        );
        let m = refused("cpu-clock/call-graph=dwarf/");
        assert!(
            m.starts_with("term 'call-graph' is not supported on 'cpu-clock'"),
            "{m}"
        );
        let m = refused("cycles/perod=1000/u");
        assert!(
            m.contains("term 'perod'") && m.contains("did you mean period?"),
            "{m}"
        );
        assert!(refused("r1a2/umask=1/").contains("term 'umask'"));
        assert!(refused("cpu-clock/period=0/").contains("must be at least 1"));
        assert!(refused("cpu-clock/period=1,freq=2/").contains("exclude each other"));
        assert!(refused("cpu-clock/freq/").contains("needs a value"));
        assert!(refused("cpu-clock/name=a,name=b/").contains("given twice"));
        assert!(refused("cpu-clock/freq=5").contains("unterminated"));
        assert!(refused("{cpu-clock,{cycles}}").contains("groups do not nest"));
    }

    /// A sysfs tree with a `cpu` PMU (type 4, AMD's layout) and a `software` PMU without
    /// `format/`.
    fn fixture(tag: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!(
            "cpiflame-events-resolve-{tag}-{}",
            std::process::id()
        ));
        let devices = devices_dir(&root);
        let cpu = devices.join("cpu");
        std::fs::create_dir_all(cpu.join("format")).unwrap();
        std::fs::write(cpu.join("type"), "4\n").unwrap();
        for (term, text) in [("event", "config:0-7,32-35\n"), ("umask", "config:8-15\n")] {
            std::fs::write(cpu.join("format").join(term), text).unwrap();
        }
        std::fs::create_dir_all(devices.join("software")).unwrap();
        std::fs::write(devices.join("software/type"), "1\n").unwrap();
        root
    }

    #[test]
    fn resolving_against_sysfs() {
        let root = fixture("ok");
        let events = resolve_events(
            "cpu/event=0x1d6,umask=0x1b,name=x/upp,software/config=2/k,cpu-clock:S",
            &root,
        )
        .unwrap();
        assert_eq!(events.len(), 3);
        assert_eq!((events[0].type_, events[0].config), (4, 0x1_0000_1bd6));
        assert_eq!((events[0].name.as_str(), events[0].precise_ip), ("x", 2));
        assert_eq!((events[1].type_, events[1].config), (1, 2));
        assert!(events[1].exclude_user && !events[1].exclude_kernel);
        assert!(events[2].sample_read && !events[2].exclude_guest);
        let one = resolve_event("software/config=1,period=1000/pp", &root).unwrap();
        assert_eq!((one.type_, one.config, one.precise_ip), (1, 1, 2));
        assert!(matches!(
            resolve_event("cycles,instructions", &root),
            Err(ResolveError::Spec(SpecError::NotOneEvent { count: 2, .. }))
        ));
        let spec = parse_event("cpu/event=0x3c/").unwrap();
        assert_eq!(spec.resolve_in(&root).unwrap().type_, 4);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn resolve_errors_name_the_spec_and_the_fault() {
        let root = fixture("err");
        let devices = devices_dir(&root);
        let e = resolve_events("cycles,cpu_atom/cycles/", &root).unwrap_err();
        assert_eq!(
            message(&e),
            format!(
                "cpu_atom/cycles/: no PMU 'cpu_atom' under {}",
                devices.display()
            )
        );
        assert_eq!(e.spec(), "cpu_atom/cycles/");
        let e = resolve_event("cpu-clok/freq=500/", &root).unwrap_err();
        assert_eq!(
            message(&e),
            format!(
                "cpu-clok/freq=500/: no PMU 'cpu-clok' under {} (did you mean cpu-clock?)",
                devices.display()
            )
        );
        let e = resolve_event("cpv/event=1/", &root).unwrap_err();
        assert!(message(&e).ends_with("(did you mean cpu?)"), "{e}");
        let e = parse_event("cpu_atom/event=0x3c/u")
            .unwrap()
            .resolve_in(&root)
            .unwrap_err();
        assert_eq!(
            message(&e),
            format!(
                "cpu_atom/event=0x3c/u: no PMU 'cpu_atom' under {}",
                devices.display()
            )
        );
        // In order: the first item's fault first.
        let e = resolve_events("cycles:x,cpu_atom/event=1/", &root).unwrap_err();
        assert!(message(&e).contains("unknown modifier 'x'"), "{e}");
        let e = resolve_events("cpu/umsk=1/", &root).unwrap_err();
        assert!(message(&e).contains("unknown term 'umsk'"), "{e}");
        assert!(matches!(e, ResolveError::Spec(_)));
        std::fs::write(devices.join("software/type"), "one\n").unwrap();
        let e = resolve_event("software/config=1/", &root).unwrap_err();
        let m = message(&e);
        assert!(
            m.starts_with("software/config=1/: no type number for PMU 'software': ")
                && m.ends_with("not a PMU type number: 'one'"),
            "{m}"
        );
        std::fs::remove_file(devices.join("software/type")).unwrap();
        let e = resolve_event("software/config=1/", &root).unwrap_err();
        let m = message(&e);
        assert!(m.contains("No such file or directory"), "{m}");
        std::fs::write(devices.join("cpu/format/umask"), "nonsense").unwrap();
        let e = resolve_event("cpu/event=1/", &root).unwrap_err();
        let m = message(&e);
        assert!(
            m.starts_with("cpu/event=1/: unreadable term formats for PMU 'cpu': "),
            "{m}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn runs_of_unbraced_events_join_into_one_group() {
        let root = Path::new("/nonexistent");
        let sizes = |text: &str| -> Vec<(usize, bool)> {
            join_unbraced(resolve_groups(text, root).unwrap())
                .iter()
                .map(|g| (g.events.len(), g.leader_sampling()))
                .collect()
        };
        assert_eq!(sizes("cpu-clock,task-clock"), [(2, false)]);
        assert_eq!(
            sizes("cpu-clock,{task-clock,page-faults}:S,faults,cs"),
            [(1, false), (2, true), (2, false)]
        );
        assert_eq!(
            sizes("cpu-clock,task-clock:S,cs"),
            [(1, false), (1, true), (1, false)]
        );
        assert_eq!(sizes("{cpu-clock},{task-clock}"), [(1, false), (1, false)]);
    }
}
