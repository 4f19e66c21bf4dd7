//! perf's names for the generic hardware and software events (`perf list`), used when a file
//! has no EVENT_DESC feature (a recorder killed before writing it).

/// `perf_event_attr.type` values, under the names the event specs use.
pub(crate) use crate::abi::attr_type::{
    BREAKPOINT as TYPE_BREAKPOINT, HARDWARE as TYPE_HARDWARE, HW_CACHE as TYPE_HW_CACHE,
    RAW as TYPE_RAW, SOFTWARE as TYPE_SOFTWARE, TRACEPOINT as TYPE_TRACEPOINT,
};

/// Generic hardware events (`enum perf_hw_id`), index = config.
const HARDWARE: [&str; 10] = [
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branches",
    "branch-misses",
    "bus-cycles",
    "stalled-cycles-frontend",
    "stalled-cycles-backend",
    "ref-cycles",
];

/// Software events (`enum perf_sw_ids`), index = config.
const SOFTWARE: [&str; 12] = [
    "cpu-clock",
    "task-clock",
    "page-faults",
    "context-switches",
    "cpu-migrations",
    "minor-faults",
    "major-faults",
    "alignment-faults",
    "emulation-faults",
    "dummy",
    "bpf-output",
    "cgroup-switches",
];

/// The perf name of generic hardware event `config` (low 32 bits; the high ones name a PMU on
/// hybrid machines).
pub fn hardware_name(config: u64) -> Option<&'static str> {
    HARDWARE.get((config & 0xffff_ffff) as usize).copied()
}

/// The perf name of software event `config`.
pub fn software_name(config: u64) -> Option<&'static str> {
    SOFTWARE.get(config as usize).copied()
}

/// A name for an event perf stored no name for: the generic name, or `rCONFIG` for raw
/// events as perf spells them, or `TYPE:CONFIG`.
pub fn default_name(type_: u32, config: u64) -> String {
    let generic = match type_ {
        TYPE_HARDWARE => hardware_name(config),
        TYPE_SOFTWARE => software_name(config),
        _ => None,
    };
    match (generic, type_) {
        (Some(name), _) => name.to_string(),
        (None, TYPE_RAW) => format!("r{config:x}"),
        (None, TYPE_HW_CACHE) => format!("hw-cache-{config:#x}"),
        (None, TYPE_TRACEPOINT) => format!("tracepoint-{config}"),
        (None, TYPE_BREAKPOINT) => "breakpoint".to_string(),
        (None, _) => format!("{type_}:{config:#x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_generic_raw_and_unknown_events() {
        assert_eq!(default_name(TYPE_SOFTWARE, 0), "cpu-clock");
        assert_eq!(default_name(TYPE_SOFTWARE, 1), "task-clock");
        assert_eq!(default_name(TYPE_HARDWARE, 8), "stalled-cycles-backend");
        // Hybrid Intel: PMU type in the high 32 bits of a generic hardware config.
        assert_eq!(default_name(TYPE_HARDWARE, (8 << 32) | 1), "instructions");
        assert_eq!(default_name(TYPE_RAW, 0x1a2), "r1a2");
        assert_eq!(default_name(10, 0x3c), "10:0x3c");
        assert_eq!(default_name(TYPE_SOFTWARE, 99), "1:0x63");
    }
}
