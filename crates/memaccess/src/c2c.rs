//! perf c2c's report of a recording with memory samples: the trace summary (every sample's
//! [`C2cStats`]), the shared cache lines (64-byte lines with HITMs), and per shared line who
//! touched which offset from where (the Pareto table). The rules are perf c2c's (perf 6.1,
//! `tools/perf/builtin-c2c.c`) so that the numbers can be compared with it:
//!
//! - lines are keyed by the 64-byte line of the data address, and, for user-space
//!   addresses, by the process (perf's key for private anonymous memory);
//! - a line is *shared* when it has a local or remote HITM or a peer snoop; the shared lines'
//!   counts make the "shared" summary;
//! - a shared line is listed when its HITMs of the sort kind (total, local or remote) are at
//!   least 0.1 % of all shared lines' HITMs of that kind, ordered by that count;
//! - a listed line's rows group its samples by offset in the line and code address, listing
//!   those with HITMs of the sort kind or stores, by offset then code address;
//! - mean latencies per row are over remote-HITM loads, local-HITM loads and the other loads;
//! - a row's source line is perf's Source:Line: the innermost (inlined) frame's line at the
//!   sampled instruction, as `file-basename:line`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use cpiflame_perf_data::abi::{misc, sample as st};
use cpiflame_perf_data::host::cpu_list_ranges;
use cpiflame_perf_data::{PerfData, ReadError, RecordKind, Sample};
use cpiflame_unwind::address::{Avma, StackFrame};
use cpiflame_unwind::{FrameKind, FrameRef, Resolver, StackEntry};
use serde_json::{json, Value};

use crate::{C2cStats, DataSource, ServedFrom};

/// Bytes in a cache line (perf c2c's default).
pub const CACHE_LINE: u64 = 64;
/// A shared line is listed when its share of the sort kind's HITMs is at least this.
const DISPLAY_LINE_LIMIT: f64 = 0.001;

/// Which HITMs sort and select the lines (`perf c2c report -d`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HitmSort {
    /// Local plus remote (perf's default).
    #[default]
    Total,
    Local,
    Remote,
}

impl HitmSort {
    fn of(self, s: &C2cStats) -> u64 {
        match self {
            HitmSort::Total => s.tot_hitm,
            HitmSort::Local => s.lcl_hitm,
            HitmSort::Remote => s.rmt_hitm,
        }
    }
    fn name(self) -> &'static str {
        match self {
            HitmSort::Total => "tot",
            HitmSort::Local => "lcl",
            HitmSort::Remote => "rmt",
        }
    }
}

/// Why a file cannot be reported on.
#[derive(Debug, thiserror::Error)]
pub enum C2cError {
    #[error(transparent)]
    Read(#[from] ReadError),
    /// No event of the file samples data sources and addresses.
    #[error("{0}: no memory samples (no event records PERF_SAMPLE_DATA_SRC and PERF_SAMPLE_ADDR); record with `cpiflame record --mem` or `perf c2c record`")]
    NoMemorySamples(String),
}

/// One memory sample, as the report needs it.
#[derive(Clone, Debug)]
pub struct MemSample {
    /// Index of the event in the file.
    pub event: usize,
    pub pid: i32,
    pub tid: i32,
    pub cpu: Option<u32>,
    pub ip: u64,
    pub daddr: u64,
    /// The load latency (perf's sample weight).
    pub weight: u64,
    pub data_src: DataSource,
    /// The sample's ip is in the kernel.
    pub kernel: bool,
    /// Both the data and the code address fell in a known mapping.
    pub mapped: bool,
    /// The function at `ip` and its module, when named.
    pub symbol: Option<Arc<str>>,
    pub module: Option<Arc<str>>,
    /// `file:line` of the instruction at `ip` (see [`source_line`]), when DWARF says.
    pub source: Option<Arc<str>>,
}

/// Summed latencies of one kind of load.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Latency {
    pub count: u64,
    pub sum: u64,
}

impl Latency {
    fn add(&mut self, w: u64) {
        self.count += 1;
        // Weights are the file's claims: a hostile file must not overflow the sum.
        self.sum = self.sum.saturating_add(w);
    }
    /// The mean, 0 with no samples (as perf prints it).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
}

/// One row of the Pareto table: the samples of one line at one offset from one code address.
#[derive(Clone, Debug, Default)]
pub struct OffsetRow {
    pub offset: u64,
    pub iaddr: u64,
    pub symbol: Option<Arc<str>>,
    pub module: Option<Arc<str>>,
    /// `file:line` of the code address, when DWARF says.
    pub source: Option<Arc<str>>,
    pub stats: C2cStats,
    pub pids: BTreeSet<i32>,
    pub tids: BTreeSet<i32>,
    pub cpus: BTreeSet<u32>,
    /// NUMA node -> its cpus among `cpus` (cpus of no known node are left out).
    pub nodes: BTreeMap<u32, BTreeSet<u32>>,
    pub rmt_hitm_latency: Latency,
    pub lcl_hitm_latency: Latency,
    /// Loads that were neither HITM.
    pub other_load_latency: Latency,
}

/// One 64-byte line.
#[derive(Clone, Debug, Default)]
pub struct Line {
    pub address: u64,
    /// The process for user-space lines.
    pub pid: Option<i32>,
    pub stats: C2cStats,
    /// Summed weight and count of the line's loads.
    pub load_latency: Latency,
    rows: HashMap<(u64, u64), OffsetRow>,
}

/// A listed (shared, above the limit) line with its Pareto rows.
#[derive(Clone, Debug)]
pub struct SharedLine {
    pub line: Line,
    /// Its share of all shared lines' HITMs of the sort kind.
    pub hitm_share: f64,
    pub rows: Vec<OffsetRow>,
}

/// Samples by event and mem_lvl, as `perf mem report --sort=mem` groups them (its sort key
/// is the mem_lvl field alone), named as perf names the group: by its first sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceCount {
    pub event: usize,
    /// The mem_lvl field of the group.
    pub mem_lvl: u64,
    /// perf's text for the first sample of the group ([`DataSource::level_label`]).
    pub level: String,
    /// Samples of the group by where they were served from (one mem_lvl value can hold
    /// several: a snoop HITM and a clean hit at one level).
    pub served_from: BTreeMap<ServedFrom, u64>,
    pub samples: u64,
    pub weight: u64,
}

/// The whole report.
#[derive(Clone, Debug)]
pub struct Report {
    pub events: Vec<String>,
    pub sort: HitmSort,
    pub totals: C2cStats,
    /// Summed weight of all loads.
    pub load_weight: u64,
    pub shared_lines: u64,
    pub shared: C2cStats,
    pub lines: Vec<SharedLine>,
    pub sources: Vec<SourceCount>,
}

type SourceGroup = (String, BTreeMap<ServedFrom, u64>, u64, u64);

/// Builds a [`Report`] from samples fed one at a time.
#[derive(Default)]
pub struct C2cBuilder {
    cpu_node: HashMap<u32, u32>,
    lines: HashMap<(Option<i32>, u64), Line>,
    totals: C2cStats,
    load_weight: u64,
    /// (event, mem_lvl) -> (perf's text, samples per class, samples, weight).
    sources: BTreeMap<(usize, u64), SourceGroup>,
}

impl C2cBuilder {
    /// `cpu_node` maps cpus to NUMA nodes (the file's NUMA topology).
    pub fn new(cpu_node: HashMap<u32, u32>) -> C2cBuilder {
        C2cBuilder {
            cpu_node,
            ..C2cBuilder::default()
        }
    }

    pub fn add(&mut self, s: &MemSample) {
        let stats = C2cStats::of_sample(s.data_src, s.daddr, s.mapped);
        self.totals += stats;
        if s.data_src.is_load() {
            self.load_weight = self.load_weight.saturating_add(s.weight);
        }
        let source = self
            .sources
            .entry((s.event, s.data_src.lvl()))
            .or_insert_with(|| (s.data_src.level_label(), BTreeMap::new(), 0, 0));
        *source.1.entry(s.data_src.served_from()).or_default() += 1;
        source.2 += 1;
        source.3 = source.3.saturating_add(s.weight);

        let address = s.daddr & !(CACHE_LINE - 1);
        let pid = (!s.kernel).then_some(s.pid);
        let line = self.lines.entry((pid, address)).or_insert_with(|| Line {
            address,
            pid,
            ..Line::default()
        });
        line.stats += stats;
        if stats.load != 0 {
            line.load_latency.add(s.weight);
        }
        let offset = s.daddr - address;
        let row = line
            .rows
            .entry((offset, s.ip))
            .or_insert_with(|| OffsetRow {
                offset,
                iaddr: s.ip,
                symbol: s.symbol.clone(),
                module: s.module.clone(),
                source: s.source.clone(),
                ..OffsetRow::default()
            });
        row.stats += stats;
        row.pids.insert(s.pid);
        row.tids.insert(s.tid);
        // perf counts a sample without a cpu on cpu 0.
        let cpu = s.cpu.unwrap_or(0);
        row.cpus.insert(cpu);
        if let Some(&node) = self.cpu_node.get(&cpu) {
            row.nodes.entry(node).or_default().insert(cpu);
        }
        if stats.rmt_hitm != 0 {
            row.rmt_hitm_latency.add(s.weight);
        } else if stats.lcl_hitm != 0 {
            row.lcl_hitm_latency.add(s.weight);
        } else if stats.load != 0 {
            row.other_load_latency.add(s.weight);
        }
    }

    pub fn finish(self, events: Vec<String>, sort: HitmSort) -> Report {
        let mut shared = C2cStats::default();
        let mut shared_lines = 0;
        let is_shared = |l: &Line| {
            l.stats.lcl_hitm + l.stats.rmt_hitm + l.stats.lcl_peer + l.stats.rmt_peer > 0
        };
        for line in self.lines.values().filter(|l| is_shared(l)) {
            shared += line.stats;
            shared_lines += 1;
        }
        let total = sort.of(&shared);
        let mut lines: Vec<SharedLine> = self
            .lines
            .into_values()
            .filter(|l| is_shared(l) && total > 0)
            .filter_map(|mut line| {
                let hitm_share = sort.of(&line.stats) as f64 / total as f64;
                if sort.of(&line.stats) == 0 || hitm_share < DISPLAY_LINE_LIMIT {
                    return None;
                }
                let mut rows: Vec<OffsetRow> = std::mem::take(&mut line.rows)
                    .into_values()
                    .filter(|r| sort.of(&r.stats) > 0 || r.stats.store > 0)
                    .collect();
                rows.sort_by_key(|r| (r.offset, r.iaddr));
                Some(SharedLine {
                    line,
                    hitm_share,
                    rows,
                })
            })
            .collect();
        lines.sort_by(|a, b| {
            sort.of(&b.line.stats)
                .cmp(&sort.of(&a.line.stats))
                .then(a.line.address.cmp(&b.line.address))
                .then(a.line.pid.cmp(&b.line.pid))
        });
        let sources = self
            .sources
            .into_iter()
            .map(
                |((event, mem_lvl), (level, served_from, samples, weight))| SourceCount {
                    event,
                    mem_lvl,
                    level,
                    served_from,
                    samples,
                    weight,
                },
            )
            .collect();
        Report {
            events,
            sort,
            totals: self.totals,
            load_weight: self.load_weight,
            shared_lines,
            shared,
            lines,
            sources,
        }
    }
}

/// The most cpus a NUMA topology may name (perf's own limit is 4096): cpus above it are
/// left out, and lists are walked for at most 16 times that many cpus in all, so a file
/// claiming thousands of huge ranges costs neither memory nor time.
const MAX_CPUS: u32 = 1 << 16;

/// cpu -> node from the NUMA_TOPOLOGY feature's cpu lists ("0-3,8").
pub fn cpu_nodes(file: &PerfData) -> HashMap<u32, u32> {
    let mut map = HashMap::new();
    let mut walk_budget: u64 = 16 * u64::from(MAX_CPUS);
    for n in &file.meta.numa_nodes {
        for (lo, hi) in cpu_list_ranges(&n.cpus).flatten() {
            let hi = hi.min(MAX_CPUS - 1);
            if lo > hi {
                continue;
            }
            let len = u64::from(hi - lo) + 1;
            if len > walk_budget {
                return map;
            }
            walk_budget -= len;
            for cpu in lo..=hi {
                map.insert(cpu, n.node);
            }
        }
    }
    map
}

/// Mapped address ranges per process (user) and of the kernel, from MMAP records: perf c2c
/// rejects samples whose data or code address falls in none.
#[derive(Default)]
struct Maps {
    user: HashMap<i32, Vec<(u64, u64)>>,
    kernel: Vec<(u64, u64)>,
}

impl Maps {
    fn add(&mut self, m: &cpiflame_perf_data::MmapRecord<'_>) {
        let range = (m.addr, m.addr.saturating_add(m.len));
        if m.cpumode == misc::KERNEL || m.pid == -1 {
            self.kernel.push(range);
        } else {
            self.user.entry(m.pid).or_default().push(range);
        }
    }
    /// A new process starts with its parent's mappings (perf clones them on fork).
    fn fork(&mut self, pid: i32, ppid: i32) {
        if pid != ppid {
            let parent = self.user.get(&ppid).cloned().unwrap_or_default();
            self.user.insert(pid, parent);
        }
    }
    fn contains(&self, pid: i32, addr: u64) -> bool {
        let inside = |r: &&(u64, u64)| r.0 <= addr && addr < r.1;
        self.kernel.iter().any(|r| inside(&r))
            || self
                .user
                .get(&pid)
                .is_some_and(|v| v.iter().any(|r| inside(&r)))
    }
}

/// Reads every memory sample of `file` (events with PERF_SAMPLE_DATA_SRC) whose time
/// `keep_time` keeps (`--time`; a sample without a time is 0), naming code addresses with
/// `resolver`, into a report sorted by `sort`.
pub fn report(
    file: &PerfData,
    resolver: &mut Resolver,
    sort: HitmSort,
    keep_time: impl Fn(u64) -> bool,
) -> Result<Report, C2cError> {
    let memory = |t: u64| t & st::DATA_SRC != 0 && t & st::ADDR != 0;
    if !file.attrs.iter().any(|a| memory(a.sample_type)) {
        return Err(C2cError::NoMemorySamples(file.path().display().to_string()));
    }
    let events = file.attrs.iter().map(|a| a.display_name()).collect();
    let mut builder = C2cBuilder::new(cpu_nodes(file));
    let mut maps = Maps::default();
    let mut stack: Vec<StackEntry> = Vec::new();
    // Source lines by (pid, code address): DWARF line lookups are the slow part, and
    // samples repeat the same few instructions.
    let mut sources: HashMap<(i32, u64), Option<Arc<str>>> = HashMap::new();
    let mut kernel_frames: HashMap<u64, FrameRef> = HashMap::new();
    for record in file.records() {
        let record = record?;
        let sample = match &record.kind {
            RecordKind::Sample(s) => s,
            other => {
                match other {
                    RecordKind::Mmap(m) => maps.add(m),
                    RecordKind::Fork { pid, ppid, .. } => maps.fork(*pid, *ppid),
                    _ => {}
                }
                resolver.observe(other);
                continue;
            }
        };
        let Some(data_src) = sample.data_src else {
            continue;
        };
        if !memory(file.attrs[sample.attr].sample_type) || !keep_time(sample.time.unwrap_or(0)) {
            continue;
        }
        let (mut s, frame) = mem_sample(sample, data_src, &maps, resolver, &mut stack);
        if s.kernel {
            if let Some(frame) = frame {
                kernel_frames.entry(s.ip).or_insert(frame);
            }
        } else {
            s.source = sources
                .entry((s.pid, s.ip))
                .or_insert_with(|| source_line(resolver, s.pid, s.ip))
                .clone();
        }
        builder.add(&s);
    }
    // Kernel frames named while the kernel's symbols were still being read carry provisional
    // names until now.
    resolver.finish_names();
    let mut report = builder.finish(events, sort);
    for row in report.lines.iter_mut().flat_map(|l| l.rows.iter_mut()) {
        if let Some(&frame) = kernel_frames.get(&row.iaddr) {
            let info = resolver.frame(frame);
            row.symbol = Some(info.name.clone());
            row.module = Some(info.module.clone());
        }
    }
    Ok(report)
}

fn mem_sample(
    sample: &Sample<'_>,
    data_src: u64,
    maps: &Maps,
    resolver: &mut Resolver,
    stack: &mut Vec<StackEntry>,
) -> (MemSample, Option<FrameRef>) {
    let pid = sample.pid.unwrap_or(-1);
    let ip = sample.ip.unwrap_or(0);
    let daddr = sample.addr.unwrap_or(0);
    resolver.resolve(sample, stack);
    // The function that holds the instruction, as perf c2c names it (the ELF symbol): inlined
    // frames at the sampled address come first in the stack and are passed over.
    let leaf_ref = stack
        .iter()
        .find(|e| resolver.frame(e.frame).kind != FrameKind::Inline)
        .or_else(|| stack.first())
        .map(|e| e.frame);
    let leaf = leaf_ref.map(|f| resolver.frame(f));
    let sample = MemSample {
        event: sample.attr,
        pid,
        tid: sample.tid.unwrap_or(-1),
        cpu: sample.cpu,
        ip,
        daddr,
        weight: sample.weight.map_or(0, |w| w.latency()),
        data_src: DataSource(data_src),
        kernel: sample.cpumode == misc::KERNEL,
        mapped: maps.contains(pid, daddr) && maps.contains(pid, ip),
        symbol: leaf.map(|f| f.name.clone()),
        module: leaf.map(|f| f.module.clone()),
        source: None,
    };
    (sample, leaf_ref)
}

/// perf c2c's Source:Line of the sampled instruction `ip` of process `pid`: the innermost
/// frame there (an inlined function's line when the instruction was inlined), as the file's
/// base name, a colon and the line (0 when DWARF names the file but no line). `None` when DWARF says nothing (perf 6.1 prints `??:0` then, and
/// `symbol+offset` for perf-map code).
pub fn source_line(resolver: &Resolver, pid: i32, ip: u64) -> Option<Arc<str>> {
    let sampled = StackFrame::Instruction(Avma(ip));
    let innermost = resolver.source_lines(pid, sampled).into_iter().next()?;
    let file = innermost.file?;
    let base = file.rsplit('/').next().unwrap_or(&file);
    Some(format!("{base}:{}", innermost.line.unwrap_or(0)).into())
}

fn stats_json(s: &C2cStats) -> Value {
    json!({
        "records": s.nr_entries,
        "locked": s.locks,
        "loads": s.load,
        "loads_uncached": s.ld_uncache,
        "loads_io": s.ld_io,
        "loads_miss": s.ld_miss,
        "loads_no_address": s.ld_noadrs,
        "lfb_hit": s.ld_fbhit,
        "l1_hit": s.ld_l1hit,
        "l2_hit": s.ld_l2hit,
        "llc_hit": s.ld_llchit + s.lcl_hitm,
        "llc_hit_clean": s.ld_llchit,
        "local_hitm": s.lcl_hitm,
        "remote_hitm": s.rmt_hitm,
        "total_hitm": s.tot_hitm,
        "remote_hit": s.rmt_hit,
        "local_dram": s.lcl_dram,
        "remote_dram": s.rmt_dram,
        "exclusive": s.ld_excl,
        "shared": s.ld_shared,
        "llc_misses": s.llc_misses(),
        "blocked_data": s.blk_data,
        "blocked_address": s.blk_addr,
        "local_peer": s.lcl_peer,
        "remote_peer": s.rmt_peer,
        "stores": s.store,
        "stores_uncached": s.st_uncache,
        "stores_no_address": s.st_noadrs,
        "store_l1_hit": s.st_l1hit,
        "store_l1_miss": s.st_l1miss,
        "store_no_level": s.st_na,
        "no_map": s.nomap,
        "unparsable": s.noparse,
    })
}

/// `part / whole` as a fraction, 0 when `whole` is 0.
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

impl Report {
    /// The `cpiflame-c2c/1` JSON document (docs/cli.md, `### c2c`).
    pub fn to_json(&self) -> Value {
        let mut totals = stats_json(&self.totals);
        totals["load_weight"] = json!(self.load_weight);
        let lines: Vec<Value> = self
            .lines
            .iter()
            .enumerate()
            .map(|(index, l)| {
                let s = &l.line.stats;
                let rows: Vec<Value> = l
                    .rows
                    .iter()
                    .map(|r| {
                        json!({
                            "offset": r.offset,
                            "code_address": r.iaddr,
                            "symbol": r.symbol.as_deref(),
                            "module": r.module.as_deref(),
                            "source": r.source.as_deref(),
                            "pids": r.pids,
                            "tids": r.tids,
                            "cpus": r.cpus,
                            "nodes": r.nodes.iter().map(|(n, cpus)| json!({"node": n, "cpus": cpus})).collect::<Vec<_>>(),
                            "records": r.stats.classified_records(),
                            "samples": r.stats.nr_entries,
                            "remote_hitm_share": share(r.stats.rmt_hitm, s.rmt_hitm),
                            "local_hitm_share": share(r.stats.lcl_hitm, s.lcl_hitm),
                            "store_l1_hit_share": share(r.stats.st_l1hit, s.st_l1hit),
                            "store_l1_miss_share": share(r.stats.st_l1miss, s.st_l1miss),
                            "store_no_level_share": share(r.stats.st_na, s.st_na),
                            "mean_remote_hitm_latency": r.rmt_hitm_latency.mean(),
                            "mean_local_hitm_latency": r.lcl_hitm_latency.mean(),
                            "mean_other_load_latency": r.other_load_latency.mean(),
                            "stats": stats_json(&r.stats),
                        })
                    })
                    .collect();
                json!({
                    "index": index,
                    "address": l.line.address,
                    "pid": l.line.pid,
                    "hitm_share": l.hitm_share,
                    "records": s.classified_records(),
                    "loads": s.classified_loads(),
                    "stores": s.store,
                    "samples": s.nr_entries,
                    "local_hitm": s.lcl_hitm,
                    "remote_hitm": s.rmt_hitm,
                    "total_hitm": s.tot_hitm,
                    "load_weight": l.line.load_latency.sum,
                    "mean_load_latency": l.line.load_latency.mean(),
                    "stats": stats_json(s),
                    "offsets": rows,
                })
            })
            .collect();
        let sources: Vec<Value> = self
            .sources
            .iter()
            .map(|c| {
                json!({
                    "event": self.events.get(c.event),
                    "mem_lvl": c.mem_lvl,
                    "level": c.level,
                    "served_from": c
                        .served_from
                        .iter()
                        .map(|(class, n)| (class.name().to_string(), json!(n)))
                        .collect::<serde_json::Map<String, Value>>(),
                    "samples": c.samples,
                    "weight": c.weight,
                })
            })
            .collect();
        let mut shared = stats_json(&self.shared);
        shared["lines"] = json!(self.shared_lines);
        shared["merged_records"] = json!(self.shared.tot_hitm + self.shared.store);
        json!({
            "schema": "cpiflame-c2c/1",
            "events": self.events,
            "sort": self.sort.name(),
            "cache_line_size": CACHE_LINE,
            "totals": totals,
            "shared": shared,
            "lines": lines,
            "data_sources": sources,
        })
    }
}
