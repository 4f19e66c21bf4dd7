//! Encoding records as the kernel lays them out in `include/uapi/linux/perf_event.h` (and
//! perf's own record types), `sample_id` trailer included: the bytes a ring buffer would
//! hold, for the recorder's synthesized records and for tests' synthetic files.
//!
//! Pure functions from fields to bytes: they must never write to a file or read the host.

use super::enc::Enc;
use super::{
    Result, WriteError, MAX_BUILD_ID_SIZE, MAX_RECORD_SIZE, REGS_ABI_NONE, SUPPORTED_READ_FORMAT,
    SUPPORTED_SAMPLE_TYPE,
};
use crate::abi::{self, misc, read_format, record, sample};
use crate::attr::EventAttr;

/// The `sample_id` trailer the kernel appends to non-sample records when the attr has
/// `sample_id_all`; each field is written only if `sample_type` asks for it, in the kernel's
/// order TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleId {
    /// Process id (PERF_SAMPLE_TID).
    pub pid: i32,
    /// Thread id (PERF_SAMPLE_TID).
    pub tid: i32,
    /// Timestamp (PERF_SAMPLE_TIME).
    pub time: u64,
    /// Event id (PERF_SAMPLE_ID and PERF_SAMPLE_IDENTIFIER).
    pub id: u64,
    /// Stream id (PERF_SAMPLE_STREAM_ID).
    pub stream_id: u64,
    /// Cpu (PERF_SAMPLE_CPU; the reserved u32 after it is written as 0).
    pub cpu: u32,
}

/// One counter in a PERF_SAMPLE_READ / PERF_RECORD_READ `read_format` block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadValue {
    /// The counter value.
    pub value: u64,
    /// The counter's id (PERF_FORMAT_ID).
    pub id: u64,
    /// Lost samples (PERF_FORMAT_LOST).
    pub lost: u64,
}

/// The `struct read_format` values of a sample or READ record. Without PERF_FORMAT_GROUP,
/// `values` must hold exactly one counter; with it, one per group member (leader first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadValues {
    /// PERF_FORMAT_TOTAL_TIME_ENABLED.
    pub time_enabled: u64,
    /// PERF_FORMAT_TOTAL_TIME_RUNNING.
    pub time_running: u64,
    /// The counters.
    pub values: Vec<ReadValue>,
}

impl From<&crate::sample::ReadView<'_>> for ReadValues {
    /// The values a sample or READ record carried, to be written again (a counter without
    /// an id or lost count in the read_format gets 0, which the writer leaves out).
    fn from(read: &crate::sample::ReadView<'_>) -> ReadValues {
        ReadValues {
            time_enabled: read.time_enabled.unwrap_or(0),
            time_running: read.time_running.unwrap_or(0),
            values: read
                .counters()
                .into_iter()
                .map(|(value, id, lost)| ReadValue {
                    value,
                    id: id.unwrap_or(0),
                    lost: lost.unwrap_or(0),
                })
                .collect(),
        }
    }
}

/// The fields of a PERF_RECORD_SAMPLE; [`sample_record`] writes those the attr's
/// `sample_type` selects and ignores the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleFields {
    /// PERF_SAMPLE_IP.
    pub ip: u64,
    /// PERF_SAMPLE_TID, process id.
    pub pid: i32,
    /// PERF_SAMPLE_TID, thread id.
    pub tid: i32,
    /// PERF_SAMPLE_TIME.
    pub time: u64,
    /// PERF_SAMPLE_ADDR.
    pub addr: u64,
    /// PERF_SAMPLE_ID and PERF_SAMPLE_IDENTIFIER.
    pub id: u64,
    /// PERF_SAMPLE_STREAM_ID.
    pub stream_id: u64,
    /// PERF_SAMPLE_CPU (the reserved u32 after it is written as 0).
    pub cpu: u32,
    /// PERF_SAMPLE_PERIOD.
    pub period: u64,
    /// PERF_SAMPLE_READ: required when the attr asks for it.
    pub read: Option<ReadValues>,
    /// PERF_SAMPLE_CALLCHAIN: addresses and context markers ([`abi::callchain`]), as the
    /// kernel writes them (e.g. `callchain::USER`, then the user ips, innermost first).
    pub callchain: Vec<u64>,
    /// PERF_SAMPLE_RAW: a tracepoint's raw record; written with its u32 size and zero padding
    /// to 8 bytes, as the kernel writes it.
    pub raw: Vec<u8>,
    /// PERF_SAMPLE_BRANCH_STACK: `hw_idx` (written when `branch_sample_type` has
    /// PERF_SAMPLE_BRANCH_HW_INDEX) and the entries as (from, to, flags), newest first.
    pub branch_stack: (u64, Vec<[u64; 3]>),
    /// PERF_SAMPLE_REGS_USER abi ([`REGS_ABI_64`](super::REGS_ABI_64), ...). With [`REGS_ABI_NONE`] no registers
    /// follow and `user_regs` must be empty.
    pub regs_abi: u64,
    /// PERF_SAMPLE_REGS_USER values, one per bit set in `sample_regs_user`, lowest bit first.
    pub user_regs: Vec<u64>,
    /// PERF_SAMPLE_STACK_USER bytes (a multiple of 8 long; empty writes size 0 and, as the
    /// kernel does, no dyn_size).
    pub user_stack: Vec<u8>,
    /// PERF_SAMPLE_STACK_USER dyn_size: how much of `user_stack` is valid (at most its length).
    pub stack_dyn_size: u64,
    /// `perf_event_header.misc`: the cpumode ([`abi::misc::USER`], ...) and optionally
    /// [`abi::misc::EXACT_IP`].
    pub misc: u16,
    /// PERF_SAMPLE_WEIGHT or PERF_SAMPLE_WEIGHT_STRUCT: the word as the kernel writes it
    /// (`crate::Weight::word` packs the struct's three fields).
    pub weight: u64,
    /// PERF_SAMPLE_DATA_SRC: the packed `union perf_mem_data_src`.
    pub data_src: u64,
    /// PERF_SAMPLE_PHYS_ADDR.
    pub phys_addr: u64,
    /// PERF_SAMPLE_CGROUP: the id of the sampled task's cgroup (see [`cgroup_record`]).
    pub cgroup: u64,
    /// PERF_SAMPLE_DATA_PAGE_SIZE.
    pub data_page_size: u64,
    /// PERF_SAMPLE_CODE_PAGE_SIZE.
    pub code_page_size: u64,
}

/// The fields of a PERF_RECORD_MMAP2 record (see [`mmap2_record`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mmap2 {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Start address of the mapping.
    pub addr: u64,
    /// Length of the mapping.
    pub len: u64,
    /// File offset of the mapping's start.
    pub pgoff: u64,
    /// Device major number.
    pub maj: u32,
    /// Device minor number.
    pub min: u32,
    /// Inode number.
    pub ino: u64,
    /// Inode generation.
    pub ino_generation: u64,
    /// When set, the record carries this build id (at most [`MAX_BUILD_ID_SIZE`] bytes)
    /// instead of maj/min/ino/ino_generation, and misc gets [`abi::misc::MMAP_BUILD_ID`].
    pub build_id: Option<Vec<u8>>,
    /// `PROT_*` bits.
    pub prot: u32,
    /// `MAP_*` bits.
    pub flags: u32,
    /// The mapped file's path (or "\[vdso\]", "//anon", ...).
    pub filename: String,
    /// `perf_event_header.misc`: the cpumode ([`abi::misc::USER`] for user mappings),
    /// optionally with [`abi::misc::MMAP_DATA`].
    pub misc: u16,
}

/// PERF_RECORD_HEADER_ATTR: how pipe mode declares an event, its attr then its ids.
pub fn header_attr_record(attr: &EventAttr) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.bytes(&attr.encode());
    for &id in &attr.ids {
        b.u64(id);
    }
    frame(record::HEADER_ATTR, 0, b)
}

/// PERF_RECORD_COMPRESSED (81): a piece of the session's zstd stream. Not padded: the
/// record's size is the only length of the data, so perf writes records of any size here
/// (and the records after it unaligned; COMPRESSED2 was made to fix that).
pub fn compressed_record(data: &[u8]) -> Result<Vec<u8>> {
    let size = abi::EVENT_HEADER_SIZE + data.len();
    if size > MAX_RECORD_SIZE {
        return Err(WriteError::RecordTooLarge {
            record_type: record::COMPRESSED,
            size,
        });
    }
    let mut b = Enc(Vec::with_capacity(size));
    b.u32(record::COMPRESSED);
    b.u16(0);
    b.u16(size as u16);
    b.bytes(data);
    Ok(b.0)
}

/// PERF_RECORD_COMPRESSED2 (83): a piece of the zstd stream with its exact size, padded
/// to 8 bytes.
pub fn compressed2_record(data: &[u8]) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.u64(data.len() as u64);
    b.bytes(data);
    frame(record::COMPRESSED2, 0, b)
}

/// PERF_RECORD_AUXTRACE with its `payload` (AUX area data) following it: the record's
/// `size` field says how long the payload is.
pub fn auxtrace_record(payload: &[u8], idx: u32, tid: u32, cpu: u32) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.u64(payload.len() as u64);
    b.u64(0); // offset in the AUX buffer
    b.u64(0); // reference
    b.u32(idx);
    b.u32(tid);
    b.u32(cpu);
    b.u32(0); // reserved
    let mut r = frame(record::AUXTRACE, 0, b)?;
    r.extend_from_slice(payload);
    Ok(r)
}

/// PERF_RECORD_COMM: the thread `tid` of `pid` is now called `name` (`exec`: because of an
/// exec, misc COMM_EXEC).
pub fn comm_record(
    attr: &EventAttr,
    pid: i32,
    tid: i32,
    name: &str,
    exec: bool,
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.i32(pid);
    b.i32(tid);
    b.record_string(name, "comm")?;
    b.sample_id(attr, sample_id);
    let misc = if exec { misc::COMM_EXEC } else { 0 };
    frame(record::COMM, misc, b)
}

/// PERF_RECORD_MMAP2: an executable (or, with misc MMAP_DATA, data) mapping of a file.
pub fn mmap2_record(attr: &EventAttr, m: &Mmap2, sample_id: &SampleId) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.i32(m.pid);
    b.i32(m.tid);
    b.u64(m.addr);
    b.u64(m.len);
    b.u64(m.pgoff);
    let mut misc = m.misc;
    match &m.build_id {
        Some(id) => {
            if id.len() > MAX_BUILD_ID_SIZE {
                return Err(WriteError::BuildIdTooLong {
                    len: id.len(),
                    path: None,
                });
            }
            misc |= misc::MMAP_BUILD_ID;
            b.u8(id.len() as u8);
            b.u8(0);
            b.u16(0);
            b.bytes(id);
            b.zeros(MAX_BUILD_ID_SIZE - id.len());
        }
        None => {
            b.u32(m.maj);
            b.u32(m.min);
            b.u64(m.ino);
            b.u64(m.ino_generation);
        }
    }
    b.u32(m.prot);
    b.u32(m.flags);
    b.record_string(&m.filename, "mmap filename")?;
    b.sample_id(attr, sample_id);
    frame(record::MMAP2, misc, b)
}

/// Puts `build_id` into a PERF_RECORD_MMAP2 record (native byte order) in place of its
/// device and inode, as the kernel writes it with `attr.build_id` (misc MMAP_BUILD_ID; the
/// record keeps its size). False, and the record untouched, when it is not an MMAP2 record
/// or the build id is empty or longer than [`MAX_BUILD_ID_SIZE`].
pub fn set_mmap2_build_id(record: &mut [u8], build_id: &[u8]) -> bool {
    // header (8), pid, tid (8), addr, len, pgoff (24), then maj, min, ino, ino_generation
    // (24) or build_id_size, 3 reserved bytes and 20 bytes of build id (24).
    const AT: usize = abi::EVENT_HEADER_SIZE + 8 + 24;
    let is_mmap2 = record.get(..4) == Some(&record::MMAP2.to_ne_bytes()[..]);
    if !is_mmap2
        || record.len() < AT + 24
        || build_id.is_empty()
        || build_id.len() > MAX_BUILD_ID_SIZE
    {
        return false;
    }
    let misc = u16::from_ne_bytes([record[4], record[5]]) | misc::MMAP_BUILD_ID;
    record[4..6].copy_from_slice(&misc.to_ne_bytes());
    let field = &mut record[AT..AT + 24];
    field.fill(0);
    field[0] = build_id.len() as u8;
    field[4..4 + build_id.len()].copy_from_slice(build_id);
    true
}

/// PERF_RECORD_FORK: `pid`/`tid` was created by `ppid`/`ptid` at `time`.
pub fn fork_record(
    attr: &EventAttr,
    pid: i32,
    ppid: i32,
    tid: i32,
    ptid: i32,
    time: u64,
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    task_record(record::FORK, attr, [pid, ppid, tid, ptid], time, sample_id)
}

/// PERF_RECORD_EXIT: `pid`/`tid` (child of `ppid`/`ptid`) exited at `time`.
pub fn exit_record(
    attr: &EventAttr,
    pid: i32,
    ppid: i32,
    tid: i32,
    ptid: i32,
    time: u64,
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    task_record(record::EXIT, attr, [pid, ppid, tid, ptid], time, sample_id)
}

fn task_record(
    ty: u32,
    attr: &EventAttr,
    ids: [i32; 4],
    time: u64,
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    for v in ids {
        b.i32(v);
    }
    b.u64(time);
    b.sample_id(attr, sample_id);
    frame(ty, 0, b)
}

/// PERF_RECORD_SWITCH (`other` None) or PERF_RECORD_SWITCH_CPU_WIDE (`other`: the task
/// switched to or from, `(pid, tid)`): the task of `sample_id` came onto (`out` false) or left
/// the CPU, still runnable when `preempt`.
pub fn switch_record(
    attr: &EventAttr,
    out: bool,
    preempt: bool,
    other: Option<(i32, i32)>,
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    if let Some((pid, tid)) = other {
        b.i32(pid);
        b.i32(tid);
    }
    b.sample_id(attr, sample_id);
    let mut misc = 0;
    if out {
        misc |= crate::abi::misc::SWITCH_OUT;
        if preempt {
            misc |= crate::abi::misc::SWITCH_OUT_PREEMPT;
        }
    }
    let ty = if other.is_some() {
        record::SWITCH_CPU_WIDE
    } else {
        record::SWITCH
    };
    frame(ty, misc, b)
}

/// PERF_RECORD_LOST: `lost` records of event `id` were dropped because the ring buffer was
/// full.
pub fn lost_record(attr: &EventAttr, id: u64, lost: u64, sample_id: &SampleId) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.u64(id);
    b.u64(lost);
    b.sample_id(attr, sample_id);
    frame(record::LOST, 0, b)
}

/// PERF_RECORD_LOST_SAMPLES: `lost` samples were dropped (e.g. by the PMU).
pub fn lost_samples_record(attr: &EventAttr, lost: u64, sample_id: &SampleId) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.u64(lost);
    b.sample_id(attr, sample_id);
    frame(record::LOST_SAMPLES, 0, b)
}

/// PERF_RECORD_READ: counter values of `pid`/`tid`, laid out per `attr.read_format`.
pub fn read_record(
    attr: &EventAttr,
    pid: i32,
    tid: i32,
    values: &ReadValues,
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.i32(pid);
    b.i32(tid);
    b.read_values(attr.read_format, values)?;
    b.sample_id(attr, sample_id);
    frame(record::READ, 0, b)
}

/// The namespaces of PERF_RECORD_NAMESPACES, in the kernel's order (`NET_NS_INDEX` ...
/// `CGROUP_NS_INDEX` of `perf_event.h`): the names under `/proc/PID/ns/`.
pub const NAMESPACE_NAMES: [&str; 7] = ["net", "uts", "ipc", "pid", "user", "mnt", "cgroup"];

/// PERF_RECORD_NAMESPACES: the namespaces of thread `tid` of `pid`, one (dev, inode) pair
/// each, in the order of [`NAMESPACE_NAMES`].
pub fn namespaces_record(
    attr: &EventAttr,
    pid: i32,
    tid: i32,
    namespaces: &[(u64, u64)],
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.i32(pid);
    b.i32(tid);
    b.u64(namespaces.len() as u64);
    for &(dev, inode) in namespaces {
        b.u64(dev);
        b.u64(inode);
    }
    b.sample_id(attr, sample_id);
    frame(record::NAMESPACES, 0, b)
}

/// PERF_RECORD_CGROUP: the cgroup with id `id` (what PERF_SAMPLE_CGROUP carries) is at
/// `path`, relative to the cgroup file system's root (`/` for the root).
pub fn cgroup_record(
    attr: &EventAttr,
    id: u64,
    path: &str,
    sample_id: &SampleId,
) -> Result<Vec<u8>> {
    let mut b = Enc::default();
    b.u64(id);
    b.record_string(path, "cgroup path")?;
    b.sample_id(attr, sample_id);
    frame(record::CGROUP, 0, b)
}

/// PERF_RECORD_FINISHED_ROUND: everything before it may be sorted and processed (perf writes
/// one after each pass over the ring buffers). A bare header, no trailer.
pub fn finished_round_record() -> Vec<u8> {
    let mut b = Enc::default();
    b.u32(record::FINISHED_ROUND);
    b.u16(0);
    b.u16(abi::EVENT_HEADER_SIZE as u16);
    b.0
}

/// PERF_RECORD_SAMPLE laid out according to `attr.sample_type` (the order of
/// `perf_event.h`: IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD, READ,
/// CALLCHAIN, BRANCH_STACK, REGS_USER, STACK_USER, WEIGHT or WEIGHT_STRUCT, DATA_SRC, PHYS_ADDR,
/// DATA_PAGE_SIZE, CODE_PAGE_SIZE).
///
/// Errors for sample_type bits outside [`SUPPORTED_SAMPLE_TYPE`], read_format bits outside
/// [`SUPPORTED_READ_FORMAT`], a missing `read`, a register count that does not match
/// `sample_regs_user`, a user stack that is not a multiple of 8 bytes or smaller than its
/// dyn_size, and a record larger than [`MAX_RECORD_SIZE`].
pub fn sample_record(attr: &EventAttr, s: &SampleFields) -> Result<Vec<u8>> {
    let st = attr.sample_type;
    let unsupported = st & !SUPPORTED_SAMPLE_TYPE;
    if unsupported != 0 {
        return Err(WriteError::UnsupportedSampleType(unsupported));
    }
    let mut b = Enc::default();
    if st & sample::IDENTIFIER != 0 {
        b.u64(s.id);
    }
    if st & sample::IP != 0 {
        b.u64(s.ip);
    }
    if st & sample::TID != 0 {
        b.i32(s.pid);
        b.i32(s.tid);
    }
    if st & sample::TIME != 0 {
        b.u64(s.time);
    }
    if st & sample::ADDR != 0 {
        b.u64(s.addr);
    }
    if st & sample::ID != 0 {
        b.u64(s.id);
    }
    if st & sample::STREAM_ID != 0 {
        b.u64(s.stream_id);
    }
    if st & sample::CPU != 0 {
        b.u32(s.cpu);
        b.u32(0);
    }
    if st & sample::PERIOD != 0 {
        b.u64(s.period);
    }
    if st & sample::READ != 0 {
        let read = s.read.as_ref().ok_or(WriteError::MissingReadValues)?;
        b.read_values(attr.read_format, read)?;
    }
    if st & sample::CALLCHAIN != 0 {
        b.u64(s.callchain.len() as u64);
        for &ip in &s.callchain {
            b.u64(ip);
        }
    }
    if st & sample::RAW != 0 {
        // The kernel pads the size word and the data together to a multiple of 8.
        let padded = (4 + s.raw.len()).next_multiple_of(8) - 4;
        b.u32(padded as u32);
        for i in 0..padded {
            b.u8(s.raw.get(i).copied().unwrap_or(0));
        }
    }
    if st & sample::BRANCH_STACK != 0 {
        // PERF_SAMPLE_BRANCH_COUNTERS would add a word per entry.
        const COUNTERS: u64 = abi::branch_sample::COUNTERS;
        if attr.branch_sample_type & COUNTERS != 0 {
            return Err(WriteError::UnsupportedBranchSampleType(COUNTERS));
        }
        let (hw_idx, entries) = &s.branch_stack;
        b.u64(entries.len() as u64);
        if attr.branch_sample_type & abi::BRANCH_SAMPLE_HW_INDEX != 0 {
            b.u64(*hw_idx);
        }
        for entry in entries {
            entry.iter().for_each(|&w| b.u64(w));
        }
    }
    if st & sample::REGS_USER != 0 {
        b.u64(s.regs_abi);
        let want = if s.regs_abi == REGS_ABI_NONE {
            0
        } else {
            attr.sample_regs_user.count_ones() as usize
        };
        if s.user_regs.len() != want {
            return Err(WriteError::UserRegsCount {
                given: s.user_regs.len(),
                abi: s.regs_abi,
                mask: attr.sample_regs_user,
                needed: want,
            });
        }
        for &r in &s.user_regs {
            b.u64(r);
        }
    }
    if st & sample::STACK_USER != 0 {
        let len = s.user_stack.len();
        if len % 8 != 0 {
            return Err(WriteError::UserStackSize(len));
        }
        if s.stack_dyn_size > len as u64 {
            return Err(WriteError::StackDynSize {
                dyn_size: s.stack_dyn_size,
                len,
            });
        }
        b.u64(len as u64);
        if len != 0 {
            b.bytes(&s.user_stack);
            b.u64(s.stack_dyn_size);
        }
    }
    // The kernel's order after the user stack (TRANSACTION and REGS_INTR, which sit between
    // these, are not supported).
    if st & (sample::WEIGHT | sample::WEIGHT_STRUCT) != 0 {
        b.u64(s.weight);
    }
    let words = [
        (sample::DATA_SRC, s.data_src),
        (sample::PHYS_ADDR, s.phys_addr),
        (sample::CGROUP, s.cgroup),
        (sample::DATA_PAGE_SIZE, s.data_page_size),
        (sample::CODE_PAGE_SIZE, s.code_page_size),
    ];
    for (bit, value) in words {
        if st & bit != 0 {
            b.u64(value);
        }
    }
    frame(record::SAMPLE, s.misc, b)
}

/// Prepends the `perf_event_header` to a record body padded to 8 bytes.
fn frame(ty: u32, misc: u16, mut body: Enc) -> Result<Vec<u8>> {
    body.pad_to(8);
    let size = abi::EVENT_HEADER_SIZE + body.0.len();
    if size > MAX_RECORD_SIZE {
        return Err(WriteError::RecordTooLarge {
            record_type: ty,
            size,
        });
    }
    let mut b = Enc(Vec::with_capacity(size));
    b.u32(ty);
    b.u16(misc);
    b.u16(size as u16);
    b.bytes(&body.0);
    Ok(b.0)
}

impl Enc {
    /// `struct read_format` per `perf_event.h`.
    fn read_values(&mut self, rf: u64, r: &ReadValues) -> Result<()> {
        let unsupported = rf & !SUPPORTED_READ_FORMAT;
        if unsupported != 0 {
            return Err(WriteError::UnsupportedReadFormat(unsupported));
        }
        let counter = |b: &mut Enc, v: &ReadValue| {
            b.u64(v.value);
            if rf & read_format::ID != 0 {
                b.u64(v.id);
            }
            if rf & read_format::LOST != 0 {
                b.u64(v.lost);
            }
        };
        let times = |b: &mut Enc| {
            if rf & read_format::TOTAL_TIME_ENABLED != 0 {
                b.u64(r.time_enabled);
            }
            if rf & read_format::TOTAL_TIME_RUNNING != 0 {
                b.u64(r.time_running);
            }
        };
        if rf & read_format::GROUP != 0 {
            self.u64(r.values.len() as u64);
            times(self);
            for v in &r.values {
                counter(self, v);
            }
        } else {
            let [v] = r.values.as_slice() else {
                return Err(WriteError::ReadValueCount(r.values.len()));
            };
            self.u64(v.value);
            times(self);
            if rf & read_format::ID != 0 {
                self.u64(v.id);
            }
            if rf & read_format::LOST != 0 {
                self.u64(v.lost);
            }
        }
        Ok(())
    }

    /// The `sample_id` trailer, if the attr has sample_id_all.
    fn sample_id(&mut self, attr: &EventAttr, s: &SampleId) {
        if !attr.sample_id_all() {
            return;
        }
        let st = attr.sample_type;
        if st & sample::TID != 0 {
            self.i32(s.pid);
            self.i32(s.tid);
        }
        if st & sample::TIME != 0 {
            self.u64(s.time);
        }
        if st & sample::ID != 0 {
            self.u64(s.id);
        }
        if st & sample::STREAM_ID != 0 {
            self.u64(s.stream_id);
        }
        if st & sample::CPU != 0 {
            self.u32(s.cpu);
            self.u32(0);
        }
        if st & sample::IDENTIFIER != 0 {
            self.u64(s.id);
        }
    }
}
