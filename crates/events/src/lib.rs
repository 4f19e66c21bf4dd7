//! Events: what the stall and cycle events are on each CPU (the vendors' tables), perf's names
//! for generic events, which event of a recording plays which role in a CPI flame graph, and
//! the event specs users type (`-e`, `--stalls`, `--cycles`), resolved to the
//! `perf_event_attr` fields they fix ([`ResolvedEvent`]) for the recorder, `stat` and the
//! markers library to open.
//!
//! Pure tables and functions: nothing here opens an event, and nothing here needs a PMU. The
//! few readers ([`cpu::detect`], [`discover_pmus`], [`pmu_type`], [`pmu_format`],
//! [`resolve_events`], [`EventSpec::resolve_in`]) read `/proc` and `/sys` text and hand it to
//! pure parsers.
//!
//! # Event specs
//!
//! As typed after `perf record -e`, `cpiflame record -e`, `--stalls` and `--cycles`: a
//! comma-separated list of
//!
//! - generic names: `cycles`, `instructions`, `cpu-clock`, `page-faults` (alias `faults`),
//!   ... with perf's aliases;
//! - raw x86/ARM encodings `rNNNN` (hex, `r1a2`, `r40004a3`; also `r0x1a2`), attr.type 4;
//! - PMU terms `pmu/term=value,term,.../`
//!   (`cpu/event=0xa2,umask=0x1,name=resource_stalls_any,period=2000003/`), a term without a
//!   value meaning 1 (`edge`), values decimal or `0x` hex. Terms are `config`, `config1`,
//!   `config2`, `name`, `period`, `freq` and whatever the PMU's `format/` describes (`event`,
//!   `umask`, `cmask`, `edge`, `inv`, `any`, ...), and the names of the PMU's event aliases
//!   (its `events/` files: `cpu/slots/`, `cpu_core/topdown-be-bound,name=x/`), which stand
//!   for the alias's terms as perf expands them; a quoted value may hold commas
//!   (`name='a,cmask=0x6'`);
//! - event aliases by their bare name, as perf resolves them when the name is no generic
//!   event: `slots`, `topdown-retiring`, `stall_slot` from the core PMU's `events/` (`cpu`,
//!   else `cpu_core`, else an Arm PMUv3 PMU), with the modifiers above;
//! - generic names and raw encodings with terms: `cpu-clock/freq=500/`,
//!   `cycles/period=100000,name=foo/`, `r1a2/name=x/`. These take `period`, `freq` and
//!   `name` only; the other terms perf takes there (`config`, `call-graph`, ...) are refused,
//!   naming the term;
//!
//! each optionally followed by modifiers: `cycles:upp`, `cpu/event=0x3c/u`, and also
//! `cpu/event=0x3c/:u` (which perf 6.1 refuses, but cpiflame always took). Modifiers mean
//! what perf's `get_event_modifier` (tools/perf/util/parse-events.c) makes them mean:
//!
//! - `u`, `k`, `h`: count only user, kernel, hypervisor (the first excludes all three, each
//!   then counts its own level again);
//! - `G`, `H`: count only guest, host (the same way). With no modifier perf excludes the
//!   guest; a modifier string keeps that exclusion only through `u`, `p` or `H` (`:k` and
//!   `:S` count the guest too, as perf 6.1 does);
//! - `p`, `pp`, `ppp`: precise_ip 1, 2, 3;
//! - `I`: exclude_idle; `S`: sample_read; `D`: pinned; `e`: exclusive.
//!
//! Refused, with the reason: `P` (the highest precise level the PMU allows, which perf finds
//! by opening the event at each level in turn), `W` (weak groups), `b` (BPF counters), `R`
//! (retirement latency) and `X` (no regrouping): perf tool features, not attr bits. A
//! modifier given twice is refused, as perf refuses it.
//!
//! The name (perf's EVENT_DESC name) is the `name=` term, else the event as typed, modifiers
//! included (`cpu-clock:pp`, `cpu-clock/period=1000/u`), as perf stores it.
//!
//! Tracepoints, hardware-cache and breakpoint events are not accepted.
//!
//! # Groups
//!
//! perf's group syntax: `{a,b,c}` opens its events as one kernel group (scheduled on the
//! PMU together, the first leading), and `{a,b,c}:MODS` applies the modifiers to every
//! member as perf's `parse_events__modifier_event` does: starting from each member's own
//! modifiers (`{cycles:k,instructions}:u` counts cycles in user and kernel space), with `D`
//! and `e` reaching the leader only. `{a,b}:S` is leader sampling: the leader samples and
//! each of its samples reads the counts of the whole group; the other members do not sample
//! (unless their own terms set a rate, as perf lets them). PMU terms work inside
//! (`{cpu/event=0x3c/,cpu/event=0xc0/}:S`). Groups do not nest; an empty group, a brace
//! without its pair, or anything but `:MODS` after the `}` is refused naming the group.
//! [`resolve_groups`] and [`parse_groups_with`] keep the groups; [`resolve_events`] and
//! [`parse_events`] flatten them.
//!
//! # Resolving
//!
//! [`resolve_events`] (or [`resolve_event`] for exactly one) parses a list and resolves it
//! against sysfs: the one call the recorder, `stat` and the markers library need.
//! [`parse_events`] then [`EventSpec::resolve`] does the same purely, given the PMU's type
//! number.

pub mod abi;
pub mod attr_flags;
pub mod cpu;
mod format;
pub mod memory;
mod names;
mod pmu;
pub mod presets;
mod resolve;
mod roles;
mod spec;
mod sysfs;

pub use cpu::{detect, parse_cpuinfo, Cpu, CpuInfoError, Vendor};
pub use format::{ConfigWord, FormatError, FormatField, PmuFormat};
pub use names::{default_name, hardware_name, software_name};
pub use pmu::{parse_pmu_type, Pmu, Pmus};
pub use presets::{
    has_hardware_pmu, presets, stall_event_caveat, stall_event_legend, Candidate, Choice, Mode,
    Presets, DEFAULT_PERIOD,
};
pub use resolve::{
    join_unbraced, resolve_event, resolve_events, resolve_groups, EventGroup, Rate, ResolveError,
    ResolvedEvent, SAMPLE_READ_TYPE,
};
pub use roles::{detect_roles, role_of, Arch, EventRef, Role, Roles};
pub use spec::{
    generic_event, generic_names, parse_event, parse_event_with, parse_events, parse_events_with,
    parse_groups_with, AttrConfig, EventKind, EventSpec, Formats, GroupSpec, SpecError,
};
pub use sysfs::{devices_dir, discover_pmus, pmu_aliases, pmu_format, pmu_type, SYSFS_ROOT};
