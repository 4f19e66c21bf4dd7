//! PERF_RECORD_SAMPLE, laid out as `perf_event.h` documents it for the event's sample_type.
//!
//! Parsed here rather than by `linux-perf-event-reader` 0.10, whose parser swaps the group and
//! non-group layouts of PERF_SAMPLE_READ (and so misreads every field after it).

use crate::abi::{branch_sample, read_format, sample, BRANCH_SAMPLE_HW_INDEX};
use crate::attr::EventAttr;
use crate::bytes::{u64_at, Cursor, Endian};

/// `perf_event_attr.branch_sample_type` bit that adds one counters word per branch entry.
const BRANCH_SAMPLE_COUNTERS: u64 = branch_sample::COUNTERS;

/// `perf_event_attr.branch_sample_type` bit PERF_SAMPLE_BRANCH_CALL_STACK (`perf record
/// --call-graph lbr`): the branch stack holds the calls not yet returned from, newest first,
/// rather than the last branches taken.
pub const BRANCH_SAMPLE_CALL_STACK: u64 = branch_sample::CALL_STACK;

/// A list of u64 values stored in the file's byte order, borrowed from the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct U64s<'a> {
    bytes: &'a [u8],
    endian: Endian,
}

impl<'a> U64s<'a> {
    /// The values in `bytes` (a multiple of 8 long; a rest is not a value).
    pub(crate) fn new(bytes: &'a [u8], endian: Endian) -> U64s<'a> {
        U64s { bytes, endian }
    }
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }
    pub fn is_empty(&self) -> bool {
        self.bytes.len() < 8
    }
    pub fn get(&self, i: usize) -> Option<u64> {
        u64_at(self.bytes, i.checked_mul(8)?, self.endian)
    }
    pub fn iter(&self) -> impl Iterator<Item = u64> + 'a {
        let e = self.endian;
        self.bytes
            .chunks_exact(8)
            .filter_map(move |c| u64_at(c, 0, e))
    }
}

/// One entry of a branch stack (`struct perf_branch_entry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchEntry {
    /// Address of the branch instruction (for a call: the call site).
    pub from: u64,
    /// Address branched to (for a call: the callee's entry).
    pub to: u64,
    /// The packed flags word (mispred, predicted, in_tx, abort, cycles, type, ...).
    pub flags: u64,
}

/// PERF_SAMPLE_BRANCH_STACK of a sample, borrowed from the record: entries newest first.
/// Its length was checked against the record's bytes when parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchStack<'a> {
    /// The hardware index of the newest entry (PERF_SAMPLE_BRANCH_HW_INDEX), when the attr
    /// asks for it; the kernel writes `u64::MAX` when it has none.
    pub hw_idx: Option<u64>,
    /// Whether the attr's branch_sample_type has [`BRANCH_SAMPLE_CALL_STACK`]: the entries
    /// are the calls of the current call stack, so their `from` addresses are the callers'
    /// call sites, innermost first.
    pub call_stack: bool,
    /// nr x (from, to, flags).
    entries: U64s<'a>,
}

impl<'a> BranchStack<'a> {
    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len() / 3
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Entry `i`, newest first.
    pub fn get(&self, i: usize) -> Option<BranchEntry> {
        let at = i.checked_mul(3)?;
        Some(BranchEntry {
            from: self.entries.get(at)?,
            to: self.entries.get(at.checked_add(1)?)?,
            flags: self.entries.get(at.checked_add(2)?)?,
        })
    }
    /// The entries, newest first.
    pub fn iter(&self) -> impl Iterator<Item = BranchEntry> + 'a {
        let stack = *self;
        (0..stack.len()).filter_map(move |i| stack.get(i))
    }
}

/// User registers of a sample: the values of the registers whose bits are set in `mask`, in
/// bit order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserRegs<'a> {
    /// PERF_SAMPLE_REGS_ABI_32 (1) or _64 (2).
    pub abi: u64,
    pub mask: u64,
    pub values: U64s<'a>,
}

impl UserRegs<'_> {
    /// The value of perf register number `reg` (e.g. `abi::x86_64_regs::SP`), if sampled.
    pub fn get(&self, reg: u32) -> Option<u64> {
        if reg >= 64 || self.mask & (1 << reg) == 0 {
            return None;
        }
        let index = (self.mask & ((1u64 << reg) - 1)).count_ones() as usize;
        self.values.get(index)
    }
}

/// A copy of the user stack taken at the sample, from the stack pointer upwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserStack<'a> {
    /// All copied bytes (`sample_stack_user` of them).
    pub data: &'a [u8],
    /// How many of them were really stack (the rest is past the stack's top).
    pub dyn_size: u64,
}

impl<'a> UserStack<'a> {
    /// The bytes that hold stack contents.
    pub fn used(&self) -> &'a [u8] {
        let n = usize::try_from(self.dyn_size).unwrap_or(usize::MAX);
        &self.data[..n.min(self.data.len())]
    }
}

/// Counter values in the kernel's `struct read_format` layout, borrowed from the record: a
/// sample's PERF_SAMPLE_READ, or a PERF_RECORD_READ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadView<'a> {
    pub time_enabled: Option<u64>,
    pub time_running: Option<u64>,
    layout: ReadLayout<'a>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadLayout<'a> {
    /// PERF_FORMAT_GROUP: per member (value, [id], [lost]); `words` u64s per member.
    Group {
        entries: U64s<'a>,
        words: usize,
        has_id: bool,
        has_lost: bool,
    },
    Single {
        value: u64,
        id: Option<u64>,
        lost: Option<u64>,
    },
}

impl ReadView<'_> {
    /// (value, id) per counter: one per group member, or one for a non-group read.
    pub fn values(&self) -> Vec<(u64, Option<u64>)> {
        self.counters()
            .into_iter()
            .map(|(value, id, _)| (value, id))
            .collect()
    }

    /// (value, id, lost) per counter, as [`ReadView::values`], with PERF_FORMAT_LOST's count.
    pub fn counters(&self) -> Vec<(u64, Option<u64>, Option<u64>)> {
        match self.layout {
            ReadLayout::Group {
                entries,
                words,
                has_id,
                has_lost,
            } => (0..entries.len() / words)
                .map(|i| {
                    let word = |k: usize| entries.get(i * words + k);
                    let id = if has_id { word(1) } else { None };
                    let lost = if has_lost {
                        word(1 + usize::from(has_id))
                    } else {
                        None
                    };
                    (word(0).unwrap_or(0), id, lost)
                })
                .collect(),
            ReadLayout::Single { value, id, lost } => vec![(value, id, lost)],
        }
    }
}

/// One sample. Fields are `None` when the event's sample_type does not ask for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample<'a> {
    /// Index of the event in [`crate::PerfData::attrs`].
    pub attr: usize,
    /// PERF_RECORD_MISC_CPUMODE of the sample (where `ip` is: kernel, user, ...).
    pub cpumode: u16,
    pub ip: Option<u64>,
    pub pid: Option<i32>,
    pub tid: Option<i32>,
    pub time: Option<u64>,
    pub addr: Option<u64>,
    pub id: Option<u64>,
    pub stream_id: Option<u64>,
    pub cpu: Option<u32>,
    pub period: Option<u64>,
    pub read: Option<ReadView<'a>>,
    /// Kernel-recorded call chain: addresses with PERF_CONTEXT_* markers between them.
    pub callchain: Option<U64s<'a>>,
    /// PERF_SAMPLE_RAW: a tracepoint's record (its fields laid out as the tracepoint's
    /// `format` says, [`crate::TraceEvent::fields`]), without the u32 size before it.
    pub raw: Option<&'a [u8]>,
    /// PERF_SAMPLE_BRANCH_STACK.
    pub branch_stack: Option<BranchStack<'a>>,
    pub user_regs: Option<UserRegs<'a>>,
    pub user_stack: Option<UserStack<'a>>,
    /// PERF_SAMPLE_WEIGHT or PERF_SAMPLE_WEIGHT_STRUCT: the cost of the access (for memory
    /// events, its latency in cycles).
    pub weight: Option<Weight>,
    /// PERF_SAMPLE_DATA_SRC: the packed `union perf_mem_data_src` (decoded by
    /// `cpiflame-memaccess`).
    pub data_src: Option<u64>,
    /// PERF_SAMPLE_TRANSACTION: the TSX abort flags.
    pub transaction: Option<u64>,
    /// PERF_SAMPLE_PHYS_ADDR: the physical address of `addr` (0 when the kernel could not
    /// translate it).
    pub phys_addr: Option<u64>,
    /// PERF_SAMPLE_CGROUP: the cgroup id of the sampled task.
    pub cgroup: Option<u64>,
    /// PERF_SAMPLE_DATA_PAGE_SIZE: the MMU page size backing `addr`.
    pub data_page_size: Option<u64>,
    /// PERF_SAMPLE_CODE_PAGE_SIZE: the MMU page size backing `ip`.
    pub code_page_size: Option<u64>,
}

/// The weight word of a sample (`union perf_sample_weight`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// PERF_SAMPLE_WEIGHT: one u64.
    Full(u64),
    /// PERF_SAMPLE_WEIGHT_STRUCT: three values packed into the same u64. On Intel `var1_dw`
    /// is the load latency, `var2_w` the instruction latency; `var3_w` is the retire latency
    /// on newer parts.
    Struct {
        var1_dw: u32,
        var2_w: u16,
        var3_w: u16,
    },
}

impl Weight {
    /// The word as the sample carried it, in the file's byte order already decoded.
    /// PERF_SAMPLE_WEIGHT_STRUCT's three fields sit, as a number, at bits 0..32, 32..48 and
    /// 48..64 whatever the byte order (the kernel orders the struct to make it so).
    pub fn from_word(word: u64, is_struct: bool) -> Weight {
        if is_struct {
            Weight::Struct {
                var1_dw: word as u32,
                var2_w: (word >> 32) as u16,
                var3_w: (word >> 48) as u16,
            }
        } else {
            Weight::Full(word)
        }
    }

    /// The u64 the kernel wrote.
    pub fn word(&self) -> u64 {
        match *self {
            Weight::Full(w) => w,
            Weight::Struct {
                var1_dw,
                var2_w,
                var3_w,
            } => u64::from(var1_dw) | u64::from(var2_w) << 32 | u64::from(var3_w) << 48,
        }
    }

    /// The weight perf reports (`sample->weight`): the whole word, or `var1_dw` of the
    /// struct (perf keeps `var2_w` apart as the instruction latency).
    pub fn latency(&self) -> u64 {
        match *self {
            Weight::Full(w) => w,
            Weight::Struct { var1_dw, .. } => u64::from(var1_dw),
        }
    }
}

/// Parses a whole PERF_RECORD_SAMPLE (header included) of event `attr_index`.
pub fn parse_sample_record<'a>(
    record: &'a [u8],
    attr_index: usize,
    attr: &EventAttr,
    endian: Endian,
) -> Result<Sample<'a>, &'static str> {
    let misc = crate::bytes::u16_at(record, 4, endian).ok_or("record header")?;
    parse_sample(
        record.get(8..).ok_or("record header")?,
        misc,
        attr_index,
        attr,
        endian,
    )
}

/// Parses a sample body (after the 8-byte record header): the fields in the order of
/// `perf_event.h`, each step reading those of its part that the sample_type asks for. Errors
/// say which field ran out.
pub(crate) fn parse_sample<'a>(
    body: &'a [u8],
    misc: u16,
    attr_index: usize,
    attr: &EventAttr,
    e: Endian,
) -> Result<Sample<'a>, &'static str> {
    let mut c = Cursor::new(body, e);
    let mut s = parse_fixed_fields(&mut c, attr.sample_type)?;
    s.attr = attr_index;
    s.cpumode = misc & crate::abi::misc::CPUMODE_MASK;
    let has = |bit: u64| attr.sample_type & bit != 0;
    if has(sample::READ) {
        s.read = Some(parse_read(&mut c, attr.read_format)?);
    }
    if has(sample::CALLCHAIN) {
        let nr = c.u64().ok_or("callchain length")?;
        s.callchain = Some(U64s {
            bytes: c.u64s(nr).ok_or("callchain")?,
            endian: e,
        });
    }
    if has(sample::RAW) {
        let size = c.u32().ok_or("raw size")?;
        s.raw = Some(c.bytes(u64::from(size)).ok_or("raw data")?);
    }
    s.branch_stack = parse_branches(&mut c, attr)?;
    if has(sample::REGS_USER) {
        s.user_regs = parse_user_regs(&mut c, attr.sample_regs_user)?;
    }
    if has(sample::STACK_USER) {
        s.user_stack = Some(parse_user_stack(&mut c)?);
    }
    parse_memory_fields(&mut c, attr, &mut s)?;
    // PERF_SAMPLE_AUX comes last and is not used.
    Ok(s)
}

/// The fields after the user stack, in the order the kernel's `perf_output_sample` writes
/// them (and perf's `evsel__parse_sample` reads them): WEIGHT / WEIGHT_STRUCT, DATA_SRC,
/// TRANSACTION, REGS_INTR (skipped), PHYS_ADDR, CGROUP, DATA_PAGE_SIZE, CODE_PAGE_SIZE.
fn parse_memory_fields(
    c: &mut Cursor<'_>,
    attr: &EventAttr,
    s: &mut Sample<'_>,
) -> Result<(), &'static str> {
    let has = |bit: u64| attr.sample_type & bit != 0;
    if has(sample::WEIGHT) || has(sample::WEIGHT_STRUCT) {
        let word = c.u64().ok_or("weight")?;
        // perf reads the whole word when both bits are set (the kernel refuses that pair).
        let is_struct = !has(sample::WEIGHT);
        s.weight = Some(Weight::from_word(word, is_struct));
    }
    let t = attr.sample_type;
    s.data_src = optional_u64(c, t, sample::DATA_SRC, "data source")?;
    s.transaction = optional_u64(c, t, sample::TRANSACTION, "transaction")?;
    if has(sample::REGS_INTR) {
        let abi = c.u64().ok_or("intr regs abi")?;
        if abi != 0 {
            let n = u64::from(attr.sample_regs_intr.count_ones());
            c.u64s(n).ok_or("intr regs")?;
        }
    }
    s.phys_addr = optional_u64(c, t, sample::PHYS_ADDR, "physical address")?;
    s.cgroup = optional_u64(c, t, sample::CGROUP, "cgroup")?;
    s.data_page_size = optional_u64(c, t, sample::DATA_PAGE_SIZE, "data page size")?;
    s.code_page_size = optional_u64(c, t, sample::CODE_PAGE_SIZE, "code page size")?;
    Ok(())
}

/// One u64 when `sample_type` has `bit`.
fn optional_u64(
    c: &mut Cursor<'_>,
    sample_type: u64,
    bit: u64,
    what: &'static str,
) -> Result<Option<u64>, &'static str> {
    if sample_type & bit == 0 {
        return Ok(None);
    }
    c.u64().map(Some).ok_or(what)
}

/// The fixed-size fields that come first: IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID,
/// CPU, PERIOD.
fn parse_fixed_fields<'a>(c: &mut Cursor<'a>, t: u64) -> Result<Sample<'a>, &'static str> {
    let has = |bit: u64| t & bit != 0;
    let mut s = Sample {
        attr: 0,
        cpumode: 0,
        ip: None,
        pid: None,
        tid: None,
        time: None,
        addr: None,
        id: None,
        stream_id: None,
        cpu: None,
        period: None,
        read: None,
        callchain: None,
        raw: None,
        branch_stack: None,
        user_regs: None,
        user_stack: None,
        weight: None,
        data_src: None,
        transaction: None,
        phys_addr: None,
        cgroup: None,
        data_page_size: None,
        code_page_size: None,
    };
    if has(sample::IDENTIFIER) {
        s.id = Some(c.u64().ok_or("identifier")?);
    }
    if has(sample::IP) {
        s.ip = Some(c.u64().ok_or("ip")?);
    }
    if has(sample::TID) {
        s.pid = Some(c.u32().ok_or("pid")? as i32);
        s.tid = Some(c.u32().ok_or("tid")? as i32);
    }
    if has(sample::TIME) {
        s.time = Some(c.u64().ok_or("time")?);
    }
    if has(sample::ADDR) {
        s.addr = Some(c.u64().ok_or("addr")?);
    }
    if has(sample::ID) {
        s.id = Some(c.u64().ok_or("id")?);
    }
    if has(sample::STREAM_ID) {
        s.stream_id = Some(c.u64().ok_or("stream id")?);
    }
    if has(sample::CPU) {
        s.cpu = Some(c.u32().ok_or("cpu")?);
        c.u32().ok_or("cpu")?;
    }
    if has(sample::PERIOD) {
        s.period = Some(c.u64().ok_or("period")?);
    }
    Ok(s)
}

/// `struct read_format` (PERF_SAMPLE_READ, and the body of PERF_RECORD_READ after pid/tid),
/// laid out per `read_format`.
pub(crate) fn parse_read<'a>(c: &mut Cursor<'a>, f: u64) -> Result<ReadView<'a>, &'static str> {
    let has_id = f & read_format::ID != 0;
    let has_lost = f & read_format::LOST != 0;
    let mut time_enabled = None;
    let mut time_running = None;
    let mut times = |c: &mut Cursor<'a>| -> Result<(), &'static str> {
        if f & read_format::TOTAL_TIME_ENABLED != 0 {
            time_enabled = Some(c.u64().ok_or("read time enabled")?);
        }
        if f & read_format::TOTAL_TIME_RUNNING != 0 {
            time_running = Some(c.u64().ok_or("read time running")?);
        }
        Ok(())
    };
    let layout = if f & read_format::GROUP != 0 {
        // nr, [time_enabled], [time_running], then nr x (value, [id], [lost]).
        let nr = c.u64().ok_or("read group count")?;
        times(c)?;
        let words = 1 + usize::from(has_id) + usize::from(has_lost);
        let n = nr.checked_mul(words as u64).ok_or("read group count")?;
        ReadLayout::Group {
            entries: U64s {
                bytes: c.u64s(n).ok_or("read group values")?,
                endian: c.endian(),
            },
            words,
            has_id,
            has_lost,
        }
    } else {
        // value, [time_enabled], [time_running], [id], [lost].
        let value = c.u64().ok_or("read value")?;
        times(c)?;
        let id = if has_id {
            Some(c.u64().ok_or("read id")?)
        } else {
            None
        };
        let lost = if has_lost {
            Some(c.u64().ok_or("read lost")?)
        } else {
            None
        };
        ReadLayout::Single { value, id, lost }
    };
    Ok(ReadView {
        time_enabled,
        time_running,
        layout,
    })
}

/// PERF_SAMPLE_BRANCH_STACK: `nr`, `hw_idx` when
/// the attr asks for PERF_SAMPLE_BRANCH_HW_INDEX, nr x {from, to, flags}, then one counters
/// word per entry with PERF_SAMPLE_BRANCH_COUNTERS (skipped). The claimed `nr` is checked
/// against the bytes left in the record before anything is borrowed.
fn parse_branches<'a>(
    c: &mut Cursor<'a>,
    attr: &EventAttr,
) -> Result<Option<BranchStack<'a>>, &'static str> {
    if attr.sample_type & sample::BRANCH_STACK == 0 {
        return Ok(None);
    }
    let nr = c.u64().ok_or("branch stack length")?;
    let hw_idx = if attr.branch_sample_type & BRANCH_SAMPLE_HW_INDEX != 0 {
        Some(c.u64().ok_or("branch hw index")?)
    } else {
        None
    };
    let entries = U64s {
        bytes: c
            .u64s(nr.checked_mul(3).ok_or("branch stack length")?)
            .ok_or("branch stack")?,
        endian: c.endian(),
    };
    if attr.branch_sample_type & BRANCH_SAMPLE_COUNTERS != 0 {
        c.u64s(nr).ok_or("branch counters")?;
    }
    Ok(Some(BranchStack {
        hw_idx,
        call_stack: attr.branch_sample_type & BRANCH_SAMPLE_CALL_STACK != 0,
        entries,
    }))
}

/// PERF_SAMPLE_REGS_USER: the abi, then one value per bit of `mask` unless the abi is NONE
/// (a kernel thread has no user registers).
fn parse_user_regs<'a>(
    c: &mut Cursor<'a>,
    mask: u64,
) -> Result<Option<UserRegs<'a>>, &'static str> {
    let abi = c.u64().ok_or("user regs abi")?;
    if abi == 0 {
        return Ok(None);
    }
    let n = mask.count_ones() as u64;
    Ok(Some(UserRegs {
        abi,
        mask,
        values: U64s {
            bytes: c.u64s(n).ok_or("user regs")?,
            endian: c.endian(),
        },
    }))
}

/// PERF_SAMPLE_STACK_USER: size, the bytes, and dyn_size unless the size is 0.
fn parse_user_stack<'a>(c: &mut Cursor<'a>) -> Result<UserStack<'a>, &'static str> {
    let size = c.u64().ok_or("user stack size")?;
    let data = c.bytes(size).ok_or("user stack")?;
    let dyn_size = if size != 0 {
        c.u64().ok_or("user stack dyn_size")?
    } else {
        0
    };
    Ok(UserStack { data, dyn_size })
}

/// Rewrites the PERF_RECORD_SAMPLE `record` (header included) into `out` with its user stack
/// copy cut to the bytes in use (`dyn_size`, rounded up to 8): the kernel reserves the full
/// `sample_stack_user` bytes in every sample, most of them past the top of the stack.
///
/// The result is still a valid sample (perf reads each sample's own size field). Returns
/// false, leaving `out` empty, when the record is not a sample with a stack copy to cut.
pub fn trim_user_stack(record: &[u8], attr: &EventAttr, endian: Endian, out: &mut Vec<u8>) -> bool {
    trim_user_stack_to(record, attr, endian, usize::MAX, out)
}

/// As [`trim_user_stack`], keeping at most `limit` bytes (rounded up to 8) of the stack: the
/// recorder passes how far up the stack its unwinder read. `dyn_size` is lowered to what is
/// kept, so the sample stays valid for perf (which requires `dyn_size <= size`).
pub fn trim_user_stack_to(
    record: &[u8],
    attr: &EventAttr,
    endian: Endian,
    limit: usize,
    out: &mut Vec<u8>,
) -> bool {
    out.clear();
    let Some(body) = record.get(8..) else {
        return false;
    };
    let misc = crate::bytes::u16_at(record, 4, endian).unwrap_or(0);
    let Ok(sample) = parse_sample(body, misc, 0, attr, endian) else {
        return false;
    };
    let Some(stack) = sample.user_stack else {
        return false;
    };
    let used = stack.used().len().min(limit);
    let keep = used.div_ceil(8) * 8;
    let keep = keep.min(stack.data.len());
    if stack.data.len() <= keep {
        return false;
    }
    // Offsets in `record` of the stack bytes, and of what follows dyn_size.
    let data_at = stack.data.as_ptr() as usize - record.as_ptr() as usize;
    let size_at = data_at - 8;
    let after = data_at + stack.data.len() + 8;
    let new_len = record.len() - (stack.data.len() - keep) - if keep == 0 { 8 } else { 0 };
    let Ok(new_len16) = u16::try_from(new_len) else {
        return false;
    };
    out.extend_from_slice(&record[..size_at]);
    let put64 = |out: &mut Vec<u8>, v: u64| match endian {
        Endian::Little => out.extend_from_slice(&v.to_le_bytes()),
        Endian::Big => out.extend_from_slice(&v.to_be_bytes()),
    };
    put64(out, keep as u64);
    if keep > 0 {
        out.extend_from_slice(&stack.data[..keep]);
        put64(out, stack.dyn_size.min(keep as u64));
    }
    out.extend_from_slice(&record[after..]);
    let size_bytes = match endian {
        Endian::Little => new_len16.to_le_bytes(),
        Endian::Big => new_len16.to_be_bytes(),
    };
    out[6..8].copy_from_slice(&size_bytes);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::sample as st;

    fn attr() -> EventAttr {
        EventAttr {
            sample_type: st::IP | st::TID | st::REGS_USER | st::STACK_USER | st::WEIGHT,
            sample_regs_user: 0b111,
            sample_stack_user: 64,
            ..EventAttr::default()
        }
    }

    fn sample(dyn_size: u64) -> Vec<u8> {
        let mut r = vec![9, 0, 0, 0, 2, 0, 0, 0];
        let words: Vec<u64> = vec![0x401000, (7 << 32) | 7, 2, 1, 2, 3, 64];
        for w in words {
            r.extend_from_slice(&w.to_le_bytes());
        }
        r.extend((0..64u8).map(|i| i + 1));
        r.extend_from_slice(&dyn_size.to_le_bytes());
        r.extend_from_slice(&0xfeedu64.to_le_bytes()); // WEIGHT, after the stack
        let len = r.len() as u16;
        r[6..8].copy_from_slice(&len.to_le_bytes());
        r
    }

    #[test]
    fn trims_stack_to_dyn_size_and_keeps_later_fields() {
        let mut out = Vec::new();
        assert!(trim_user_stack(
            &sample(13),
            &attr(),
            Endian::Little,
            &mut out
        ));
        assert_eq!(out.len(), sample(13).len() - 48);
        let s = parse_sample(&out[8..], 2, 0, &attr(), Endian::Little).unwrap();
        let stack = s.user_stack.unwrap();
        assert_eq!(stack.data, &(1..=16).collect::<Vec<u8>>()[..]);
        assert_eq!(stack.dyn_size, 13);
        assert_eq!(s.user_regs.unwrap().get(2), Some(3));
        assert_eq!(&out[out.len() - 8..], &0xfeedu64.to_le_bytes());
        assert_eq!(u16::from_le_bytes([out[6], out[7]]) as usize, out.len());
    }

    #[test]
    fn trims_to_a_limit_below_dyn_size() {
        let mut out = Vec::new();
        assert!(trim_user_stack_to(
            &sample(40),
            &attr(),
            Endian::Little,
            10,
            &mut out
        ));
        let s = parse_sample_record(&out, 0, &attr(), Endian::Little).unwrap();
        let stack = s.user_stack.unwrap();
        assert_eq!(stack.data.len(), 16);
        assert_eq!(stack.dyn_size, 16, "dyn_size never exceeds the bytes kept");
    }

    #[test]
    fn empty_stack_drops_dyn_size_and_full_stack_is_left_alone() {
        let mut out = Vec::new();
        assert!(trim_user_stack(
            &sample(0),
            &attr(),
            Endian::Little,
            &mut out
        ));
        let s = parse_sample(&out[8..], 2, 0, &attr(), Endian::Little).unwrap();
        assert_eq!(s.user_stack.unwrap().data.len(), 0);
        assert!(!trim_user_stack(
            &sample(64),
            &attr(),
            Endian::Little,
            &mut out
        ));
        assert!(out.is_empty());
    }

    /// A sample of IP and a branch stack, with or without hw_idx, as the kernel lays it out.
    fn branch_sample(nr_claimed: u64, hw_idx: Option<u64>, entries: &[[u64; 3]]) -> Vec<u8> {
        let mut r = vec![9, 0, 0, 0, 2, 0, 0, 0];
        let mut words = vec![0x401000, nr_claimed];
        words.extend(hw_idx);
        words.extend(entries.iter().flatten());
        for w in words {
            r.extend_from_slice(&w.to_le_bytes());
        }
        let len = r.len() as u16;
        r[6..8].copy_from_slice(&len.to_le_bytes());
        r
    }

    fn branch_attr(branch_sample_type: u64) -> EventAttr {
        EventAttr {
            sample_type: st::IP | st::BRANCH_STACK,
            branch_sample_type,
            ..EventAttr::default()
        }
    }

    #[test]
    fn branch_stack_entries_with_and_without_hw_index() {
        let entries = [[0x10, 0x20, 1], [0x30, 0x40, 2]];
        for hw_idx in [None, Some(5)] {
            let bits = BRANCH_SAMPLE_CALL_STACK
                | if hw_idx.is_some() {
                    BRANCH_SAMPLE_HW_INDEX
                } else {
                    0
                };
            let record = branch_sample(2, hw_idx, &entries);
            let s = parse_sample_record(&record, 0, &branch_attr(bits), Endian::Little).unwrap();
            let b = s.branch_stack.unwrap();
            assert_eq!(b.hw_idx, hw_idx);
            assert!(b.call_stack);
            assert_eq!(b.len(), 2);
            let got: Vec<[u64; 3]> = b.iter().map(|e| [e.from, e.to, e.flags]).collect();
            assert_eq!(got, entries);
            assert_eq!(b.get(2), None);
        }
        let record = branch_sample(2, None, &entries);
        let plain = parse_sample_record(&record, 0, &branch_attr(0), Endian::Little).unwrap();
        assert!(!plain.branch_stack.unwrap().call_stack);
    }

    #[test]
    fn branch_stack_claiming_more_entries_than_the_record_holds_is_refused() {
        let entries = [[0x10, 0x20, 1]];
        for nr in [2, u64::MAX / 3, u64::MAX] {
            let record = branch_sample(nr, Some(0), &entries);
            let attr = branch_attr(BRANCH_SAMPLE_CALL_STACK | BRANCH_SAMPLE_HW_INDEX);
            assert!(parse_sample_record(&record, 0, &attr, Endian::Little).is_err());
        }
        // Without the hw_idx bit the same bytes are one entry short of what hw_idx shifted.
        let record = branch_sample(1, Some(0), &entries);
        let s = parse_sample_record(&record, 0, &branch_attr(0), Endian::Little).unwrap();
        assert_eq!(s.branch_stack.unwrap().get(0).unwrap().from, 0);
    }

    #[test]
    fn read_values_in_every_read_format_layout() {
        use crate::abi::read_format as rf;
        use crate::write::{sample_record, ReadValue, ReadValues, SampleFields};
        // Every combination of the layout bits, group and single; the callchain after the
        // values shows the cursor ended where the values do.
        for bits in 0..32u64 {
            let f = (if bits & 1 != 0 {
                rf::TOTAL_TIME_ENABLED
            } else {
                0
            }) | (if bits & 2 != 0 {
                rf::TOTAL_TIME_RUNNING
            } else {
                0
            }) | (if bits & 4 != 0 { rf::ID } else { 0 })
                | (if bits & 8 != 0 { rf::GROUP } else { 0 })
                | (if bits & 16 != 0 { rf::LOST } else { 0 });
            let attr = EventAttr {
                sample_type: st::IP | st::READ | st::CALLCHAIN,
                read_format: f,
                ..EventAttr::default()
            };
            let n = if f & rf::GROUP != 0 { 3 } else { 1 };
            let values: Vec<ReadValue> = (0..n)
                .map(|i| ReadValue {
                    value: 1000 + i,
                    id: 20 + i,
                    lost: 7 + i,
                })
                .collect();
            let fields = SampleFields {
                ip: 0x401000,
                read: Some(ReadValues {
                    time_enabled: 555,
                    time_running: 444,
                    values,
                }),
                callchain: vec![0xabc, 0xdef],
                ..SampleFields::default()
            };
            let record = sample_record(&attr, &fields).unwrap();
            let s = parse_sample_record(&record, 0, &attr, Endian::Little).unwrap();
            let read = s.read.unwrap();
            let want: Vec<(u64, Option<u64>)> = (0..n)
                .map(|i| (1000 + i, (f & rf::ID != 0).then_some(20 + i)))
                .collect();
            assert_eq!(read.values(), want, "read_format {f:#x}");
            assert_eq!(
                read.time_enabled,
                (f & rf::TOTAL_TIME_ENABLED != 0).then_some(555)
            );
            assert_eq!(
                read.time_running,
                (f & rf::TOTAL_TIME_RUNNING != 0).then_some(444)
            );
            let chain: Vec<u64> = s.callchain.unwrap().iter().collect();
            assert_eq!(chain, [0xabc, 0xdef], "read_format {f:#x}");
        }
    }

    #[test]
    fn memory_fields_in_the_kernel_order() {
        use crate::write::{sample_record, SampleFields};
        // data_src of a remote-HITM load: fields sit where the kernel puts them, so a shifted
        // parse would show up as swapped values.
        let fields = SampleFields {
            ip: 0x401000,
            addr: 0x7f00_0000_1040,
            callchain: vec![0xabc],
            weight: Weight::Struct {
                var1_dw: 312,
                var2_w: 17,
                var3_w: 5,
            }
            .word(),
            data_src: 0x6810_0142,
            phys_addr: 0x1_2345_6040,
            data_page_size: 4096,
            code_page_size: 2 << 20,
            ..SampleFields::default()
        };
        let memory = st::DATA_SRC | st::PHYS_ADDR | st::DATA_PAGE_SIZE | st::CODE_PAGE_SIZE;
        for weight_bit in [st::WEIGHT, st::WEIGHT_STRUCT, 0] {
            for extra in [0, memory] {
                let attr = EventAttr {
                    sample_type: st::IP | st::ADDR | st::CALLCHAIN | weight_bit | extra,
                    ..EventAttr::default()
                };
                let record = sample_record(&attr, &fields).unwrap();
                let s = parse_sample_record(&record, 0, &attr, Endian::Little).unwrap();
                let want_weight = match weight_bit {
                    st::WEIGHT => Some(Weight::Full(fields.weight)),
                    st::WEIGHT_STRUCT => Some(Weight::Struct {
                        var1_dw: 312,
                        var2_w: 17,
                        var3_w: 5,
                    }),
                    _ => None,
                };
                assert_eq!(s.weight, want_weight);
                let on = |v: u64| (extra != 0).then_some(v);
                assert_eq!(s.data_src, on(0x6810_0142));
                assert_eq!(s.phys_addr, on(0x1_2345_6040));
                assert_eq!(s.data_page_size, on(4096));
                assert_eq!(s.code_page_size, on(2 << 20));
                assert_eq!(s.addr, Some(0x7f00_0000_1040));
            }
        }
        // The struct's latency is var1_dw, the full word's is all of it (perf's
        // `arch_perf_parse_sample_weight`).
        let w = Weight::from_word(fields.weight, true);
        assert_eq!(w.latency(), 312);
        assert_eq!(w.word(), 312 | 17 << 32 | 5 << 48);
        assert_eq!(Weight::from_word(fields.weight, false).latency(), w.word());
    }

    #[test]
    fn fields_between_data_src_and_phys_addr_are_skipped() {
        // TRANSACTION, REGS_INTR (abi + one value per mask bit) and CGROUP, hand-laid.
        let attr = EventAttr {
            sample_type: st::IP
                | st::DATA_SRC
                | st::TRANSACTION
                | st::REGS_INTR
                | st::PHYS_ADDR
                | st::CGROUP
                | st::DATA_PAGE_SIZE,
            sample_regs_intr: 0b1011,
            ..EventAttr::default()
        };
        let words: [u64; 11] = [0x401000, 0x42, 7, 2, 10, 11, 12, 0x9000, 33, 4096, 0];
        let mut r = vec![9, 0, 0, 0, 2, 0, 0, 0];
        for w in &words[..10] {
            r.extend_from_slice(&w.to_le_bytes());
        }
        let len = r.len() as u16;
        r[6..8].copy_from_slice(&len.to_le_bytes());
        let s = parse_sample_record(&r, 0, &attr, Endian::Little).unwrap();
        assert_eq!(s.data_src, Some(0x42));
        assert_eq!(s.transaction, Some(7));
        assert_eq!(s.phys_addr, Some(0x9000));
        assert_eq!(s.cgroup, Some(33));
        assert_eq!(s.data_page_size, Some(4096));
        // One word short: the error names the field.
        r.truncate(r.len() - 8);
        let len = r.len() as u16;
        r[6..8].copy_from_slice(&len.to_le_bytes());
        let err = parse_sample_record(&r, 0, &attr, Endian::Little).unwrap_err();
        assert_eq!(err, "data page size");
    }
}
