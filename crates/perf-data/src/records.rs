//! The records of the data section, in time order.
//!
//! The kernel writes one ring buffer per CPU and perf drains them in rounds, so the file is
//! only ordered per round: perf writes PERF_RECORD_FINISHED_ROUND after each and promises that
//! no record after it is older than the newest record of the round before. We sort the way
//! `perf script` does: keep an index (time, offset) of the records not yet handed out, and at
//! each round end release those no newer than the previous round's newest. The records stay in
//! the memory map; only the index is held.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use memmap2::Mmap;

use crate::abi::{misc, record, sample};
use crate::attr::EventAttr;
use crate::bytes::{c_str, u16_at, u32_at, u64_at, Cursor, Endian};
use crate::error::{ErrorKind, ReadError};
use crate::file::{IdLayout, PerfData};
use crate::sample::{parse_read, parse_sample, ReadView, Sample, U64s};

/// A mapping of a file (or anonymous memory) into a process: MMAP and MMAP2 records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MmapRecord<'a> {
    pub pid: i32,
    pub tid: i32,
    pub addr: u64,
    pub len: u64,
    /// File offset of `addr`.
    pub pgoff: u64,
    pub path: &'a [u8],
    /// Build id carried by MMAP2 records when the kernel was asked for it.
    pub build_id: Option<&'a [u8]>,
    /// PROT_* bits (MMAP2 only; 0 for MMAP).
    pub prot: u32,
    /// False for data mappings (PERF_RECORD_MISC_MMAP_DATA).
    pub executable: bool,
    /// PERF_RECORD_MISC_CPUMODE of the record (kernel or user mapping).
    pub cpumode: u16,
}

/// What one record says.
// Records are handed out one at a time and never stored in bulk, so the size of the Sample
// variant costs nothing worth a Box per sample.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordKind<'a> {
    Sample(Sample<'a>),
    Mmap(MmapRecord<'a>),
    /// Counter values of a thread at a time (PERF_RECORD_READ, laid out per the event's
    /// read_format): the kernel's at a thread's exit with `inherit_stat`; the values a
    /// `--switch-output` file starts from (see `crates/record/src/rotate.rs`).
    Read(ReadRecord<'a>),
    /// A thread's name, set by exec (`exec` true) or prctl.
    Comm {
        pid: i32,
        tid: i32,
        name: &'a [u8],
        exec: bool,
    },
    Fork {
        pid: i32,
        ppid: i32,
        tid: i32,
        ptid: i32,
    },
    Exit {
        pid: i32,
        ppid: i32,
        tid: i32,
        ptid: i32,
    },
    /// The kernel dropped `lost` records of event `id` because the ring buffer was full.
    Lost {
        id: u64,
        lost: u64,
    },
    /// Samples dropped (PERF_RECORD_LOST_SAMPLES).
    LostSamples {
        lost: u64,
    },
    /// The kernel throttled (`throttled` true) or unthrottled an event.
    Throttle {
        id: u64,
        throttled: bool,
    },
    /// A task came onto (`out` false) or left (`out` true) a CPU (PERF_RECORD_SWITCH, from
    /// `attr.context_switch`; PERF_RECORD_SWITCH_CPU_WIDE in a per-CPU recording).
    Switch {
        out: bool,
        /// On a switch-out: the task was still runnable (preempted), not blocked.
        preempt: bool,
        /// The task switching, `(pid, tid)` from the record's sample_id trailer; `None` when
        /// the event's sample_type has no TID.
        task: Option<(i32, i32)>,
        /// SWITCH_CPU_WIDE only: the task switched to (on a switch-out) or from (on a
        /// switch-in), `(pid, tid)`.
        other: Option<(i32, i32)>,
    },
    /// A cgroup and its path under the cgroup root, `/` for the root itself
    /// (PERF_RECORD_CGROUP: the kernel's for cgroups created while recording with
    /// `attr.cgroup`, perf's synthesized ones for those that existed). Samples name it by `id`
    /// (PERF_SAMPLE_CGROUP, [`Sample::cgroup`]).
    Cgroup {
        id: u64,
        path: &'a [u8],
    },
    /// The namespaces of thread `tid` of `pid` (PERF_RECORD_NAMESPACES, `attr.namespaces`).
    Namespaces(NamespacesRecord<'a>),
    /// Any other record type, kept so callers can count them.
    Other,
}

/// A PERF_RECORD_NAMESPACES: the namespaces of a thread when it was created or changed them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamespacesRecord<'a> {
    pub pid: i32,
    pub tid: i32,
    /// `(dev, inode)` of each namespace, in the kernel's order (`NET_NS_INDEX`, `UTS`, `IPC`,
    /// `PID`, `USER`, `MNT`, `CGROUP`, `TIME`: as many as the record says, checked against
    /// its size), u64 pairs.
    pub links: U64s<'a>,
}

impl NamespacesRecord<'_> {
    /// How many namespaces the record lists.
    pub fn len(&self) -> usize {
        self.links.len() / 2
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `(dev, inode)` of namespace `index` (see [`NamespacesRecord::links`]).
    pub fn link(&self, index: usize) -> Option<(u64, u64)> {
        let at = index.checked_mul(2)?;
        Some((self.links.get(at)?, self.links.get(at + 1)?))
    }
}

/// One record with where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Byte offset of the record header in the file.
    pub offset: u64,
    pub record_type: u32,
    pub misc: u16,
    /// Time from the sample or the sample_id trailer, if the record has one.
    pub time: Option<u64>,
    /// Index of the event (in [`PerfData::attrs`]) the record belongs to.
    pub attr: Option<usize>,
    pub kind: RecordKind<'a>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct IndexEntry {
    time: u64,
    offset: u64,
}

/// Iterator over the records of a file in time order. Stops after the first error.
pub struct Records<'a> {
    file: &'a PerfData,
    /// Next byte to walk in the data section.
    pos: u64,
    ready: VecDeque<IndexEntry>,
    pending: Vec<IndexEntry>,
    prev_round_max: u64,
    round_max: u64,
    last_time: u64,
    walked_to_end: bool,
    failed: bool,
    /// Set when a file with data size 0 ends inside a record: the offset of that record.
    pub cut_short_at: Option<u64>,
    /// The file is read through a window of the map: pages ahead of the walk are populated
    /// in batches (cheaper than a fault per page) and pages behind every record still to be
    /// handed out are released, so resident memory stays bounded on files of any size.
    populated_to: u64,
    released_to: u64,
    /// Pages the file in on another thread, a window ahead of the walk, when the file is
    /// large enough for it to pay: mapping pages in is kernel work that costs as much as
    /// decoding and unwinding them, and can run on the other core.
    pager: Option<Pager>,
    /// Whether the caller releases pages behind the reader ([`Records::keep_pages`]).
    keep_pages: bool,
}

/// The page-in thread. Releasing stays on the reader's thread, so that resident memory stays
/// bounded however late the pager runs.
struct Pager {
    /// Wakes the pager up after `wanted_to` moved.
    wake: Option<SyncSender<()>>,
    /// How far the reader wants the file mapped in.
    wanted_to: Arc<AtomicU64>,
    /// Where the reader has released up to: the pager never maps those bytes back in.
    released_to: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Pager {
    fn start(map: Arc<Mmap>) -> Option<Pager> {
        let (wake, woken) = sync_channel::<()>(1);
        let wanted_to = Arc::new(AtomicU64::new(0));
        let released_to = Arc::new(AtomicU64::new(0));
        let (wanted, released) = (wanted_to.clone(), released_to.clone());
        let thread = std::thread::Builder::new()
            .name("perf-data pager".into())
            .spawn(move || {
                let mut done = 0u64;
                while woken.recv().is_ok() {
                    // Up to where the reader wants it now, a window at a time, so that a
                    // reader that moved on is followed.
                    loop {
                        let want = wanted.load(Ordering::Relaxed).min(map.len() as u64);
                        // Only ahead of the reader: not what it released, nor what it has
                        // passed (it may release that while it is being mapped in).
                        let from = done
                            .max(released.load(Ordering::Relaxed))
                            .max(want.saturating_sub(2 * PAGER_WINDOW));
                        if from >= want {
                            break;
                        }
                        let to = want.min(from + PAGER_WINDOW);
                        populate(&map, from as usize, (to - from) as usize);
                        done = to;
                    }
                }
            })
            .ok()?;
        Some(Pager {
            wake: Some(wake),
            wanted_to,
            released_to,
            thread: Some(thread),
        })
    }

    /// Asks for the file to be mapped in up to `to`.
    fn want(&self, to: u64) {
        self.wanted_to.fetch_max(to, Ordering::Relaxed);
        if let Some(wake) = &self.wake {
            // Full: the pager has a wake-up pending and will see the new mark.
            let _ = wake.try_send(());
        }
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        // Closing the channel ends the thread once it has done what it was asked.
        self.wake.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Maps `len` bytes of `map` from `start` in. Only a hint: older kernels lack
/// MADV_POPULATE_READ, and the pages fault in as read.
fn populate(map: &Mmap, start: usize, len: usize) {
    let _ = map.advise_range(memmap2::Advice::PopulateRead, start, len);
}

/// Bytes released behind the reader at a time, at least.
const RELEASE_BATCH: u64 = 1 << 20;

/// Files with less data than this are read without a pager thread.
const PAGER_MIN_DATA: u64 = 4 * POPULATE_WINDOW;

/// Bytes populated ahead of the walk at a time.
const POPULATE_WINDOW: u64 = 2 << 20;
/// The same with a pager, which keeps one more window mapped: smaller, as it adds to the
/// resident memory.
const PAGER_WINDOW: u64 = 512 << 10;
/// Page size assumed for releasing; on kernels with larger pages the advice fails harmlessly.
const PAGE: u64 = 4096;

impl PerfData {
    /// The records of the data section in time order. A large file is paged in ahead of
    /// the walk on another thread; [`PerfData::records_on_one_thread`] does not.
    pub fn records(&self) -> Records<'_> {
        let mut records = self.records_on_one_thread();
        if self.data.end - self.data.start >= PAGER_MIN_DATA {
            records.pager = Pager::start(self.map.clone());
        }
        records
    }

    /// The records of the data section in time order, read on the calling thread only.
    pub fn records_on_one_thread(&self) -> Records<'_> {
        Records {
            file: self,
            pos: self.data.start,
            ready: VecDeque::new(),
            pending: Vec::new(),
            prev_round_max: 0,
            round_max: 0,
            last_time: 0,
            walked_to_end: false,
            failed: false,
            cut_short_at: None,
            populated_to: self.data.start & !(PAGE - 1),
            released_to: 0,
            pager: None,
            keep_pages: false,
        }
    }

    /// The records in file order, without sorting (what the bytes say, where they are).
    pub fn records_in_file_order(&self) -> impl Iterator<Item = Result<Record<'_>, ReadError>> {
        let mut pos = self.data.start;
        let mut done = false;
        std::iter::from_fn(move || {
            if done {
                return None;
            }
            match self.next_header(pos) {
                Ok(Some((rtype, size))) => {
                    let offset = pos;
                    pos += size;
                    if rtype == record::FINISHED_ROUND {
                        return Some(Ok(Record {
                            offset,
                            record_type: rtype,
                            misc: 0,
                            time: None,
                            attr: None,
                            kind: RecordKind::Other,
                        }));
                    }
                    let r = self.parse_record(offset);
                    if r.is_err() {
                        done = true;
                    }
                    Some(r)
                }
                Ok(None) => None,
                Err(e) => {
                    done = true;
                    match e {
                        HeaderError::CutShort => None,
                        HeaderError::Error(e) => Some(Err(e)),
                    }
                }
            }
        })
    }

    /// The (type, size) of the record header at `pos`; `None` at the end of the data.
    fn next_header(&self, pos: u64) -> Result<Option<(u32, u64)>, HeaderError> {
        let end = self.data.end;
        if pos >= end {
            return Ok(None);
        }
        let map = &self.map[..];
        let p = pos as usize;
        let (Some(rtype), Some(size)) =
            (u32_at(map, p, self.endian), u16_at(map, p + 6, self.endian))
        else {
            return self.cut_short(pos, 0, end - pos);
        };
        let size = size as u64;
        if size < 8 {
            return Err(HeaderError::Error(self.error(
                Some(pos),
                ErrorKind::BadRecordSize {
                    record_type: rtype,
                    size,
                },
            )));
        }
        if pos + size > end {
            return self.cut_short(pos, rtype, size);
        }
        if rtype == record::COMPRESSED || rtype == record::COMPRESSED2 {
            // Files with the COMPRESSED feature were decompressed at open.
            return Err(HeaderError::Error(
                self.error(Some(pos), ErrorKind::UnexpectedCompressed(rtype)),
            ));
        }
        if rtype == record::AUXTRACE {
            // The AUX data (its size is the record's first field) follows the record; it is
            // skipped with it (PerfData::open warned that it is not decoded).
            let payload = u64_at(map, p + 8, self.endian).unwrap_or(0);
            return match size
                .checked_add(payload)
                .filter(|s| pos.checked_add(*s).is_some_and(|n| n <= end))
            {
                Some(total) => Ok(Some((rtype, total))),
                None => self.cut_short(pos, rtype, size),
            };
        }
        Ok(Some((rtype, size)))
    }

    fn cut_short<T>(&self, pos: u64, rtype: u32, size: u64) -> Result<T, HeaderError> {
        if self.data_size_was_zero {
            // A killed recorder can leave half a record at the end: not an error.
            Err(HeaderError::CutShort)
        } else {
            Err(HeaderError::Error(self.error(
                Some(pos),
                ErrorKind::BadRecordSize {
                    record_type: rtype,
                    size,
                },
            )))
        }
    }

    /// Which event a record belongs to.
    fn attr_of(&self, rtype: u32, body: &[u8]) -> Result<usize, ErrorKind> {
        let e = self.endian;
        let id = match self.id_layout {
            IdLayout::Single => return Ok(0),
            IdLayout::Identifier => {
                if rtype == record::SAMPLE {
                    u64_at(body, 0, e)
                } else if self.attrs[0].sample_id_all() {
                    body.len().checked_sub(8).and_then(|o| u64_at(body, o, e))
                } else {
                    return Ok(0);
                }
            }
            IdLayout::Uniform => {
                let a = &self.attrs[0];
                let t = a.sample_type;
                if rtype == record::SAMPLE {
                    if t & sample::IDENTIFIER != 0 {
                        u64_at(body, 0, e)
                    } else if t & sample::ID != 0 {
                        let mut off = 0;
                        for bit in [sample::IP, sample::TID, sample::TIME, sample::ADDR] {
                            if t & bit != 0 {
                                off += 8;
                            }
                        }
                        u64_at(body, off, e)
                    } else {
                        return Ok(0);
                    }
                } else if a.sample_id_all() && t & (sample::IDENTIFIER | sample::ID) != 0 {
                    let mut from_end = 8;
                    if t & sample::IDENTIFIER == 0 {
                        // ID is followed by STREAM_ID and CPU in the trailer.
                        for bit in [sample::STREAM_ID, sample::CPU] {
                            if t & bit != 0 {
                                from_end += 8;
                            }
                        }
                    }
                    body.len()
                        .checked_sub(from_end)
                        .and_then(|o| u64_at(body, o, e))
                } else {
                    return Ok(0);
                }
            }
        };
        let id = id.ok_or(ErrorKind::ShortRecord {
            record_type: rtype,
            detail: "no room for the event id",
        })?;
        match self.id_to_attr.get(&id) {
            Some(&attr) => Ok(attr),
            // perf synthesizes records (the kernel mmap, comms of existing threads) with id 0
            // or an id of no event; like perf, give those to the first event.
            None if rtype != record::SAMPLE || id == 0 => Ok(0),
            None => Err(ErrorKind::UnknownId(id)),
        }
    }

    /// Time of a record (sample field, or sample_id trailer), if it has one.
    fn time_of(&self, rtype: u32, attr: usize, body: &[u8]) -> Option<u64> {
        record_time(&self.attrs[attr], rtype, body, self.endian)
    }

    /// Parses the record whose header is at `offset` (already checked by `next_header`).
    fn parse_record(&self, offset: u64) -> Result<Record<'_>, ReadError> {
        let e = self.endian;
        let map = &self.map[..];
        let p = offset as usize;
        let rtype = u32_at(map, p, e).unwrap_or(0);
        let misc = u16_at(map, p + 4, e).unwrap_or(0);
        let size = u16_at(map, p + 6, e).unwrap_or(0) as usize;
        let body = &map[p + 8..p + size];
        let err = |kind| self.error(Some(offset), kind);
        let short = |detail| {
            err(ErrorKind::ShortRecord {
                record_type: rtype,
                detail,
            })
        };
        if rtype >= record::USER_TYPE_START {
            return Ok(Record {
                offset,
                record_type: rtype,
                misc,
                time: None,
                attr: None,
                kind: RecordKind::Other,
            });
        }
        let attr = self.attr_of(rtype, body).map_err(err)?;
        let time = self.time_of(rtype, attr, body);
        // Non-sample records end with the sample_id trailer; strings stop before it.
        let trailer = self.attrs[attr].sample_id_size();
        let fields = &body[..body.len().saturating_sub(trailer)];
        let kind = match rtype {
            record::SAMPLE => RecordKind::Sample(
                parse_sample(body, misc, attr, &self.attrs[attr], e).map_err(&short)?,
            ),
            record::READ => RecordKind::Read(
                parse_read_record(fields, &self.attrs[attr], e).map_err(|detail| {
                    if detail == READ_TOO_LONG {
                        err(ErrorKind::BadRecordSize {
                            record_type: rtype,
                            size: size as u64,
                        })
                    } else {
                        short(detail)
                    }
                })?,
            ),
            _ => with_trailer(
                parse_side_band(rtype, misc, fields, e).map_err(&short)?,
                &self.attrs[attr],
                rtype,
                body,
                e,
            ),
        };
        Ok(Record {
            offset,
            record_type: rtype,
            misc,
            time,
            attr: Some(attr),
            kind,
        })
    }
}

enum HeaderError {
    /// The data ends inside a record of a file whose header said data size 0.
    CutShort,
    Error(ReadError),
}

impl<'a> Records<'a> {
    /// Walks file records into `pending` up to the next round end (or the end of the data),
    /// then moves what is safe to hand out into `ready`.
    fn fill(&mut self) -> Result<(), ReadError> {
        let f = self.file;
        loop {
            if let Some(pager) = &self.pager {
                // The window after the one being read is mapped in meanwhile, on the pager.
                if self.pos + PAGER_WINDOW >= self.populated_to {
                    self.populated_to = self.pos + 2 * PAGER_WINDOW;
                    pager.want(self.populated_to);
                }
            } else if self.pos >= self.populated_to {
                let map_len = f.map.len() as u64;
                while self.populated_to < map_len && self.populated_to <= self.pos {
                    let len = POPULATE_WINDOW.min(map_len - self.populated_to);
                    populate(&f.map, self.populated_to as usize, len as usize);
                    self.populated_to += POPULATE_WINDOW;
                }
            }
            match f.next_header(self.pos) {
                Ok(Some((rtype, size))) => {
                    let offset = self.pos;
                    self.pos += size;
                    if rtype == record::FINISHED_ROUND {
                        self.pending.sort_unstable();
                        let cut = self
                            .pending
                            .partition_point(|e| e.time <= self.prev_round_max);
                        self.ready.extend(self.pending.drain(..cut));
                        self.prev_round_max = self.round_max;
                        if !self.ready.is_empty() {
                            self.release_behind();
                            return Ok(());
                        }
                        continue;
                    }
                    let time = if rtype < record::USER_TYPE_START {
                        let p = offset as usize + 8;
                        let body = &f.map[p..offset as usize + size as usize];
                        let attr = f
                            .attr_of(rtype, body)
                            .map_err(|k| f.error(Some(offset), k))?;
                        f.time_of(rtype, attr, body)
                    } else {
                        None
                    };
                    // Records without a time keep their place after the record before them.
                    let time = time.unwrap_or(self.last_time);
                    self.last_time = time;
                    self.round_max = self.round_max.max(time);
                    self.pending.push(IndexEntry { time, offset });
                }
                Ok(None) => break,
                Err(HeaderError::CutShort) => {
                    self.cut_short_at = Some(self.pos);
                    break;
                }
                Err(HeaderError::Error(e)) => return Err(e),
            }
        }
        self.walked_to_end = true;
        self.pending.sort_unstable();
        self.ready.extend(self.pending.drain(..));
        Ok(())
    }
}

impl Records<'_> {
    /// The offset of the oldest record not handed out yet: no record still to come lies
    /// below it.
    pub fn unread_from(&self) -> u64 {
        self.ready
            .iter()
            .chain(&self.pending)
            .map(|e| e.offset)
            .min()
            .unwrap_or(self.pos)
    }

    /// Leaves releasing the pages behind the reader to the caller
    /// ([`PerfData::release_pages`]), for records used after the next ones are read (on
    /// another thread).
    pub fn keep_pages(&mut self) {
        self.keep_pages = true;
    }

    /// Drops the pages below the oldest record still to be handed out from this process's
    /// memory (they stay in the page cache; touching them again would fault them back in).
    fn release_behind(&mut self) {
        let low = self.unread_from() & !(PAGE - 1);
        // In batches: each release flushes the TLB of every core the process runs on.
        if low >= self.released_to + RELEASE_BATCH {
            if let Some(pager) = &self.pager {
                pager.released_to.store(low, Ordering::Relaxed);
            }
            if !self.keep_pages {
                self.file.release_pages(self.released_to..low);
            }
            self.released_to = low;
        }
    }
}

impl PerfData {
    /// Drops the whole pages of `range` (file offsets) from this process's memory: for bytes
    /// read for the last time. They stay in the page cache, and reading them again faults
    /// them back in.
    pub fn release_pages(&self, range: std::ops::Range<u64>) {
        let start = range.start.div_ceil(PAGE) * PAGE;
        let end = range.end.min(self.map.len() as u64) & !(PAGE - 1);
        if start < end {
            // SAFETY: the map is a read-only file mapping that nothing writes; MADV_DONTNEED
            // only drops our page table entries, and any later read of these bytes (through
            // records still held, too) faults the same contents back in.
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start as usize,
                    (end - start) as usize,
                )
            };
        }
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        while self.ready.is_empty() {
            if self.walked_to_end {
                return None;
            }
            if let Err(e) = self.fill() {
                self.failed = true;
                return Some(Err(e));
            }
        }
        let entry = self.ready.pop_front()?;
        let r = self.file.parse_record(entry.offset);
        if r.is_err() {
            self.failed = true;
        }
        Some(r)
    }
}

/// Parses a non-sample kernel record (MMAP, MMAP2, COMM, FORK, EXIT, LOST, ...): its
/// `fields`, without the 8-byte header and without the sample_id trailer. Errors say which
/// field ran out. Used by the reader and by the recorder, which sees records as they come.
pub fn parse_side_band(
    rtype: u32,
    misc: u16,
    fields: &[u8],
    e: crate::bytes::Endian,
) -> Result<RecordKind<'_>, &'static str> {
    let as_i32 = |v: u32| v as i32;
    let mut c = Cursor::new(fields, e);

    let kind = match rtype {
        record::MMAP | record::MMAP2 => {
            let (Some(pid), Some(tid), Some(addr), Some(len), Some(pgoff)) =
                (c.u32(), c.u32(), c.u64(), c.u64(), c.u64())
            else {
                return Err("mmap fields");
            };
            let mut build_id = None;
            let mut prot = 0;
            if rtype == record::MMAP2 {
                let Some(id_or_inode) = c.bytes(24) else {
                    return Err("mmap2 device/build id");
                };
                if misc & misc::MMAP_BUILD_ID != 0 {
                    let n = (id_or_inode[0] as usize).min(20);
                    build_id = Some(&id_or_inode[4..4 + n]);
                }
                let (Some(p), Some(_flags)) = (c.u32(), c.u32()) else {
                    return Err("mmap2 prot/flags");
                };
                prot = p;
            }
            RecordKind::Mmap(MmapRecord {
                pid: as_i32(pid),
                tid: as_i32(tid),
                addr,
                len,
                pgoff,
                path: c_str(c.remaining()),
                build_id,
                prot,
                executable: misc & misc::MMAP_DATA == 0,
                cpumode: misc & misc::CPUMODE_MASK,
            })
        }
        record::COMM => {
            let (Some(pid), Some(tid)) = (c.u32(), c.u32()) else {
                return Err("comm fields");
            };
            RecordKind::Comm {
                pid: as_i32(pid),
                tid: as_i32(tid),
                name: c_str(c.remaining()),
                exec: misc & misc::COMM_EXEC != 0,
            }
        }
        record::FORK | record::EXIT => {
            let (Some(pid), Some(ppid), Some(tid), Some(ptid)) =
                (c.u32(), c.u32(), c.u32(), c.u32())
            else {
                return Err("fork/exit fields");
            };
            let (pid, ppid, tid, ptid) = (as_i32(pid), as_i32(ppid), as_i32(tid), as_i32(ptid));
            if rtype == record::FORK {
                RecordKind::Fork {
                    pid,
                    ppid,
                    tid,
                    ptid,
                }
            } else {
                RecordKind::Exit {
                    pid,
                    ppid,
                    tid,
                    ptid,
                }
            }
        }
        record::LOST => {
            let (Some(id), Some(lost)) = (c.u64(), c.u64()) else {
                return Err("lost fields");
            };
            RecordKind::Lost { id, lost }
        }
        record::LOST_SAMPLES => {
            let Some(lost) = c.u64() else {
                return Err("lost samples count");
            };
            RecordKind::LostSamples { lost }
        }
        record::THROTTLE | record::UNTHROTTLE => {
            let (Some(_time), Some(id)) = (c.u64(), c.u64()) else {
                return Err("throttle fields");
            };
            RecordKind::Throttle {
                id,
                throttled: rtype == record::THROTTLE,
            }
        }
        record::SWITCH | record::SWITCH_CPU_WIDE => {
            let other = if rtype == record::SWITCH_CPU_WIDE {
                let (Some(pid), Some(tid)) = (c.u32(), c.u32()) else {
                    return Err("switch next/prev pid/tid");
                };
                Some((as_i32(pid), as_i32(tid)))
            } else {
                None
            };
            let out = misc & misc::SWITCH_OUT != 0;
            RecordKind::Switch {
                out,
                preempt: out && misc & misc::SWITCH_OUT_PREEMPT != 0,
                // Only the trailer says which task: filled in by the caller that has it.
                task: None,
                other,
            }
        }
        record::CGROUP => {
            let Some(id) = c.u64() else {
                return Err("cgroup id");
            };
            let path = c.remaining();
            // The kernel and perf end the path with a NUL (padding to 8 bytes after it).
            if !path.contains(&0) {
                return Err("cgroup path without its NUL");
            }
            RecordKind::Cgroup {
                id,
                path: c_str(path),
            }
        }
        record::NAMESPACES => {
            let (Some(pid), Some(tid), Some(nr)) = (c.u32(), c.u32(), c.u64()) else {
                return Err("namespaces pid/tid/count");
            };
            let Some(links) = nr.checked_mul(2).and_then(|n| c.u64s(n)) else {
                return Err("namespaces links (fewer bytes than the count says)");
            };
            RecordKind::Namespaces(NamespacesRecord {
                pid: as_i32(pid),
                tid: as_i32(tid),
                links: U64s::new(links, e),
            })
        }
        _ => RecordKind::Other,
    };
    Ok(kind)
}

/// The `(pid, tid)` of the sample_id trailer of a non-sample record of event `attr` (body
/// after the header); `None` without TID in the sample_type or sample_id_all.
fn record_task(attr: &EventAttr, rtype: u32, body: &[u8], e: Endian) -> Option<(i32, i32)> {
    if rtype == record::SAMPLE {
        return None;
    }
    let at = trailer_field(attr, body, sample::TID)?;
    let pid = u32_at(body, at, e)?;
    let tid = u32_at(body, at + 4, e)?;
    Some((pid as i32, tid as i32))
}

/// Offset in `body` of field `field` (TID, TIME, ID, STREAM_ID, CPU or IDENTIFIER) of the
/// sample_id trailer of a non-sample kernel record of event `attr`; `None` when the attr has
/// no such field or no sample_id_all. The trailer holds them in that order, 8 bytes each.
fn trailer_field(attr: &EventAttr, body: &[u8], field: u64) -> Option<usize> {
    const ORDER: [u64; 6] = [
        sample::TID,
        sample::TIME,
        sample::ID,
        sample::STREAM_ID,
        sample::CPU,
        sample::IDENTIFIER,
    ];
    let t = attr.sample_type;
    if t & field == 0 || !attr.sample_id_all() {
        return None;
    }
    let position = ORDER.iter().position(|&f| f == field)?;
    let from_end = 8 * ORDER[position..].iter().filter(|&&f| t & f != 0).count();
    body.len().checked_sub(from_end)
}

/// Fills in what only the sample_id trailer says of `kind` (the task of a switch record).
fn with_trailer<'a>(
    mut kind: RecordKind<'a>,
    attr: &EventAttr,
    rtype: u32,
    body: &[u8],
    e: Endian,
) -> RecordKind<'a> {
    if let RecordKind::Switch { task, .. } = &mut kind {
        *task = record_task(attr, rtype, body, e);
    }
    kind
}

/// Time of a record of event `attr` with body `body` (after the header): the sample's TIME,
/// or the TIME of the sample_id trailer of a kernel side-band record; `None` if it has none.
fn record_time(attr: &EventAttr, rtype: u32, body: &[u8], e: Endian) -> Option<u64> {
    let t = attr.sample_type;
    if t & sample::TIME == 0 {
        return None;
    }
    if rtype == record::SAMPLE {
        let mut off = 0;
        for bit in [sample::IDENTIFIER, sample::IP, sample::TID] {
            if t & bit != 0 {
                off += 8;
            }
        }
        u64_at(body, off, e)
    } else if rtype < record::USER_TYPE_START {
        u64_at(body, trailer_field(attr, body, sample::TIME)?, e)
    } else {
        None
    }
}

/// One record borrowed whole (header and body), parsed with the reader's parsers: how the
/// recorder and `stat` read the records they drain from ring buffers, one at a time and
/// without a file around them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// `perf_event_header.type`.
    pub record_type: u32,
    /// `perf_event_header.misc`.
    pub misc: u16,
    /// The record after its 8-byte header.
    pub body: &'a [u8],
    endian: Endian,
}

/// A PERF_RECORD_READ: the counts of thread `tid` of `pid` (written at its exit with
/// `inherit_stat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRecord<'a> {
    pub pid: i32,
    pub tid: i32,
    pub values: ReadView<'a>,
}

impl<'a> RecordView<'a> {
    /// The record at the start of `bytes`; `None` when `bytes` is shorter than a record
    /// header or than the size the header states, or that size is below a header's.
    pub fn parse(bytes: &'a [u8], endian: Endian) -> Option<RecordView<'a>> {
        let record_type = u32_at(bytes, 0, endian)?;
        let misc = u16_at(bytes, 4, endian)?;
        let size = usize::from(u16_at(bytes, 6, endian)?);
        let body = bytes.get(crate::abi::EVENT_HEADER_SIZE..size)?;
        Some(RecordView {
            record_type,
            misc,
            body,
            endian,
        })
    }

    /// The fields of a non-sample record of event `attr`: the body without its sample_id
    /// trailer.
    pub fn fields(&self, attr: &EventAttr) -> &'a [u8] {
        &self.body[..self.body.len().saturating_sub(attr.sample_id_size())]
    }

    /// The record's time (see [`Record::time`]), read per the layout of event `attr`.
    pub fn time(&self, attr: &EventAttr) -> Option<u64> {
        record_time(attr, self.record_type, self.body, self.endian)
    }

    /// The sample of event `attr` (index `attr_index`) this PERF_RECORD_SAMPLE holds.
    pub fn sample(&self, attr_index: usize, attr: &EventAttr) -> Result<Sample<'a>, &'static str> {
        if self.record_type != record::SAMPLE {
            return Err("not a sample record");
        }
        parse_sample(self.body, self.misc, attr_index, attr, self.endian)
    }

    /// What a non-sample kernel record of event `attr` says (see [`parse_side_band`]).
    pub fn side_band(&self, attr: &EventAttr) -> Result<RecordKind<'a>, &'static str> {
        let kind = parse_side_band(self.record_type, self.misc, self.fields(attr), self.endian)?;
        Ok(with_trailer(
            kind,
            attr,
            self.record_type,
            self.body,
            self.endian,
        ))
    }

    /// The counts of a PERF_RECORD_READ of event `attr` (laid out per its read_format).
    pub fn read(&self, attr: &EventAttr) -> Result<ReadRecord<'a>, &'static str> {
        if self.record_type != record::READ {
            return Err("not a read record");
        }
        parse_read_record(self.fields(attr), attr, self.endian)
    }
}

/// A READ record with bytes after its values: the reader's error names its size.
const READ_TOO_LONG: &str = "read values end before the record";

/// The fields of a PERF_RECORD_READ of event `attr` (without header and sample_id trailer):
/// pid, tid and a `struct read_format`, which must fill them exactly.
fn parse_read_record<'a>(
    fields: &'a [u8],
    attr: &EventAttr,
    e: Endian,
) -> Result<ReadRecord<'a>, &'static str> {
    let mut c = Cursor::new(fields, e);
    let (Some(pid), Some(tid)) = (c.u32(), c.u32()) else {
        return Err("read pid/tid");
    };
    let values = parse_read(&mut c, attr.read_format)?;
    if !c.remaining().is_empty() {
        return Err(READ_TOO_LONG);
    }
    Ok(ReadRecord {
        pid: pid as i32,
        tid: tid as i32,
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{read_format, sample as st};
    use crate::attr_flags;
    use crate::write::{
        cgroup_record, comm_record, lost_record, namespaces_record, read_record, sample_record,
        switch_record, ReadValue, ReadValues, SampleFields, SampleId,
    };

    /// The layout the recorder asks for: every side-band record ends with a 32-byte trailer.
    fn attr() -> EventAttr {
        EventAttr {
            sample_type: st::IDENTIFIER | st::IP | st::TID | st::TIME | st::CPU | st::PERIOD,
            read_format: read_format::TOTAL_TIME_ENABLED
                | read_format::TOTAL_TIME_RUNNING
                | read_format::ID,
            flags: attr_flags::SAMPLE_ID_ALL,
            ..EventAttr::default()
        }
    }

    fn sid(time: u64) -> SampleId {
        SampleId {
            pid: 7,
            tid: 8,
            time,
            id: 42,
            stream_id: 0,
            cpu: 1,
        }
    }

    #[test]
    fn views_read_what_the_writer_builds() {
        let a = attr();
        let comm = comm_record(&a, 7, 8, "worker", true, &sid(5)).unwrap();
        let view = RecordView::parse(&comm, Endian::NATIVE).unwrap();
        assert_eq!(view.record_type, record::COMM);
        assert_eq!(view.time(&a), Some(5));
        assert_eq!(
            view.side_band(&a),
            Ok(RecordKind::Comm {
                pid: 7,
                tid: 8,
                name: b"worker",
                exec: true
            })
        );

        let lost = lost_record(&a, 42, 99, &sid(6)).unwrap();
        let view = RecordView::parse(&lost, Endian::NATIVE).unwrap();
        assert_eq!(
            view.side_band(&a),
            Ok(RecordKind::Lost { id: 42, lost: 99 })
        );

        let fields = SampleFields {
            id: 42,
            ip: 0x401000,
            pid: 7,
            tid: 8,
            time: 9,
            cpu: 1,
            period: 1000,
            ..SampleFields::default()
        };
        let sample = sample_record(&a, &fields).unwrap();
        let view = RecordView::parse(&sample, Endian::NATIVE).unwrap();
        assert_eq!(view.time(&a), Some(9));
        let s = view.sample(3, &a).unwrap();
        assert_eq!(
            (s.attr, s.id, s.ip, s.period),
            (3, Some(42), Some(0x401000), Some(1000))
        );
        assert!(view.side_band(&a).is_ok_and(|k| k == RecordKind::Other));

        let values = ReadValues {
            time_enabled: 100,
            time_running: 50,
            values: vec![ReadValue {
                value: 1234,
                id: 42,
                lost: 0,
            }],
        };
        let read = read_record(&a, 7, 8, &values, &sid(10)).unwrap();
        let view = RecordView::parse(&read, Endian::NATIVE).unwrap();
        let r = view.read(&a).unwrap();
        assert_eq!((r.pid, r.tid), (7, 8));
        assert_eq!(r.values.time_enabled, Some(100));
        assert_eq!(r.values.time_running, Some(50));
        assert_eq!(r.values.values(), [(1234, Some(42))]);
        assert!(view.sample(0, &a).is_err());
    }

    #[test]
    fn views_refuse_cut_records() {
        let comm = comm_record(&attr(), 7, 8, "worker", false, &sid(5)).unwrap();
        assert!(RecordView::parse(&comm[..comm.len() - 8], Endian::NATIVE).is_none());
        assert!(RecordView::parse(&comm[..6], Endian::NATIVE).is_none());
        let mut tiny = comm.clone();
        tiny[6..8].copy_from_slice(&4u16.to_ne_bytes());
        assert!(RecordView::parse(&tiny, Endian::NATIVE).is_none());
    }

    /// Switch records read back as written: direction, the preempt flag only on a
    /// switch-out, the task from the trailer, the other task of a CPU-wide switch.
    #[test]
    fn switch_records_read_back_with_their_task() {
        let a = attr();
        for (out, preempt, other) in [
            (true, true, None),
            (true, false, None),
            (false, true, None),
            (true, false, Some((3, 4))),
            (false, false, Some((5, 6))),
        ] {
            let bytes = switch_record(&a, out, preempt, other, &sid(99)).unwrap();
            let view = RecordView::parse(&bytes, Endian::NATIVE).unwrap();
            assert_eq!(view.time(&a), Some(99));
            assert_eq!(
                view.side_band(&a),
                Ok(RecordKind::Switch {
                    out,
                    preempt: out && preempt,
                    task: Some((7, 8)),
                    other,
                })
            );
        }
        // Without TID in the sample_type the task is unknown, not made up.
        let no_tid = EventAttr {
            sample_type: st::TIME,
            ..a.clone()
        };
        let bytes = switch_record(&no_tid, true, false, None, &sid(99)).unwrap();
        let view = RecordView::parse(&bytes, Endian::NATIVE).unwrap();
        assert!(matches!(
            view.side_band(&no_tid),
            Ok(RecordKind::Switch { task: None, .. })
        ));
    }

    /// A tracepoint's raw record reads back whole, its size padding not included in what
    /// the writer was given but kept in what the kernel says the size is.
    #[test]
    fn raw_records_read_back() {
        let a = EventAttr {
            sample_type: st::TID | st::TIME | st::RAW | st::CALLCHAIN,
            ..EventAttr::default()
        };
        let raw: Vec<u8> = (1..=13).collect();
        let bytes = sample_record(
            &a,
            &SampleFields {
                pid: 1,
                tid: 2,
                time: 3,
                raw: raw.clone(),
                callchain: vec![0x1000],
                ..SampleFields::default()
            },
        )
        .unwrap();
        let view = RecordView::parse(&bytes, Endian::NATIVE).unwrap();
        let s = view.sample(0, &a).unwrap();
        let got = s.raw.unwrap();
        assert_eq!(
            got.len(),
            20,
            "4 + 20 is the next multiple of 8 after 4 + 13"
        );
        assert_eq!(&got[..13], &raw[..]);
        assert_eq!(s.callchain.unwrap().iter().collect::<Vec<_>>(), [0x1000]);
    }

    /// The 32-byte sample_id trailer of [`attr`] for [`sid`]`(time)`, hand-laid: TID (pid,
    /// tid), TIME, CPU (cpu, reserved), IDENTIFIER.
    fn trailer(time: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(7u32.to_ne_bytes());
        b.extend(8u32.to_ne_bytes());
        b.extend(time.to_ne_bytes());
        b.extend(1u32.to_ne_bytes());
        b.extend(0u32.to_ne_bytes());
        b.extend(42u64.to_ne_bytes());
        b
    }

    fn header(rtype: u32, size: usize) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(rtype.to_ne_bytes());
        b.extend(0u16.to_ne_bytes());
        b.extend((size as u16).to_ne_bytes());
        b
    }

    /// PERF_RECORD_CGROUP as `perf_event.h` lays it out (u64 id, the path with its NUL padded
    /// to 8 bytes, the trailer): read back field by field, and the writer's bytes are these.
    #[test]
    fn cgroup_records_decode_byte_exactly() {
        let a = attr();
        let path = "/system.slice/nginx.service"; // 27 bytes: NUL and 4 bytes of padding
        let mut body = 0x1234_5678_9abc_def0u64.to_ne_bytes().to_vec();
        body.extend(path.as_bytes());
        body.extend([0u8; 5]);
        body.extend(trailer(77));
        let mut bytes = header(record::CGROUP, 8 + body.len());
        bytes.extend(&body);
        assert_eq!(bytes.len(), 8 + 8 + 32 + 32);
        assert_eq!(
            cgroup_record(&a, 0x1234_5678_9abc_def0, path, &sid(77)).unwrap(),
            bytes
        );
        let view = RecordView::parse(&bytes, Endian::NATIVE).unwrap();
        assert_eq!(view.time(&a), Some(77));
        assert_eq!(
            view.side_band(&a),
            Ok(RecordKind::Cgroup {
                id: 0x1234_5678_9abc_def0,
                path: path.as_bytes()
            })
        );
        // The root: "/" and its NUL in 8 bytes.
        let root = cgroup_record(&a, 1, "/", &sid(1)).unwrap();
        assert_eq!(root.len(), 8 + 8 + 8 + 32);
        let view = RecordView::parse(&root, Endian::NATIVE).unwrap();
        assert_eq!(
            view.side_band(&a),
            Ok(RecordKind::Cgroup { id: 1, path: b"/" })
        );
    }

    /// PERF_RECORD_NAMESPACES (u32 pid, u32 tid, u64 nr, nr (dev, inode) pairs, the trailer)
    /// reads back pair by pair, and the writer's bytes are these.
    #[test]
    fn namespaces_records_decode_byte_exactly() {
        let a = attr();
        let links: Vec<(u64, u64)> = (0..8).map(|i| (4 + i, 0xf000_0000 + i)).collect();
        let mut body = Vec::new();
        body.extend(300u32.to_ne_bytes());
        body.extend(301u32.to_ne_bytes());
        body.extend(8u64.to_ne_bytes());
        for &(dev, ino) in &links {
            body.extend(dev.to_ne_bytes());
            body.extend(ino.to_ne_bytes());
        }
        body.extend(trailer(9));
        let mut bytes = header(record::NAMESPACES, 8 + body.len());
        bytes.extend(&body);
        assert_eq!(
            namespaces_record(&a, 300, 301, &links, &sid(9)).unwrap(),
            bytes
        );
        let view = RecordView::parse(&bytes, Endian::NATIVE).unwrap();
        let Ok(RecordKind::Namespaces(ns)) = view.side_band(&a) else {
            panic!("not namespaces: {:?}", view.side_band(&a));
        };
        assert_eq!((ns.pid, ns.tid, ns.len()), (300, 301, 8));
        let got: Vec<_> = (0..ns.len()).map(|i| ns.link(i).unwrap()).collect();
        assert_eq!(got, links);
        assert_eq!(ns.link(8), None);
    }

    /// Records shorter than their fields: each refused with what ran out, never read past
    /// their size (a count that claims more pairs than the record holds, a path cut before
    /// its NUL, no room for the id or the count).
    #[test]
    fn short_cgroup_and_namespaces_records_are_refused() {
        let a = attr();
        let side_band = |rtype: u32, fields: &[u8]| {
            let mut bytes = header(rtype, 8 + fields.len() + 32);
            bytes.extend(fields);
            bytes.extend(trailer(1));
            let view = RecordView::parse(&bytes, Endian::NATIVE).unwrap();
            view.side_band(&a).map(|_| ())
        };
        assert_eq!(side_band(record::CGROUP, &[1, 2, 3, 4]), Err("cgroup id"));
        let mut no_nul = 5u64.to_ne_bytes().to_vec();
        no_nul.extend(b"/abcdefg");
        assert_eq!(
            side_band(record::CGROUP, &no_nul),
            Err("cgroup path without its NUL")
        );
        let mut claims = Vec::new();
        claims.extend(1u32.to_ne_bytes());
        claims.extend(1u32.to_ne_bytes());
        claims.extend(3u64.to_ne_bytes());
        claims.extend([0u8; 32]); // two pairs for a count of three
        assert_eq!(
            side_band(record::NAMESPACES, &claims),
            Err("namespaces links (fewer bytes than the count says)")
        );
        let mut huge = claims[..8].to_vec();
        huge.extend(u64::MAX.to_ne_bytes());
        assert_eq!(
            side_band(record::NAMESPACES, &huge),
            Err("namespaces links (fewer bytes than the count says)")
        );
        assert_eq!(
            side_band(record::NAMESPACES, &claims[..12]),
            Err("namespaces pid/tid/count")
        );
    }
}
