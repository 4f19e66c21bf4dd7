//! JIT dumps (`jit-PID.dump`, perf's jitdump format, written by CPython's `-X perf_jit`,
//! V8's `--perf-prof`, .NET, wasmtime, ...): the functions a runtime compiled, with their
//! code, source lines and unwind tables, each at the time it was loaded, moved or replaced.
//!
//! The records are parsed by `linux-perf-data`'s jitdump parsers; the loop over them is
//! this module's, because a dump is untrusted input: every size is checked against the bytes
//! that hold it before anything is parsed or allocated, and a dump cut short or corrupt keeps
//! what came before, with the offset where it went wrong.

use std::ops::Range;
use std::sync::Arc;

use framehop::ModuleSectionInfo;
use linux_perf_data::jitdump::{
    JitCodeDebugInfoRecord, JitCodeLoadRecord, JitCodeMoveRecord, JitCodeUnwindingInfoRecord,
    JitDumpHeader, JitDumpRecordHeader, JitDumpRecordType,
};
use linux_perf_data::linux_perf_event_reader::RawData;
use linux_perf_data::Endianness;

use crate::shared::SharedBytes;

/// A function a dump loaded, at one address: a move makes another at the new address
/// (same code, lines and unwind table, which are all relative to the code's start).
pub struct JitFunction {
    /// The name as the runtime wrote it (`py::fib:/app/fib.py`, `JS:*fib /app/fib.js:2:13`).
    pub name: Box<str>,
    /// Where the code is in the process.
    pub addr: u64,
    /// The code's length in bytes.
    pub size: u64,
    /// The machine code (for `annotate`).
    pub code: Arc<[u8]>,
    /// Source lines by offset from the code's start (JIT_CODE_DEBUG_INFO), sorted.
    pub lines: Arc<[JitLine]>,
    /// The function's unwind table (JIT_CODE_UNWINDING_INFO), when the runtime wrote one.
    pub unwind: Option<Arc<JitUnwind>>,
}

impl JitFunction {
    /// The code's addresses.
    pub fn range(&self) -> Range<u64> {
        self.addr..self.addr.saturating_add(self.size)
    }

    /// The source line of process address `addr` in this function: the entry at or before
    /// it, when that names a file.
    pub fn line_at(&self, addr: u64) -> Option<&JitLine> {
        let offset = addr.checked_sub(self.addr)?;
        let i = self.lines.partition_point(|l| l.offset <= offset);
        self.lines
            .get(i.checked_sub(1)?)
            .filter(|l| !l.file.is_empty())
    }
}

/// A source line of JIT code: the code from `offset` (from the function's start) up to the
/// next entry's is on `line` of `file` (an empty `file`: on no line the dump could name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitLine {
    pub offset: u64,
    pub file: Arc<str>,
    pub line: u32,
    pub column: u32,
}

/// A JIT function's `.eh_frame`, and where it lies relative to the code: the jitdump format
/// does not say (perf inject lays the table after the code, CPython after the code rounded up
/// to 16 bytes), so it is found from the table's first entry, which describes the code's
/// first byte.
pub struct JitUnwind {
    pub eh_frame: SharedBytes,
    /// The `.eh_frame`'s address minus the code's.
    pub eh_frame_offset: i64,
}

impl JitUnwind {
    /// The table and where it is, when its first entry (FDE) can be read; `None` otherwise
    /// (an unwind table that describes nothing is no table).
    fn new(eh_frame: &[u8]) -> Option<JitUnwind> {
        use gimli::{BaseAddresses, CieOrFde, EhFrame, LittleEndian, UnwindSection};
        let eh_frame = &*without_omitted_lsda(eh_frame);
        let section = EhFrame::new(eh_frame, LittleEndian);
        let bases = BaseAddresses::default().set_eh_frame(0);
        let mut entries = section.entries(&bases);
        // With the table at address 0, the first entry's start is the code's address minus
        // the table's.
        let first = loop {
            match entries.next().ok()?? {
                CieOrFde::Cie(_) => continue,
                CieOrFde::Fde(partial) => {
                    break partial
                        .parse(EhFrame::cie_from_offset)
                        .ok()?
                        .initial_address()
                }
            }
        };
        Some(JitUnwind {
            eh_frame: SharedBytes::owned(eh_frame.to_vec()),
            eh_frame_offset: 0i64.wrapping_sub(first as i64),
        })
    }

    /// framehop's module for the function at `range`: its `.eh_frame` placed where it lies.
    pub fn framehop_module(
        &self,
        name: &str,
        range: Range<u64>,
    ) -> Option<framehop::Module<SharedBytes>> {
        let table = range.start.checked_add_signed(self.eh_frame_offset)?;
        // framehop keeps addresses relative to the module's base in 32 bits: the base is the
        // lower of the code and the table.
        let base = range.start.min(table);
        let len = self.eh_frame.len() as u64;
        let sections = JitSections {
            eh_frame: (table - base)..(table - base).checked_add(len)?,
            bytes: self.eh_frame.clone(),
        };
        u32::try_from(sections.eh_frame.end.max(range.end - base)).ok()?;
        Some(framehop::Module::new(
            name.to_string(),
            range,
            base,
            sections,
        ))
    }
}

/// `eh_frame` with every CIE that declares an LSDA pointer encoded as "omitted" (augmentation
/// `L` with encoding 0xff: V8 writes `zLR` so) rewritten without it: gimli (and so framehop)
/// refuses to read an omitted LSDA pointer in the FDEs of such a CIE, and an FDE of it has no
/// LSDA bytes anyway. The `L` and its byte go; the CIE keeps its length, two `DW_CFA_nop`
/// at its end. Anything it cannot read is left as it is.
fn without_omitted_lsda(eh_frame: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let mut out: Option<Vec<u8>> = None;
    let mut at = 0usize;
    while let Some(len) = eh_frame
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()))
    {
        // A zero terminator, or the 64-bit form (not written by JIT runtimes): stop.
        if len == 0 || len == u32::MAX {
            break;
        }
        let end = at + 4 + len as usize;
        let Some(entry) = eh_frame.get(at..end) else {
            break;
        };
        if let Some(fixed) = cie_without_omitted_lsda(entry) {
            out.get_or_insert_with(|| eh_frame.to_vec())[at..end].copy_from_slice(&fixed);
        }
        at = end;
    }
    match out {
        Some(bytes) => std::borrow::Cow::Owned(bytes),
        None => std::borrow::Cow::Borrowed(eh_frame),
    }
}

/// One CIE (`entry`, length field included) rewritten as [`without_omitted_lsda`] says, or
/// `None` when it is an FDE, has no such `L`, or cannot be read.
fn cie_without_omitted_lsda(entry: &[u8]) -> Option<Vec<u8>> {
    fn leb(bytes: &[u8], at: &mut usize) -> Option<u64> {
        let (mut value, mut shift) = (0u64, 0);
        loop {
            let b = *bytes.get(*at)?;
            *at += 1;
            value |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(value);
            }
            shift += 7;
        }
    }
    // length (4), CIE id 0 (4), version (1), augmentation string.
    if entry.get(4..8)? != [0, 0, 0, 0] {
        return None;
    }
    let version = *entry.get(8)?;
    let aug_start = 9;
    let aug_len = entry.get(aug_start..)?.iter().position(|&b| b == 0)?;
    let aug = &entry[aug_start..aug_start + aug_len];
    let l_letter = aug.iter().position(|&b| b == b'L')?;
    if aug.first() != Some(&b'z') {
        return None;
    }
    let mut at = aug_start + aug_len + 1;
    if version == 4 {
        at += 2; // address and segment selector sizes
    }
    leb(entry, &mut at)?; // code alignment
    leb(entry, &mut at)?; // data alignment (signed; only skipped)
    if version == 1 {
        at += 1;
    } else {
        leb(entry, &mut at)?;
    }
    let data_len_at = at;
    let data_len = leb(entry, &mut at)?;
    let data_start = at;
    // The `L`'s byte: after the data of the letters before it.
    let mut l_at = data_start;
    for &letter in &aug[1..l_letter] {
        match letter {
            b'R' => l_at += 1,
            b'P' => {
                let encoding = *entry.get(l_at)?;
                l_at += 1;
                l_at += match encoding & 0x0f {
                    0x00 | 0x04 | 0x0c => 8,
                    0x02 | 0x0a => 2,
                    0x03 | 0x0b => 4,
                    0x01 | 0x09 => {
                        leb(entry, &mut l_at)?;
                        0
                    }
                    _ => return None,
                };
            }
            b'S' | b'B' => {}
            _ => return None,
        }
    }
    if *entry.get(l_at)? != 0xff || data_len == 0 || data_start + data_len as usize > entry.len() {
        return None;
    }
    // The length of the augmentation data in one byte, before and after.
    if data_start - data_len_at != 1 || data_len > 0x7f {
        return None;
    }
    let mut fixed = Vec::with_capacity(entry.len());
    fixed.extend_from_slice(&entry[..aug_start + l_letter]);
    fixed.extend_from_slice(&entry[aug_start + l_letter + 1..data_len_at]);
    fixed.push(data_len as u8 - 1);
    fixed.extend_from_slice(&entry[data_start..l_at]);
    fixed.extend_from_slice(&entry[l_at + 1..]);
    fixed.extend_from_slice(&[0, 0]); // DW_CFA_nop twice: the CIE keeps its length
    Some(fixed)
}

/// Hands framehop a JIT function's `.eh_frame` (no `.eh_frame_hdr`: framehop indexes the
/// table itself).
struct JitSections {
    eh_frame: Range<u64>,
    bytes: SharedBytes,
}

impl ModuleSectionInfo<SharedBytes> for JitSections {
    fn base_svma(&self) -> u64 {
        0
    }
    fn section_svma_range(&mut self, name: &[u8]) -> Option<Range<u64>> {
        (name == b".eh_frame").then(|| self.eh_frame.clone())
    }
    fn section_data(&mut self, name: &[u8]) -> Option<SharedBytes> {
        (name == b".eh_frame").then(|| self.bytes.clone())
    }
}

/// What a record of the dump changes.
pub enum JitChange {
    /// A function is there from now on (replacing whatever code overlapped it).
    Load(Arc<JitFunction>),
    /// The code at these addresses is gone (moved away).
    Unload(Range<u64>),
}

/// A change at a time (the dump's clock: CLOCK_MONOTONIC, perf's `-k mono`).
pub struct JitEvent {
    pub time: u64,
    pub change: JitChange,
}

/// A dump read: the changes in the order written (which is time order) and, when the dump
/// ends in the middle of a record or holds one that cannot be read, where.
pub struct JitDump {
    /// The pid the header names.
    pub pid: u32,
    /// The header's ELF machine (`EM_X86_64` is 62); 0 when the writer left it out (CPython
    /// 3.13.0 does).
    pub machine: u32,
    pub events: Vec<JitEvent>,
    /// Whether a function was moved, or loaded over another one's code: then a recording
    /// whose clock is not the dump's can only be read by address, and may name wrongly.
    pub reuses_code: bool,
    /// The first record that could not be read: its offset and why. What came before it is
    /// in `events`.
    pub problem: Option<(u64, String)>,
}

/// Why a dump cannot be read at all.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JitDumpError {
    #[error("not a JIT dump (no jitdump header)")]
    NotJitDump,
    #[error("a JIT dump of version {0}, not 1")]
    Version(u32),
}

/// JIT_CODE_DEBUG_INFO's smallest entry: address, line, column and an empty file name.
const DEBUG_ENTRY_MIN: u64 = 8 + 4 + 4 + 1;

impl JitDump {
    /// Reads the dump `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<JitDump, JitDumpError> {
        let header =
            JitDumpHeader::parse(RawData::Single(bytes)).map_err(|_| JitDumpError::NotJitDump)?;
        if header.version != 1 {
            return Err(JitDumpError::Version(header.version));
        }
        let endian = if header.magic == *b"JiTD" {
            Endianness::BigEndian
        } else {
            Endianness::LittleEndian
        };
        let mut dump = JitDump {
            pid: header.pid,
            machine: header.elf_machine_arch,
            events: Vec::new(),
            reuses_code: false,
            problem: None,
        };
        let mut reader = Records {
            endian,
            lines: None,
            unwind: None,
            by_index: foldhash::HashMap::default(),
            loaded: std::collections::BTreeMap::new(),
        };
        let mut offset = header.total_size as usize;
        while offset < bytes.len() {
            match reader.record(bytes, offset, &mut dump) {
                Ok(next) => offset = next,
                Err(why) => {
                    dump.problem = Some((offset as u64, why));
                    break;
                }
            }
        }
        Ok(dump)
    }
}

/// The state kept between records: what a DEBUG_INFO or UNWINDING_INFO said for the load
/// that follows it, and the functions loaded so far (by code index, for JIT_CODE_MOVE, and by
/// address, to see code reused).
struct Records {
    endian: Endianness,
    lines: Option<(u64, Arc<[JitLine]>)>,
    unwind: Option<Arc<JitUnwind>>,
    by_index: foldhash::HashMap<u64, Arc<JitFunction>>,
    loaded: std::collections::BTreeMap<u64, u64>,
}

impl Records {
    /// Reads the record at `offset`, returning where the next one starts.
    fn record(&mut self, bytes: &[u8], offset: usize, dump: &mut JitDump) -> Result<usize, String> {
        let rest = &bytes[offset..];
        if rest.len() < JitDumpRecordHeader::SIZE {
            return Err(format!(
                "the dump ends {} bytes into a record header",
                rest.len()
            ));
        }
        let header = JitDumpRecordHeader::parse(self.endian, RawData::Single(rest))
            .map_err(|e| e.to_string())?;
        let size = header.total_size as usize;
        if size < JitDumpRecordHeader::SIZE {
            return Err(format!("a record of size {size}, less than its header"));
        }
        let Some(record) = rest.get(..size) else {
            return Err(format!(
                "a record of {size} bytes, {} left in the dump",
                rest.len()
            ));
        };
        let body = RawData::Single(&record[JitDumpRecordHeader::SIZE..]);
        let cut = |what: &str| format!("a {what} record cut short");
        let time = header.timestamp;
        match header.record_type {
            JitDumpRecordType::JIT_CODE_LOAD => {
                let load = JitCodeLoadRecord::parse(self.endian, body).map_err(|_| cut("load"))?;
                let size = load.code_bytes.len() as u64;
                let lines = match self.lines.take() {
                    Some((addr, lines)) if addr == load.code_addr => lines
                        .iter()
                        .map(|l| JitLine {
                            offset: l.offset.wrapping_sub(addr),
                            ..l.clone()
                        })
                        .collect(),
                    _ => Arc::from([]),
                };
                let function = Arc::new(JitFunction {
                    name: String::from_utf8_lossy(&load.function_name.as_slice()).into(),
                    addr: load.code_addr,
                    size,
                    code: load.code_bytes.as_slice().into(),
                    lines,
                    unwind: self.unwind.take(),
                });
                self.by_index.insert(load.code_index, function.clone());
                self.load(&function, dump);
                dump.events.push(JitEvent {
                    time,
                    change: JitChange::Load(function),
                });
            }
            JitDumpRecordType::JIT_CODE_MOVE => {
                let moved = JitCodeMoveRecord::parse(self.endian, body).map_err(|_| cut("move"))?;
                dump.reuses_code = true;
                let old = moved.old_code_addr..moved.old_code_addr.saturating_add(moved.code_size);
                self.loaded.remove(&moved.old_code_addr);
                dump.events.push(JitEvent {
                    time,
                    change: JitChange::Unload(old),
                });
                // A move of code never loaded names nothing.
                if let Some(from) = self.by_index.get(&moved.code_index).cloned() {
                    let function = Arc::new(JitFunction {
                        name: from.name.clone(),
                        addr: moved.new_code_addr,
                        size: moved.code_size,
                        code: from.code.clone(),
                        lines: from.lines.clone(),
                        unwind: from.unwind.clone(),
                    });
                    self.by_index.insert(moved.code_index, function.clone());
                    self.load(&function, dump);
                    dump.events.push(JitEvent {
                        time,
                        change: JitChange::Load(function),
                    });
                }
            }
            JitDumpRecordType::JIT_CODE_DEBUG_INFO => {
                let body_len = (record.len() - JitDumpRecordHeader::SIZE) as u64;
                // The entry count is checked against the bytes before the parser reserves
                // room for that many.
                let claimed = match (self.endian, record.get(24..32)) {
                    (Endianness::LittleEndian, Some(b)) => {
                        u64::from_le_bytes(b.try_into().unwrap_or_default())
                    }
                    (Endianness::BigEndian, Some(b)) => {
                        u64::from_be_bytes(b.try_into().unwrap_or_default())
                    }
                    (_, None) => return Err(cut("debug info")),
                };
                if claimed.saturating_mul(DEBUG_ENTRY_MIN) > body_len {
                    return Err(format!(
                        "a debug info record claiming {claimed} entries in {body_len} bytes"
                    ));
                }
                let info = JitCodeDebugInfoRecord::parse(self.endian, body)
                    .map_err(|_| cut("debug info"))?;
                // V8 writes a file name the same as the entry before as the byte 0xff.
                let mut previous: Arc<str> = Arc::from("");
                let mut lines: Vec<JitLine> = Vec::with_capacity(info.entries.len());
                for e in &info.entries {
                    let name = e.file_path.as_slice();
                    if *name != [0xff] {
                        previous = match std::str::from_utf8(&name) {
                            Ok(name) if !name.is_empty() && !name.contains(char::is_control) => {
                                name.into()
                            }
                            // Not a name (node 20 writes stray bytes for optimised code): the
                            // code there has no line rather than a made-up file (an entry with
                            // no file, which ends the range of the entry before).
                            _ => Arc::from(""),
                        };
                    }
                    lines.push(JitLine {
                        // Absolute until the load it describes says where the code starts.
                        offset: e.code_addr,
                        file: previous.clone(),
                        line: e.line,
                        column: e.column,
                    });
                }
                lines.sort_by_key(|l| l.offset);
                self.lines = Some((info.code_addr, lines.into()));
            }
            JitDumpRecordType::JIT_CODE_UNWINDING_INFO => {
                let info = JitCodeUnwindingInfoRecord::parse(self.endian, body)
                    .map_err(|_| cut("unwinding info"))?;
                // The parser splits the unwind data as if the `.eh_frame_hdr` came first;
                // perf (genelf.c), CPython and V8 write the `.eh_frame` first and the header
                // after it. The data is put back together and split as they write it.
                let hdr_len = info.eh_frame_hdr.len();
                let mut data = info.eh_frame_hdr.as_slice().into_owned();
                data.extend_from_slice(&info.eh_frame.as_slice());
                data.truncate(data.len() - hdr_len);
                self.unwind = JitUnwind::new(&data).map(Arc::new);
            }
            // JIT_CODE_CLOSE (the runtime is done) and record types added later change no
            // code.
            _ => {}
        }
        Ok(offset + size)
    }

    /// Notes `function` as loaded, and whether it lands on code loaded before.
    fn load(&mut self, function: &JitFunction, dump: &mut JitDump) {
        let range = function.range();
        let overlapping: Vec<u64> = self
            .loaded
            .range(..range.end.max(range.start.saturating_add(1)))
            .filter(|(_, &end)| end > range.start)
            .map(|(&start, _)| start)
            .collect();
        for start in overlapping {
            dump.reuses_code = true;
            self.loaded.remove(&start);
        }
        self.loaded.insert(range.start, range.end);
    }
}

/// Whether `file_name` is a JIT dump's name by the convention runtimes write it by
/// (`jit-PID.dump`).
pub fn is_dump_name(file_name: &str) -> bool {
    file_name
        .strip_prefix("jit-")
        .and_then(|rest| rest.strip_suffix(".dump"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests;
