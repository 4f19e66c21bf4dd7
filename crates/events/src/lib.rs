//! Events: what the stall and cycle events are on each CPU (`shared/EVENTS.md`), perf's names
//! for generic events, which event of a recording plays which role in a CPI flame graph, and
//! the event specs users type (`-e`, `--stalls`, `--cycles`).
//!
//! Pure tables and functions: nothing here opens an event. The few readers
//! ([`cpu::detect`], [`discover_pmus`], [`pmu_type`], [`pmu_format`]) read `/proc` and `/sys`
//! text and hand it to pure parsers.

pub mod cpu;
mod format;
mod names;
pub mod presets;
mod resolve;
mod roles;
mod spec;

pub use cpu::{detect, discover_pmus, parse_cpuinfo, Cpu, CpuInfoError, Pmu, Pmus, Vendor};
pub use format::{ConfigWord, FormatError, FormatField, PmuFormat};
pub use names::{default_name, hardware_name, software_name};
pub use presets::{presets, Candidate, Presets, DEFAULT_PERIOD};
pub use resolve::{
    attr_bits, resolve_event, resolve_events, Rate, ResolveError, ResolvedEvent, SAMPLE_READ_TYPE,
};
pub use roles::{detect_roles, role_of, Arch, EventRef, Role, Roles};
pub use spec::{
    devices_dir, generic_event, generic_names, parse_event, parse_event_with, parse_events,
    parse_events_with, parse_pmu_type, pmu_format, pmu_type, AttrConfig, EventKind, EventSpec,
    Formats, SpecError, SYSFS_ROOT,
};
