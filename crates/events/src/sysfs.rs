//! Reading PMUs from sysfs (`<root>/bus/event_source/devices/<pmu>/`): the list of PMUs with
//! their events ([`discover_pmus`]), a PMU's `type` number and its `format/` term layout, for
//! CPU detection, the event-spec parser and the resolver.
//!
//! Thin readers over pure parsers ([`parse_pmu_type`], [`PmuFormat::parse`]); the root is
//! the caller's, so tests run on fixture trees. This module must never parse event specs nor
//! follow a PMU name out of the devices directory (names are checked first).

use std::io;
use std::path::{Path, PathBuf};

use crate::format::{FormatError, PmuFormat};
use crate::pmu::{parse_pmu_type, Pmus};

/// Where sysfs is normally mounted.
pub const SYSFS_ROOT: &str = "/sys";

/// PMU directory names: letters, digits, `_`, `-`, `.`.
pub(crate) fn valid_pmu_name(pmu: &str) -> bool {
    !pmu.is_empty()
        && pmu != "."
        && pmu != ".."
        && pmu
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

/// `<sysfs_root>/bus/event_source/devices`.
pub fn devices_dir(sysfs_root: &Path) -> PathBuf {
    sysfs_root.join("bus").join("event_source").join("devices")
}

/// `<sysfs_root>/bus/event_source/devices/<pmu>`, refusing names that are not plain
/// directory names.
pub(crate) fn pmu_dir(sysfs_root: &Path, pmu: &str) -> io::Result<PathBuf> {
    if !valid_pmu_name(pmu) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad PMU name '{pmu}'"),
        ));
    }
    Ok(devices_dir(sysfs_root).join(pmu))
}

/// The attr.type of `pmu`: `<sysfs_root>/bus/event_source/devices/<pmu>/type`.
pub fn pmu_type(sysfs_root: &Path, pmu: &str) -> io::Result<u32> {
    let path = pmu_dir(sysfs_root, pmu)?.join("type");
    let text = std::fs::read_to_string(&path)?;
    parse_pmu_type(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: not a PMU type number: '{}'",
                path.display(),
                text.trim()
            ),
        )
    })
}

/// The term layout of `pmu`: every file of `<sysfs_root>/bus/event_source/devices/<pmu>/format/`.
pub fn pmu_format(sysfs_root: &Path, pmu: &str) -> io::Result<PmuFormat> {
    let dir = pmu_dir(sysfs_root, pmu)?.join("format");
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        let Ok(term) = entry.file_name().into_string() else {
            continue;
        };
        entries.push((term, std::fs::read_to_string(entry.path())?));
    }
    PmuFormat::parse(entries.iter().map(|(t, x)| (t.as_str(), x.as_str()))).map_err(
        |e: FormatError| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", dir.display()),
            )
        },
    )
}

/// The event aliases of `pmu`: every file of `<sysfs_root>/bus/event_source/devices/<pmu>/events/`
/// except perf's companions (`NAME.scale`, `.unit`, `.per-pkg`, `.snapshot`), as (name, terms)
/// pairs (`slots`, `event=0x00,umask=0x4`). None where there is no `events/` directory.
pub fn pmu_aliases(sysfs_root: &Path, pmu: &str) -> io::Result<Vec<(String, String)>> {
    let dir = pmu_dir(sysfs_root, pmu)?.join("events");
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut aliases = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if [".scale", ".unit", ".per-pkg", ".snapshot"]
            .iter()
            .any(|s| name.ends_with(s))
        {
            continue;
        }
        aliases.push((name, std::fs::read_to_string(entry.path())?));
    }
    Ok(aliases)
}

/// Lists `<sysfs_root>/bus/event_source/devices/*` with their `type` numbers.
pub fn discover_pmus(sysfs_root: &Path) -> io::Result<Pmus> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(devices_dir(sysfs_root))? {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let type_text = std::fs::read_to_string(entry.path().join("type")).ok();
        let mut events: Vec<String> = std::fs::read_dir(entry.path().join("events"))
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            // `.scale` and `.unit` files describe an alias; they are not events.
            .filter(|e| !e.contains('.'))
            .collect();
        events.sort();
        entries.push((name, type_text, events));
    }
    let mut pmus = Pmus::from_entries(entries.iter().map(|(n, t, _)| (n.as_str(), t.as_deref())));
    for p in &mut pmus.pmus {
        if let Some((_, _, events)) = entries.iter().find(|(n, _, _)| *n == p.name) {
            p.events = events.clone();
        }
    }
    Ok(pmus)
}
