//! `struct perf_event_attr`: the one model of an event's attributes, decoded from a file's
//! attr section and encoded for the writer and for perf_event_open.

use crate::abi::{attr_flags, sample};
use crate::bytes::{u16_at, u32_at, u64_at, Endian};

/// Size of the `perf_event_attr` the encoder emits (`PERF_ATTR_SIZE_VER7`, Linux 5.13+,
/// ending with `sig_data`); also the value of `attr.size` inside it. That is what perf 5.13
/// to 6.2 write, and perf refuses attrs *larger* than its own struct (`read_attr` in
/// `tools/perf/util/header.c`), while newer perf reads smaller ones fine.
pub const ATTR_SIZE: usize = 128;

/// One event: its `perf_event_attr`, plus what perf stores beside it (its name and ids).
///
/// Fields map one to one onto `struct perf_event_attr`; `size` is filled in by
/// [`EventAttr::encode`] ([`ATTR_SIZE`]). `precise_ip` is not a field of its own: it is the
/// 2-bit field of `flags` at [`attr_flags::PRECISE_IP_SHIFT`], as in the kernel's struct
/// ([`EventAttr::precise_ip`] reads it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventAttr {
    /// `attr.type`: [`crate::abi::attr_type`] (HARDWARE, SOFTWARE, RAW, ...) or a dynamic
    /// PMU type.
    pub type_: u32,
    /// `attr.config`: the event within the type (e.g. raw event code 0x1a2).
    pub config: u64,
    /// `attr.config1` (also `bp_addr`, `kprobe_func`, `uprobe_path`).
    pub config1: u64,
    /// `attr.config2` (also `bp_len`, `kprobe_addr`, `probe_offset`).
    pub config2: u64,
    /// `attr.sample_period`, or `attr.sample_freq` when [`attr_flags::FREQ`] is set.
    pub sample_period_or_freq: u64,
    /// `attr.sample_type`: [`crate::abi::sample`] bits.
    pub sample_type: u64,
    /// `attr.read_format`: [`crate::abi::read_format`] bits.
    pub read_format: u64,
    /// The attr bitfield word: [`attr_flags`] bits, precise_ip included.
    pub flags: u64,
    /// `attr.wakeup_events` (or `wakeup_watermark` with [`attr_flags::WATERMARK`]).
    pub wakeup_events: u32,
    /// `attr.bp_type`.
    pub bp_type: u32,
    /// `attr.branch_sample_type`.
    pub branch_sample_type: u64,
    /// `attr.sample_regs_user`: one bit per register (see [`crate::abi::x86_64_regs`]).
    pub sample_regs_user: u64,
    /// `attr.sample_stack_user`: bytes of user stack to dump per sample.
    pub sample_stack_user: u32,
    /// `attr.clockid` (with [`attr_flags::USE_CLOCKID`]).
    pub clockid: i32,
    /// `attr.sample_regs_intr`.
    pub sample_regs_intr: u64,
    /// `attr.aux_watermark`.
    pub aux_watermark: u32,
    /// `attr.sample_max_stack`.
    pub sample_max_stack: u16,
    /// `attr.aux_sample_size`.
    pub aux_sample_size: u32,
    /// `attr.sig_data`.
    pub sig_data: u64,
    /// The event's name as perf shows it (EVENT_DESC feature), e.g. "resource_stalls_any".
    /// `None`: the file has none, and the writer writes a perf-style default ("cpu-clock",
    /// "r1a2", ...; see [`EventAttr::display_name`]).
    pub name: Option<String>,
    /// The kernel ids of this event's instances (one per cpu or thread it was opened on);
    /// records are matched to their attr through them. perf only applies the EVENT_DESC name
    /// to an attr that has at least one id.
    pub ids: Vec<u64>,
}

/// Byte offsets of the fields in `struct perf_event_attr` (`include/uapi/linux/perf_event.h`).
mod offset {
    pub const TYPE: usize = 0;
    pub const SIZE: usize = 4;
    pub const CONFIG: usize = 8;
    pub const SAMPLE_PERIOD: usize = 16;
    pub const SAMPLE_TYPE: usize = 24;
    pub const READ_FORMAT: usize = 32;
    pub const FLAGS: usize = 40;
    pub const WAKEUP_EVENTS: usize = 48;
    pub const BP_TYPE: usize = 52;
    pub const CONFIG1: usize = 56;
    pub const CONFIG2: usize = 64;
    pub const BRANCH_SAMPLE_TYPE: usize = 72;
    pub const SAMPLE_REGS_USER: usize = 80;
    pub const SAMPLE_STACK_USER: usize = 88;
    pub const CLOCKID: usize = 92;
    pub const SAMPLE_REGS_INTR: usize = 96;
    pub const AUX_WATERMARK: usize = 104;
    pub const SAMPLE_MAX_STACK: usize = 108;
    pub const AUX_SAMPLE_SIZE: usize = 112;
    pub const SIG_DATA: usize = 120;
}

impl EventAttr {
    /// Whether `sample_period_or_freq` is a frequency.
    pub fn freq(&self) -> bool {
        self.flags & attr_flags::FREQ != 0
    }

    /// Whether records of this event carry the `sample_id` trailer.
    pub fn sample_id_all(&self) -> bool {
        self.flags & attr_flags::SAMPLE_ID_ALL != 0
    }

    /// The precise_ip level (0..=3) held in `flags`.
    pub fn precise_ip(&self) -> u8 {
        ((self.flags & attr_flags::PRECISE_IP_MASK) >> attr_flags::PRECISE_IP_SHIFT) as u8
    }

    /// Size in bytes of the `sample_id` trailer on non-sample records.
    pub fn sample_id_size(&self) -> usize {
        if !self.sample_id_all() {
            return 0;
        }
        let t = self.sample_type;
        [
            sample::TID,
            sample::TIME,
            sample::ID,
            sample::STREAM_ID,
            sample::CPU,
            sample::IDENTIFIER,
        ]
        .iter()
        .filter(|&&bit| t & bit != 0)
        .count()
            * 8
    }

    /// The name written to EVENT_DESC: [`EventAttr::name`], or perf's name for the event when
    /// there is none (generic hardware and software events by name, raw events as `r<hex>`).
    pub fn display_name(&self) -> String {
        match &self.name {
            Some(name) => name.clone(),
            None => cpiflame_events::default_name(self.type_, self.config),
        }
    }

    /// Decodes the fields of a `perf_event_attr` of any published size: the trailing fields
    /// an older, shorter attr lacks read as zero, as the kernel treats them. `name` and `ids`
    /// are left empty (they are stored elsewhere in the file).
    pub fn decode(b: &[u8], e: Endian) -> EventAttr {
        let q = |off: usize| u64_at(b, off, e).unwrap_or(0);
        let d = |off: usize| u32_at(b, off, e).unwrap_or(0);
        EventAttr {
            type_: d(offset::TYPE),
            config: q(offset::CONFIG),
            config1: q(offset::CONFIG1),
            config2: q(offset::CONFIG2),
            sample_period_or_freq: q(offset::SAMPLE_PERIOD),
            sample_type: q(offset::SAMPLE_TYPE),
            read_format: q(offset::READ_FORMAT),
            flags: q(offset::FLAGS),
            wakeup_events: d(offset::WAKEUP_EVENTS),
            bp_type: d(offset::BP_TYPE),
            branch_sample_type: q(offset::BRANCH_SAMPLE_TYPE),
            sample_regs_user: q(offset::SAMPLE_REGS_USER),
            sample_stack_user: d(offset::SAMPLE_STACK_USER),
            clockid: d(offset::CLOCKID) as i32,
            sample_regs_intr: q(offset::SAMPLE_REGS_INTR),
            aux_watermark: d(offset::AUX_WATERMARK),
            sample_max_stack: u16_at(b, offset::SAMPLE_MAX_STACK, e).unwrap_or(0),
            aux_sample_size: d(offset::AUX_SAMPLE_SIZE),
            sig_data: q(offset::SIG_DATA),
            name: None,
            ids: Vec::new(),
        }
    }

    /// The `perf_event_attr` bytes (host byte order, `size` = [`ATTR_SIZE`]); the reserved
    /// fields are zero.
    pub fn encode(&self) -> [u8; ATTR_SIZE] {
        let mut out = [0u8; ATTR_SIZE];
        let mut put = |at: usize, bytes: &[u8]| out[at..at + bytes.len()].copy_from_slice(bytes);
        put(offset::TYPE, &self.type_.to_ne_bytes());
        put(offset::SIZE, &(ATTR_SIZE as u32).to_ne_bytes());
        put(offset::CONFIG, &self.config.to_ne_bytes());
        put(
            offset::SAMPLE_PERIOD,
            &self.sample_period_or_freq.to_ne_bytes(),
        );
        put(offset::SAMPLE_TYPE, &self.sample_type.to_ne_bytes());
        put(offset::READ_FORMAT, &self.read_format.to_ne_bytes());
        put(offset::FLAGS, &self.flags.to_ne_bytes());
        put(offset::WAKEUP_EVENTS, &self.wakeup_events.to_ne_bytes());
        put(offset::BP_TYPE, &self.bp_type.to_ne_bytes());
        put(offset::CONFIG1, &self.config1.to_ne_bytes());
        put(offset::CONFIG2, &self.config2.to_ne_bytes());
        put(
            offset::BRANCH_SAMPLE_TYPE,
            &self.branch_sample_type.to_ne_bytes(),
        );
        put(
            offset::SAMPLE_REGS_USER,
            &self.sample_regs_user.to_ne_bytes(),
        );
        put(
            offset::SAMPLE_STACK_USER,
            &self.sample_stack_user.to_ne_bytes(),
        );
        put(offset::CLOCKID, &self.clockid.to_ne_bytes());
        put(
            offset::SAMPLE_REGS_INTR,
            &self.sample_regs_intr.to_ne_bytes(),
        );
        put(offset::AUX_WATERMARK, &self.aux_watermark.to_ne_bytes());
        put(
            offset::SAMPLE_MAX_STACK,
            &self.sample_max_stack.to_ne_bytes(),
        );
        put(offset::AUX_SAMPLE_SIZE, &self.aux_sample_size.to_ne_bytes());
        put(offset::SIG_DATA, &self.sig_data.to_ne_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Endian {
        if cfg!(target_endian = "little") {
            Endian::Little
        } else {
            Endian::Big
        }
    }

    #[test]
    fn encoding_is_128_bytes_with_fields_at_kernel_offsets() {
        let a = EventAttr {
            type_: 4,
            config: 0x1a2,
            sample_period_or_freq: 1000,
            sample_type: 0x1_01e7,
            flags: attr_flags::SAMPLE_ID_ALL
                | attr_flags::DISABLED
                | (2 << attr_flags::PRECISE_IP_SHIFT),
            sample_regs_user: 0xff,
            sample_stack_user: 8192,
            clockid: 1,
            sample_max_stack: 127,
            sig_data: 0x55,
            ..Default::default()
        };
        let e = a.encode();
        let u32_at = |o: usize| u32::from_ne_bytes(e[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_ne_bytes(e[o..o + 8].try_into().unwrap());
        assert_eq!(u32_at(0), 4);
        assert_eq!(u32_at(4), 128);
        assert_eq!(u64_at(8), 0x1a2);
        assert_eq!(u64_at(16), 1000);
        assert_eq!(u64_at(24), 0x1_01e7);
        assert_eq!(u64_at(40), (1 << 18) | 1 | (2 << 15));
        assert_eq!(u64_at(80), 0xff);
        assert_eq!(u32_at(88), 8192);
        assert_eq!(u32_at(92), 1);
        assert_eq!(u16::from_ne_bytes([e[108], e[109]]), 127);
        assert_eq!(u64_at(120), 0x55);
        assert_eq!(a.precise_ip(), 2);
    }

    #[test]
    fn decode_reads_what_encode_writes_and_zeroes_what_a_short_attr_lacks() {
        let a = EventAttr {
            type_: 8,
            config: 3,
            config1: 4,
            config2: 5,
            sample_period_or_freq: 4000,
            sample_type: 0x10087,
            read_format: 0xf,
            flags: attr_flags::FREQ | (3 << attr_flags::PRECISE_IP_SHIFT),
            wakeup_events: 6,
            bp_type: 7,
            branch_sample_type: 9,
            sample_regs_user: 0xff0fff,
            sample_stack_user: 32768,
            clockid: -1,
            sample_regs_intr: 10,
            aux_watermark: 11,
            sample_max_stack: 12,
            aux_sample_size: 13,
            sig_data: 14,
            name: None,
            ids: Vec::new(),
        };
        let bytes = a.encode();
        assert_eq!(EventAttr::decode(&bytes, host()), a);
        // PERF_ATTR_SIZE_VER0 (64 bytes): everything from config2 on reads as zero.
        let short = EventAttr::decode(&bytes[..64], host());
        assert_eq!(short.config1, 4);
        assert_eq!(
            short,
            EventAttr {
                config2: 0,
                branch_sample_type: 0,
                sample_regs_user: 0,
                sample_stack_user: 0,
                clockid: 0,
                sample_regs_intr: 0,
                aux_watermark: 0,
                sample_max_stack: 0,
                aux_sample_size: 0,
                sig_data: 0,
                ..a
            }
        );
    }

    #[test]
    fn default_names_follow_perf() {
        let named = |type_, config| {
            EventAttr {
                type_,
                config,
                ..Default::default()
            }
            .display_name()
        };
        assert_eq!(named(1, 0), "cpu-clock");
        assert_eq!(named(1, 1), "task-clock");
        assert_eq!(named(0, 1), "instructions");
        assert_eq!(named(4, 0x1a2), "r1a2");
        assert_eq!(named(9, 2), "9:0x2");
    }
}
