//! Region markers: count perf events around regions of code, as LIKWID_MARKER_START/STOP or
//! the libpfm4 pattern of reading a counter group before and after each pixel of a renderer,
//! and keep per-region statistics online.
//!
//! ```no_run
//! use cpiflame_markers::Markers;
//!
//! let mut m = Markers::new(&["task-clock", "page-faults", "context-switches"])?;
//! let pixel = m.register("pixel"); // look the name up once; start/stop by id on the hot path
//! for _ in 0..1000 {
//!     m.start(pixel);
//!     // ... work ...
//!     m.stop(pixel);
//! }
//! {
//!     let _g = m.region("setup"); // by name (hashed per call); stops when dropped
//!     // ... work ...
//! }
//! print!("{}", m.report()); // the table; m.report().to_json() for the JSON form
//! # Ok::<(), cpiflame_markers::Error>(())
//! ```
//!
//! The library must never sample or take interrupts (it only counts), never do more on the
//! start/stop path than the reads and the statistics (a region's cost is its measurement
//! error), and never panic on what the kernel returns.
//!
//! # What is counted
//!
//! [`Markers::new`] opens the events, given as perf-style specs (any that
//! `cpiflame_events::parse_events` accepts; default [`DEFAULT_EVENTS`]: instructions, cycles,
//! branches, branch-misses), **on the calling thread** (pid 0, any CPU): they count what this
//! thread does, in user space and, when `perf_event_paranoid` allows it, in the kernel on its
//! behalf. A `Markers` is therefore neither `Send` nor `Sync`: every thread that wants counts
//! opens its own (and [`Stats::merge`] adds their results up). Counting only: no sampling,
//! no interrupts.
//!
//! The events are opened as one group (`read_format` = PERF_FORMAT_GROUP with the enabled and
//! running times and ids), so the kernel schedules them together and one read returns all of
//! them from the same instant; if the kernel refuses the group but each event opens on its
//! own, they are opened one by one. When none of the hardware events opens (no PMU: most VMs)
//! the error is [`Error::NoHardware`]; software events (`task-clock`, `page-faults`,
//! `context-switches`, ...) work everywhere.
//!
//! # What one region costs
//!
//! [`Markers::start`] reads every counter, then the monotonic clock; [`Markers::stop`] reads
//! the clock, then every counter, and updates the statistics (no allocation, no hashing when
//! given a [`RegionId`]). A read is, in order of preference ([`ReadPath`]):
//!
//! - **rdpmc** ([`cpiflame_counters::rdpmc`]): when every event is on a hardware counter the
//!   kernel lets user space read (`cap_user_rdpmc`), each counter is read from its mmap page
//!   with the `rdpmc` instruction under the page's sequence lock: **no system call**.
//!   A snapshot in which an event is momentarily not on a counter falls back to a `read()`.
//!   Software events never have this, so it is never used without a PMU.
//! - **one `read()` of the group** per start and one per stop: two system calls per region,
//!   whatever the number of events. The seed's libpfm4 code also read the group twice per
//!   pixel (its "two read() per pixel" at ~1.6 µs each made its 17% overhead); this path
//!   makes the same two calls, plus statistics in O(1) memory instead of per-pixel arrays.
//! - one `read()` per event per start and per stop, when the events could not be grouped.
//!
//! So the counters' window is a little wider than the clock's: it also holds the clock reads
//! and the part of each `read()` before (at start) or after (at stop) the kernel takes its
//! snapshot. An empty region measures that share (`examples/pixels.rs` prints one: about
//! 800 ns of task-clock per region on the VM this was written on, where a `read()` of the
//! group takes ~750 ns).
//!
//! For regions that follow each other (every pixel of a frame), [`Markers::lap`] closes one
//! and opens the next with a single read: **one** system call per region on the read() path.
//!
//! # Regions in recordings
//!
//! With `CPIFLAME_MARKERS_DIR` set when a `Markers` is opened (`cpiflame record` sets it for
//! the command it starts; with `perf record`, set it and record with `-k monotonic`), every
//! region that ends is also written, with its start and end on CLOCK_MONOTONIC, to the
//! thread's `marker-PID-TID.txt` there, the file samply reads: `cpiflame render --region
//! NAME` keeps the samples inside that region's intervals. See [`spans`].
//!
//! # Multiplexing
//!
//! Each stop takes, per event, the difference of the count and of `time_enabled` and
//! `time_running` since the start. An event that ran only part of the region (its counter
//! was shared with other groups) is scaled: `Δcount × Δenabled / Δrunning`, and counted as
//! *scaled*; an event that did not run at all during the region records no value and is
//! counted as *not counted* ([`Delta`]). Both numbers are in the report.
//!
//! # Statistics
//!
//! Per region, for the elapsed nanoseconds (`ns`, from the monotonic clock) and for every
//! event: count, mean and variance (Welford, [`Summary`]), exact min and max, and p50, p90 and
//! p99 from a [`Sketch`] whose error bound is stated in [`sketch`]: with the default relative
//! accuracy α = 1%, every reported quantile q̂ is within 1% of the true rank quantile
//! (|q̂ − q| ≤ α·q), for any distribution, unless the sketch had to collapse its lowest
//! buckets (a range of values over 10²⁴ with the default 4096 buckets), which the report
//! says. Memory per region is bounded: at most `max_buckets` counts per metric (32 KiB),
//! allocated only over the range of values seen (a range of 10⁴ takes ~5 KiB).
//!
//! # The JSON report (schema `cpiflame-markers/1`)
//!
//! [`Report::to_json`] gives one object; fields are only ever added, never renamed or
//! removed, within a schema version:
//!
//! ```text
//! {
//!   "schema": "cpiflame-markers/1",
//!   "read_path": "rdpmc" | "group-read" | "per-event-read",
//!   "events": ["task-clock", ...],            // event names, in column order
//!   "exclude_kernel": false,                  // kernel counts left out (perf_event_paranoid)
//!   "quantile_relative_accuracy": 0.01,       // α of p50/p90/p99
//!   "quantile_rank": "floor(q*(n-1))",        // which sorted value a quantile refers to
//!   "rdpmc_fallbacks": 0,                     // rdpmc snapshots read with read() instead
//!   "regions": [{
//!     "name": "pixel",
//!     "samples": 76800,                       // stops that closed a started region
//!     "unmatched_stops": 0,                   // stops without a start (ignored)
//!     "restarts": 0,                          // starts of a region already started
//!     "read_errors": 0,                       // starts/stops whose read failed (dropped)
//!     "first_read_error": null | "text",
//!     "metrics": [{                           // "ns" first, then one per event
//!       "name": "ns",
//!       "count": 76800,                       // values recorded
//!       "not_counted": 0,                     // samples where the event never ran
//!       "scaled": 0,                          // samples scaled for multiplexing
//!       "total": 351068160,                   // sum of the values (exact, saturating)
//!       "mean": 4571.2, "stddev": 812.5,      // stddev: sample (n-1); null if n < 2
//!       "min": 3001, "p50": 4402.1, "p90": 6139.0, "p99": 9000.3, "max": 25567,
//!       "collapsed_below": null               // see Sketch::collapsed_below
//!     }]
//!   }]
//! }
//! ```
//!
//! Numbers without values (no samples) are `null`.

use std::collections::HashMap;
use std::io;
use std::marker::PhantomData;
use std::path::PathBuf;

use cpiflame_counters::event_use::Unhonoured;
use cpiflame_events::{resolve_events, ResolveError, SYSFS_ROOT};

mod group;
mod report;
pub mod sketch;
pub mod spans;
pub mod stats;

pub use cpiflame_counters::read::Reading;
pub use group::ReadPath;
pub use report::{MetricReport, RegionReport, Report, SCHEMA};
pub use sketch::Sketch;
pub use stats::Summary;

/// The events the original per-pixel instrumentation (libpfm4 around each pixel of a ray
/// tracer) counted: instructions, cycles, branches, branch-misses (need a hardware PMU).
pub const DEFAULT_EVENTS: &[&str] = &["instructions", "cycles", "branches", "branch-misses"];

/// Software events that count everywhere, for machines without a PMU.
pub const SOFTWARE_EVENTS: &[&str] = &["task-clock", "page-faults", "context-switches"];

/// Name of the elapsed-time metric in reports.
pub const NS: &str = "ns";

/// Errors opening or reading the counters. Each names the event (or spec) at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A spec that does not parse, or names a PMU this machine does not have (the message
    /// names the spec and the part at fault).
    #[error(transparent)]
    Spec(#[from] ResolveError),
    /// A spec asks for something counting cannot do (a sample rate, sample-read).
    #[error(transparent)]
    Unhonoured(#[from] Unhonoured),
    /// perf_event_open refused the event; `message` says why in words a user can act on.
    #[error("{message}")]
    Open {
        event: String,
        message: String,
        source: io::Error,
    },
    /// None of the hardware events among those asked for opens here.
    #[error(
        "no hardware event opens here ({}: {source}): no hardware PMU (most VMs) or none the kernel supports; count software events instead, e.g. {}",
        events.join(", "),
        SOFTWARE_EVENTS.join(",")
    )]
    NoHardware {
        events: Vec<String>,
        source: io::Error,
    },
    /// Reading an event failed.
    #[error("event {event}: reading the counter failed: {source}")]
    Read { event: String, source: io::Error },
    /// An empty list of events.
    #[error("no events to count")]
    NoEvents,
    /// [`Stats::merge`] of statistics of different events or accuracies.
    #[error("cannot merge statistics: {0}")]
    Merge(String),
}

/// Settings of a [`Markers`]; `Options::default()` is what [`Markers::new`] uses.
#[derive(Clone, Debug)]
pub struct Options {
    /// Read with rdpmc when every event allows it (default true). Off: always `read()`.
    pub rdpmc: bool,
    /// Open the events as one group (default true). Off: one `read()` per event.
    pub group: bool,
    /// Leave kernel counts out: `None` (default) decides from `perf_event_paranoid` (above 1
    /// and not root: yes), and retries with it when the kernel says EACCES.
    pub exclude_kernel: Option<bool>,
    /// Relative accuracy α of the quantiles (default 0.01).
    pub quantile_accuracy: f64,
    /// Bound on sketch buckets per metric (default 4096, 32 KiB).
    pub max_buckets: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rdpmc: true,
            group: true,
            exclude_kernel: None,
            quantile_accuracy: sketch::DEFAULT_ALPHA,
            max_buckets: sketch::DEFAULT_MAX_BUCKETS,
        }
    }
}

/// A region of a [`Markers`], from [`Markers::register`]: start and stop by id without
/// hashing the name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegionId(u32);

impl RegionId {
    /// The id as a number: regions are numbered 0, 1, ... in the order they were registered
    /// (what the C API hands out).
    pub fn index(self) -> u32 {
        self.0
    }

    /// The id numbered `index`. One that no region of a `Markers` has is ignored by its
    /// start, stop and lap ([`Outcome::UnknownRegion`]).
    pub fn from_index(index: u32) -> RegionId {
        RegionId(index)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::RegionId {}
    impl Sealed for &str {}
    impl Sealed for &String {}
}

/// What [`Markers::start`], [`Markers::stop`] and [`Markers::region`] take: a [`RegionId`]
/// (hot path) or a name (registered on first use).
pub trait RegionKey: sealed::Sealed {
    #[doc(hidden)]
    fn region_id(self, markers: &mut Markers) -> RegionId;
}

impl RegionKey for RegionId {
    #[inline]
    fn region_id(self, _: &mut Markers) -> RegionId {
        self
    }
}

impl RegionKey for &str {
    fn region_id(self, markers: &mut Markers) -> RegionId {
        markers.register(self)
    }
}

impl RegionKey for &String {
    fn region_id(self, markers: &mut Markers) -> RegionId {
        markers.register(self)
    }
}

/// What a [`Markers::start`], [`Markers::stop`] or [`Markers::lap`] did. The Rust API lets a
/// caller ignore it (every case is also counted in the region's statistics); the C API
/// (`cpiflame-markers-c`) turns the last four into error codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Started, stopped with its sample recorded, or lapped.
    Done,
    /// A start of a region that was running: it starts again from now
    /// ([`RegionStats::restarts`]).
    Restarted,
    /// A stop of a region that was not running: ignored ([`RegionStats::unmatched_stops`]).
    NotRunning,
    /// No such region in this `Markers` (an id from another one): nothing done.
    UnknownRegion,
    /// Reading the counters failed: nothing recorded, the region is not running
    /// ([`RegionStats::read_errors`]).
    ReadFailed,
}

/// One event's change over a region ([`delta`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delta {
    /// The event ran the whole region: the count difference.
    Counted(u64),
    /// The event ran part of the region: `Δcount × Δenabled / Δrunning`.
    Scaled(u64),
    /// The event did not run during the region (or its count went backwards): no value.
    NotCounted,
}

/// The change of one counter between two readings, multiplex-scaled
/// (see [`Reading::scaled`]).
pub fn delta(start: &Reading, stop: &Reading) -> Delta {
    if stop.value < start.value {
        return Delta::NotCounted;
    }
    let d = stop.since(start);
    match d.scaled() {
        None => Delta::NotCounted,
        Some(v) if d.time_running < d.time_enabled => Delta::Scaled(v),
        Some(v) => Delta::Counted(v),
    }
}

/// One metric of a region: elapsed ns or an event.
#[derive(Clone, Debug)]
pub struct Metric {
    name: String,
    summary: Summary,
    sketch: Sketch,
    not_counted: u64,
    scaled: u64,
    /// Sum of the values recorded (saturating): exact where the mean is not.
    total: u64,
}

impl Metric {
    fn new(name: &str, opts: &Options) -> Metric {
        Metric {
            name: name.to_string(),
            summary: Summary::new(),
            sketch: Sketch::new(opts.quantile_accuracy, opts.max_buckets).for_integers(),
            not_counted: 0,
            scaled: 0,
            total: 0,
        }
    }

    #[inline]
    fn add(&mut self, v: u64) {
        self.total = self.total.saturating_add(v);
        let x = v as f64;
        self.summary.add(x);
        self.sketch.add(x);
    }

    /// `ns` or the event's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Count, mean, variance, min, max.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// The quantile sketch.
    pub fn sketch(&self) -> &Sketch {
        &self.sketch
    }

    /// Samples in which the event did not run at all (no value recorded).
    pub fn not_counted(&self) -> u64 {
        self.not_counted
    }

    /// Samples whose value was scaled for multiplexing.
    pub fn scaled(&self) -> u64 {
        self.scaled
    }

    /// The sum of the values recorded (saturating at `u64::MAX`): the region's whole count of
    /// the event, to set against a whole run's (`perf stat`).
    pub fn total(&self) -> u64 {
        self.total
    }

    fn merge(&mut self, other: &Metric) -> Result<(), Error> {
        self.summary.merge(&other.summary);
        self.sketch
            .merge(&other.sketch)
            .map_err(|e| Error::Merge(format!("{}: {e}", self.name)))?;
        self.not_counted += other.not_counted;
        self.scaled += other.scaled;
        self.total = self.total.saturating_add(other.total);
        Ok(())
    }
}

/// Statistics of one region.
#[derive(Clone, Debug)]
pub struct RegionStats {
    name: String,
    samples: u64,
    unmatched_stops: u64,
    restarts: u64,
    read_errors: u64,
    first_read_error: Option<String>,
    /// `ns`, then one per event.
    metrics: Vec<Metric>,
}

impl RegionStats {
    fn new(name: &str, events: &[String], opts: &Options) -> RegionStats {
        let mut metrics = Vec::with_capacity(events.len() + 1);
        metrics.push(Metric::new(NS, opts));
        metrics.extend(events.iter().map(|e| Metric::new(e, opts)));
        RegionStats {
            name: name.to_string(),
            samples: 0,
            unmatched_stops: 0,
            restarts: 0,
            read_errors: 0,
            first_read_error: None,
            metrics,
        }
    }

    #[inline]
    fn record(&mut self, ns: u64, start: &[Reading], stop: &[Reading]) {
        self.samples += 1;
        self.metrics[0].add(ns);
        for ((m, a), b) in self.metrics[1..].iter_mut().zip(start).zip(stop) {
            match delta(a, b) {
                Delta::Counted(v) => m.add(v),
                Delta::Scaled(v) => {
                    m.add(v);
                    m.scaled += 1;
                }
                Delta::NotCounted => m.not_counted += 1,
            }
        }
    }

    fn read_failed(&mut self, err: &io::Error) {
        self.read_errors += 1;
        if self.first_read_error.is_none() {
            self.first_read_error = Some(err.to_string());
        }
    }

    /// The region's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Completed start/stop pairs.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Stops of a region that was not started (ignored).
    pub fn unmatched_stops(&self) -> u64 {
        self.unmatched_stops
    }

    /// Starts of a region already started (the later start wins).
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// Starts or stops dropped because reading the counters failed.
    pub fn read_errors(&self) -> u64 {
        self.read_errors
    }

    /// `ns` first, then one metric per event, in the order the events were given.
    pub fn metrics(&self) -> &[Metric] {
        &self.metrics
    }

    /// The metric named `name` (`ns` or an event name).
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    fn merge(&mut self, other: &RegionStats) -> Result<(), Error> {
        for (a, b) in self.metrics.iter_mut().zip(&other.metrics) {
            a.merge(b)?;
        }
        self.samples += other.samples;
        self.unmatched_stops += other.unmatched_stops;
        self.restarts += other.restarts;
        self.read_errors += other.read_errors;
        if self.first_read_error.is_none() {
            self.first_read_error.clone_from(&other.first_read_error);
        }
        Ok(())
    }
}

/// All regions' statistics: what a [`Markers`] accumulates. `Send`, so threads can hand
/// theirs to one that merges them ([`Stats::merge`]).
#[derive(Clone, Debug)]
pub struct Stats {
    events: Vec<String>,
    read_path: ReadPath,
    exclude_kernel: bool,
    alpha: f64,
    rdpmc_fallbacks: u64,
    regions: Vec<RegionStats>,
}

impl Stats {
    /// The events, in column order.
    pub fn events(&self) -> &[String] {
        &self.events
    }

    /// Every region, in the order they were registered.
    pub fn regions(&self) -> &[RegionStats] {
        &self.regions
    }

    /// The region named `name`.
    pub fn region(&self, name: &str) -> Option<&RegionStats> {
        self.regions.iter().find(|r| r.name == name)
    }

    /// Snapshots that were to be read with rdpmc but needed a `read()`.
    pub fn rdpmc_fallbacks(&self) -> u64 {
        self.rdpmc_fallbacks
    }

    /// Adds `other`'s regions to these (by name; new names are appended). Both must count
    /// the same events with the same quantile accuracy.
    pub fn merge(&mut self, other: &Stats) -> Result<(), Error> {
        if self.events != other.events {
            return Err(Error::Merge(format!(
                "events differ ({} vs {})",
                self.events.join(","),
                other.events.join(",")
            )));
        }
        if self.alpha != other.alpha {
            return Err(Error::Merge(format!(
                "quantile accuracy differs ({} vs {})",
                self.alpha, other.alpha
            )));
        }
        for r in &other.regions {
            match self.regions.iter_mut().find(|s| s.name == r.name) {
                Some(s) => s.merge(r)?,
                None => self.regions.push(r.clone()),
            }
        }
        self.rdpmc_fallbacks += other.rdpmc_fallbacks;
        self.exclude_kernel |= other.exclude_kernel;
        Ok(())
    }

    /// The report: numbers computed from the statistics.
    pub fn report(&self) -> Report {
        Report::from_stats(
            &self.regions,
            &self.events,
            self.read_path,
            self.exclude_kernel,
            self.alpha,
            self.rdpmc_fallbacks,
        )
    }
}

struct Region {
    running: bool,
    /// CLOCK_MONOTONIC ns of the start.
    t0: u64,
    start: Vec<Reading>,
}

/// Counters of the calling thread, and named regions measured with them. See the crate
/// docs.
///
/// Not `Send`: the counters count the thread that opened them.
///
/// ```compile_fail
/// fn send<T: Send>() {}
/// send::<cpiflame_markers::Markers>();
/// ```
pub struct Markers {
    counters: group::Counters,
    opts: Options,
    regions: Vec<Region>,
    stats: Stats,
    by_name: HashMap<String, RegionId>,
    scratch: Vec<Reading>,
    /// `CPIFLAME_MARKERS_DIR` when it was set at open: each region that ends is also a line
    /// of the thread's marker file there ([`spans`]).
    spans_dir: Option<PathBuf>,
    /// Counts belong to the thread that opened them; rdpmc only works there.
    _not_send: PhantomData<*const ()>,
}

impl Drop for Markers {
    fn drop(&mut self) {
        if self.spans_dir.is_some() {
            spans::flush();
        }
    }
}

impl std::fmt::Debug for Markers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Markers")
            .field("events", &self.stats.events)
            .field("read_path", &self.stats.read_path)
            .field("regions", &self.stats.regions.len())
            .finish()
    }
}

impl Markers {
    /// Opens `specs` (each a spec or a comma-separated list of specs) on the calling thread,
    /// with the default [`Options`].
    pub fn new<S: AsRef<str>>(specs: &[S]) -> Result<Markers, Error> {
        Markers::with_options(specs, Options::default())
    }

    /// [`Markers::new`] with `opts`.
    pub fn with_options<S: AsRef<str>>(specs: &[S], opts: Options) -> Result<Markers, Error> {
        let text = specs
            .iter()
            .map(|s| s.as_ref())
            .collect::<Vec<_>>()
            .join(",");
        if text.trim().is_empty() {
            return Err(Error::NoEvents);
        }
        let parsed = resolve_events(&text, std::path::Path::new(SYSFS_ROOT))?;
        let counters = group::Counters::open(&parsed, opts.group, opts.rdpmc, opts.exclude_kernel)?;
        let n = counters.len();
        let stats = Stats {
            events: counters.names().to_vec(),
            read_path: counters.read_path(),
            exclude_kernel: counters.exclude_kernel(),
            alpha: Sketch::new(opts.quantile_accuracy, opts.max_buckets).relative_accuracy(),
            rdpmc_fallbacks: 0,
            regions: Vec::new(),
        };
        Ok(Markers {
            counters,
            opts,
            regions: Vec::new(),
            stats,
            by_name: HashMap::new(),
            scratch: vec![Reading::default(); n],
            spans_dir: spans::dir_from_env(),
            _not_send: PhantomData,
        })
    }

    /// The default events ([`DEFAULT_EVENTS`]); [`Error::NoHardware`] without a PMU.
    pub fn with_default_events() -> Result<Markers, Error> {
        Markers::new(DEFAULT_EVENTS)
    }

    /// The events' names, in column order.
    pub fn events(&self) -> &[String] {
        &self.stats.events
    }

    /// How counters are read at each start and stop.
    pub fn read_path(&self) -> ReadPath {
        self.stats.read_path
    }

    /// Whether kernel counts are left out (`perf_event_paranoid`).
    pub fn excludes_kernel(&self) -> bool {
        self.stats.exclude_kernel
    }

    /// The id of region `name`, registering it on first use.
    pub fn register(&mut self, name: &str) -> RegionId {
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        let id = RegionId(self.regions.len() as u32);
        let n = self.counters.len();
        self.regions.push(Region {
            running: false,
            t0: 0,
            start: vec![Reading::default(); n],
        });
        self.stats
            .regions
            .push(RegionStats::new(name, &self.stats.events, &self.opts));
        self.by_name.insert(name.to_string(), id);
        id
    }

    /// Starts `region`: reads every counter, then the clock. Starting a region that is
    /// already started restarts it (counted in [`RegionStats::restarts`]). An id from
    /// another `Markers` is ignored. The [`Outcome`] says which of these happened.
    #[inline]
    pub fn start(&mut self, region: impl RegionKey) -> Outcome {
        let id = region.region_id(self).0 as usize;
        let Some(r) = self.regions.get_mut(id) else {
            return Outcome::UnknownRegion;
        };
        if let Err(e) = self
            .counters
            .read(&mut r.start, &mut self.stats.rdpmc_fallbacks)
        {
            r.running = false;
            self.stats.regions[id].read_failed(&e);
            return Outcome::ReadFailed;
        }
        let outcome = if r.running {
            self.stats.regions[id].restarts += 1;
            Outcome::Restarted
        } else {
            Outcome::Done
        };
        r.running = true;
        r.t0 = spans::monotonic_ns();
        outcome
    }

    /// Stops `region`: reads the clock, then every counter, and adds the region's elapsed
    /// nanoseconds and counter deltas to its statistics. A stop without a start is ignored
    /// (counted in [`RegionStats::unmatched_stops`]).
    #[inline]
    pub fn stop(&mut self, region: impl RegionKey) -> Outcome {
        let now = spans::monotonic_ns();
        let id = region.region_id(self).0 as usize;
        let (Some(r), Some(stats)) = (self.regions.get_mut(id), self.stats.regions.get_mut(id))
        else {
            return Outcome::UnknownRegion;
        };
        if !r.running {
            stats.unmatched_stops += 1;
            return Outcome::NotRunning;
        }
        r.running = false;
        if let Err(e) = self
            .counters
            .read(&mut self.scratch, &mut self.stats.rdpmc_fallbacks)
        {
            stats.read_failed(&e);
            return Outcome::ReadFailed;
        }
        stats.record(now.saturating_sub(r.t0), &r.start, &self.scratch);
        if let Some(dir) = &self.spans_dir {
            spans::write(dir, r.t0, now, &stats.name);
        }
        Outcome::Done
    }

    /// Stops `region` and starts it again from the same reading: **one** read for
    /// back-to-back regions (a per-pixel loop calls `lap` before each pixel and `stop` after
    /// the last), where `stop` + `start` take two. Each sample then also holds the loop's own
    /// code between two laps. A region that is not running is just started.
    #[inline]
    pub fn lap(&mut self, region: impl RegionKey) -> Outcome {
        let now = spans::monotonic_ns();
        let id = region.region_id(self).0 as usize;
        let (Some(r), Some(stats)) = (self.regions.get_mut(id), self.stats.regions.get_mut(id))
        else {
            return Outcome::UnknownRegion;
        };
        if let Err(e) = self
            .counters
            .read(&mut self.scratch, &mut self.stats.rdpmc_fallbacks)
        {
            r.running = false;
            stats.read_failed(&e);
            return Outcome::ReadFailed;
        }
        if r.running {
            stats.record(now.saturating_sub(r.t0), &r.start, &self.scratch);
            if let Some(dir) = &self.spans_dir {
                spans::write(dir, r.t0, now, &stats.name);
            }
        }
        r.start.copy_from_slice(&self.scratch);
        r.t0 = now;
        r.running = true;
        Outcome::Done
    }

    /// Starts `region` and returns a guard that stops it when dropped. The guard gives
    /// access to the `Markers` (it derefs to it), so regions nest:
    /// `let mut outer = m.region("frame"); { let _row = outer.region("row"); }`.
    pub fn region(&mut self, region: impl RegionKey) -> RegionGuard<'_> {
        let id = region.region_id(self);
        let _ = self.start(id);
        RegionGuard { markers: self, id }
    }

    /// Reads every counter now (in event order), outside any region: the raw values,
    /// times and ids.
    pub fn read_now(&mut self) -> Result<Vec<Reading>, Error> {
        let mut out = vec![Reading::default(); self.counters.len()];
        let mut fallbacks = 0;
        self.counters
            .read(&mut out, &mut fallbacks)
            .map_err(|source| Error::Read {
                event: self.stats.events.join(","),
                source,
            })?;
        self.stats.rdpmc_fallbacks += fallbacks;
        Ok(out)
    }

    /// The statistics so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Statistics of the region `name`.
    pub fn region_stats(&self, name: &str) -> Option<&RegionStats> {
        self.stats.region(name)
    }

    /// Forgets every region's statistics (regions stay registered; started regions stay
    /// started).
    pub fn reset(&mut self) {
        let events = self.stats.events.clone();
        for r in &mut self.stats.regions {
            *r = RegionStats::new(&r.name.clone(), &events, &self.opts);
        }
        self.stats.rdpmc_fallbacks = 0;
    }

    /// The report of every region (table with `Display`, JSON with [`Report::to_json`]).
    pub fn report(&self) -> Report {
        self.stats.report()
    }
}

/// A started region that stops when dropped ([`Markers::region`]).
pub struct RegionGuard<'a> {
    markers: &'a mut Markers,
    id: RegionId,
}

impl RegionGuard<'_> {
    /// The region's id.
    pub fn id(&self) -> RegionId {
        self.id
    }
}

impl std::ops::Deref for RegionGuard<'_> {
    type Target = Markers;
    fn deref(&self) -> &Markers {
        self.markers
    }
}

impl std::ops::DerefMut for RegionGuard<'_> {
    fn deref_mut(&mut self) -> &mut Markers {
        self.markers
    }
}

impl Drop for RegionGuard<'_> {
    fn drop(&mut self) {
        let _ = self.markers.stop(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(value: u64, time_enabled: u64, time_running: u64) -> Reading {
        Reading {
            value,
            time_enabled,
            time_running,
            id: 1,
        }
    }

    #[test]
    fn multiplex_scaling_of_region_deltas() {
        // Ran the whole region: the plain difference.
        assert_eq!(
            delta(&r(100, 1_000, 1_000), &r(600, 3_000, 3_000)),
            Delta::Counted(500)
        );
        // Ran half of it: 500 counted in 1000 of 2000 ns enabled -> 1000.
        assert_eq!(
            delta(&r(100, 1_000, 400), &r(600, 3_000, 1_400)),
            Delta::Scaled(1_000)
        );
        // A quarter: x4, rounding down.
        assert_eq!(delta(&r(0, 0, 0), &r(333, 400, 100)), Delta::Scaled(1_332));
        // Not running during the region (running unchanged while enabled grew): no value,
        // whatever the count says.
        assert_eq!(
            delta(&r(100, 1_000, 400), &r(100, 3_000, 400)),
            Delta::NotCounted
        );
        // Times that did not move (a page read between kernel updates): unscaled value.
        assert_eq!(
            delta(&r(100, 1_000, 1_000), &r(150, 1_000, 1_000)),
            Delta::Counted(50)
        );
        // A count that went backwards is not a value.
        assert_eq!(delta(&r(100, 0, 0), &r(99, 10, 10)), Delta::NotCounted);
        // Large counts do not overflow the scaling.
        assert_eq!(
            delta(&r(0, 0, 0), &r(u64::MAX / 2, 3, 2)),
            Delta::Scaled(u64::MAX / 4 * 3 + 1)
        );
    }

    #[test]
    fn region_stats_record_scaled_and_missing_samples() {
        let opts = Options::default();
        let events = vec!["a".to_string(), "b".to_string()];
        let mut s = RegionStats::new("x", &events, &opts);
        let start = [r(0, 0, 0), r(0, 0, 0)];
        s.record(10, &start, &[r(5, 100, 100), r(7, 100, 50)]);
        s.record(20, &start, &[r(9, 100, 100), r(7, 100, 0)]);
        assert_eq!(s.samples(), 2);
        let ns = s.metric(NS).unwrap();
        assert_eq!(ns.summary().mean(), Some(15.0));
        let a = s.metric("a").unwrap();
        assert_eq!(
            (a.summary().count(), a.scaled(), a.not_counted()),
            (2, 0, 0)
        );
        let b = s.metric("b").unwrap();
        assert_eq!(
            (b.summary().count(), b.scaled(), b.not_counted()),
            (1, 1, 1)
        );
        assert_eq!(b.summary().mean(), Some(14.0));
    }

    #[test]
    fn merging_stats_adds_regions_by_name() {
        let opts = Options::default();
        let events = vec!["a".to_string()];
        let mk = |names: &[&str], v: u64| {
            let mut regions = Vec::new();
            for n in names {
                let mut s = RegionStats::new(n, &events, &opts);
                s.record(v, &[r(0, 0, 0)], &[r(v, 1, 1)]);
                regions.push(s);
            }
            Stats {
                events: events.clone(),
                read_path: ReadPath::GroupRead,
                exclude_kernel: false,
                alpha: 0.01,
                rdpmc_fallbacks: 0,
                regions,
            }
        };
        let mut a = mk(&["x", "y"], 10);
        a.merge(&mk(&["y", "z"], 30)).unwrap();
        let names: Vec<&str> = a.regions().iter().map(|r| r.name()).collect();
        assert_eq!(names, ["x", "y", "z"]);
        let y = a.region("y").unwrap();
        assert_eq!(y.samples(), 2);
        assert_eq!(y.metric("a").unwrap().summary().mean(), Some(20.0));
        let mut other = mk(&["x"], 1);
        other.events = vec!["b".into()];
        assert!(matches!(a.merge(&other), Err(Error::Merge(_))));
    }
}
