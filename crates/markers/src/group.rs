//! The events of one [`crate::Markers`]: opened on the calling thread, read as a group.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};

use cpiflame_counters::event_use::{spec_bits, Use};
use cpiflame_counters::rdpmc::MappedCounter;
use cpiflame_counters::read::{parse_group, read_single, Reading, READ_FORMAT, READ_FORMAT_GROUP};
use cpiflame_counters::sys;
use cpiflame_events::ResolvedEvent;
use cpiflame_perf_data::attr_flags;
use cpiflame_perf_data::write::EventAttr;

use crate::Error;

/// How a [`crate::Markers`] reads its counters at each start and stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadPath {
    /// `rdpmc` through each event's mmap page: no system call (falls back to one `read()`
    /// of the group for a snapshot in which an event is not on a counter).
    Rdpmc,
    /// One `read()` of the group leader (PERF_FORMAT_GROUP): every counter, with the
    /// group's enabled and running times, in one system call.
    GroupRead,
    /// The events could not be opened as one group: one `read()` per event.
    PerEventRead,
}

impl ReadPath {
    /// A stable short name (the JSON report's `read_path`).
    pub fn as_str(&self) -> &'static str {
        match self {
            ReadPath::Rdpmc => "rdpmc",
            ReadPath::GroupRead => "group-read",
            ReadPath::PerEventRead => "per-event-read",
        }
    }
}

impl fmt::Display for ReadPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an event needs to be opened.
struct Event {
    name: String,
    attr: EventAttr,
}

/// PERF_TYPE_SOFTWARE: the events that open without a PMU.
const TYPE_SOFTWARE: u32 = cpiflame_events::abi::attr_type::SOFTWARE;

fn is_hardware(event: &Event) -> bool {
    event.attr.type_ != TYPE_SOFTWARE
}

fn attr_for(e: &ResolvedEvent, leader: bool, exclude_kernel: bool) -> Result<EventAttr, Error> {
    // The spec's own bits (exclusions, precise level, pinned ...), as perf sets them.
    let mut flags = spec_bits(e, Use::Counting, leader)?;
    if exclude_kernel {
        flags |= attr_flags::EXCLUDE_KERNEL | attr_flags::EXCLUDE_HV;
    }
    Ok(EventAttr {
        type_: e.type_,
        config: e.config,
        config1: e.config1,
        config2: e.config2,
        // Counting: no sample period, no sample type; enabled from the start.
        read_format: READ_FORMAT_GROUP,
        flags,
        name: Some(e.name.clone()),
        ..EventAttr::default()
    })
}

/// Whether kernel counts must be left out: `perf_event_paranoid` above 1 and not root.
pub(crate) fn must_exclude_kernel() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    !root && sys::paranoid().is_some_and(|p| p > 1)
}

/// Open counters of the calling thread and the buffers to read them without allocating.
pub(crate) struct Counters {
    names: Vec<String>,
    /// In event order; `files[0]` is the leader in group mode.
    files: Vec<File>,
    ids: Vec<u64>,
    group: bool,
    /// Group read buffer and its parse.
    buf: Vec<u8>,
    parsed: Vec<Reading>,
    /// Event i's position in a group read.
    slot: Vec<usize>,
    /// Set when every event can be read with rdpmc.
    pages: Option<Vec<MappedCounter>>,
    exclude_kernel: bool,
}

/// An event that failed to open, and how.
struct OpenFailure {
    event: usize,
    err: io::Error,
    /// Whether it opened on its own (so only grouping failed).
    alone_ok: bool,
}

fn open_one(attr: &EventAttr, group: Option<&File>) -> io::Result<File> {
    sys::open(attr, 0, -1, group)
}

fn single(attr: &EventAttr) -> EventAttr {
    EventAttr {
        read_format: READ_FORMAT,
        ..attr.clone()
    }
}

/// Opens the events as one group: the leader disabled, the members enabled, then the leader
/// (so the whole group) enabled once every member has joined. Members added to a leader that
/// is already counting are not scheduled in until the group next is (a context switch):
/// seen on Linux 6.18, where a page-faults member of a running task-clock group counted
/// nothing, and the group read shows only the leader's times, so nothing says so.
fn open_group(events: &[Event]) -> Result<Vec<File>, OpenFailure> {
    let mut files: Vec<File> = Vec::with_capacity(events.len());
    for (i, e) in events.iter().enumerate() {
        let attr = if i == 0 {
            EventAttr {
                flags: e.attr.flags | attr_flags::DISABLED,
                ..e.attr.clone()
            }
        } else {
            e.attr.clone()
        };
        match open_one(&attr, files.first()) {
            Ok(f) => files.push(f),
            Err(err) => {
                let alone_ok = i > 0 && open_one(&single(&e.attr), None).is_ok();
                return Err(OpenFailure {
                    event: i,
                    err,
                    alone_ok,
                });
            }
        }
    }
    if let Some(leader) = files.first() {
        sys::enable(leader).map_err(|err| OpenFailure {
            event: 0,
            err,
            alone_ok: false,
        })?;
    }
    Ok(files)
}

fn open_each(events: &[Event]) -> Result<Vec<File>, OpenFailure> {
    events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            open_one(&single(&e.attr), None).map_err(|err| OpenFailure {
                event: i,
                err,
                alone_ok: false,
            })
        })
        .collect()
}

fn is_permission(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM))
}

/// The error for an event that does not open at all.
fn open_error(events: &[Event], failure: OpenFailure) -> Error {
    let e = &events[failure.event];
    let no_such = matches!(
        failure.err.raw_os_error(),
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP)
    );
    if no_such && is_hardware(e) {
        let hardware: Vec<&Event> = events.iter().filter(|e| is_hardware(e)).collect();
        let any_opens = hardware
            .iter()
            .any(|h| open_one(&single(&h.attr), None).is_ok());
        if !any_opens {
            return Error::NoHardware {
                events: hardware.iter().map(|h| h.name.clone()).collect(),
                source: failure.err,
            };
        }
    }
    Error::Open {
        event: e.name.clone(),
        message: sys::explain_open_error(&e.name, &failure.err),
        source: failure.err,
    }
}

impl Counters {
    /// Opens `specs` on the calling thread: as one group when the kernel accepts it, else
    /// one by one. With `allow_rdpmc`, maps every event's page and reads with rdpmc when all
    /// of them allow it.
    pub(crate) fn open(
        specs: &[ResolvedEvent],
        grouped: bool,
        allow_rdpmc: bool,
        exclude_kernel: Option<bool>,
    ) -> Result<Counters, Error> {
        if specs.is_empty() {
            return Err(Error::NoEvents);
        }
        let auto = exclude_kernel.is_none();
        let mut exclude = exclude_kernel.unwrap_or_else(must_exclude_kernel);
        loop {
            let events = specs
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    Ok(Event {
                        name: s.name.clone(),
                        attr: attr_for(s, i == 0, exclude)?,
                    })
                })
                .collect::<Result<Vec<_>, Error>>()?;
            let attempt = if grouped {
                match open_group(&events) {
                    Ok(files) => Ok((files, true)),
                    Err(f) if f.alone_ok => open_each(&events).map(|files| (files, false)),
                    Err(f) => Err(f),
                }
            } else {
                open_each(&events).map(|files| (files, false))
            };
            match attempt {
                Ok((files, group)) => {
                    return Counters::new(&events, files, group, allow_rdpmc, exclude)
                }
                // As perf does: unprivileged users may count user space only.
                Err(f) if auto && !exclude && is_permission(&f.err) => exclude = true,
                Err(f) => return Err(open_error(&events, f)),
            }
        }
    }

    fn new(
        events: &[Event],
        files: Vec<File>,
        group: bool,
        allow_rdpmc: bool,
        exclude_kernel: bool,
    ) -> Result<Counters, Error> {
        let n = files.len();
        let mut ids = Vec::with_capacity(n);
        for (e, f) in events.iter().zip(&files) {
            ids.push(sys::event_id(f).map_err(|source| Error::Read {
                event: e.name.clone(),
                source,
            })?);
        }
        let mut c = Counters {
            names: events.iter().map(|e| e.name.clone()).collect(),
            files,
            ids,
            group,
            buf: vec![0u8; 24 + 16 * n],
            parsed: Vec::with_capacity(n),
            slot: (0..n).collect(),
            pages: None,
            exclude_kernel,
        };
        if group {
            // The kernel lists the leader, then siblings in the order they joined; match by
            // id rather than rely on it.
            c.read_group_raw().map_err(|source| Error::Read {
                event: c.names[0].clone(),
                source,
            })?;
            for i in 0..n {
                c.slot[i] = c
                    .parsed
                    .iter()
                    .position(|r| r.id == c.ids[i])
                    .ok_or_else(|| Error::Read {
                        event: c.names[i].clone(),
                        source: io::Error::other("the group read does not list this event"),
                    })?;
            }
        }
        if allow_rdpmc {
            let pages: Vec<MappedCounter> = c
                .files
                .iter()
                .filter_map(|f| MappedCounter::new(f).ok())
                .collect();
            if pages.len() == n && pages.iter().all(MappedCounter::rdpmc_available) {
                c.pages = Some(pages);
            }
        }
        Ok(c)
    }

    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    pub(crate) fn len(&self) -> usize {
        self.files.len()
    }

    pub(crate) fn exclude_kernel(&self) -> bool {
        self.exclude_kernel
    }

    pub(crate) fn read_path(&self) -> ReadPath {
        match (&self.pages, self.group) {
            (Some(_), _) => ReadPath::Rdpmc,
            (None, true) => ReadPath::GroupRead,
            (None, false) => ReadPath::PerEventRead,
        }
    }

    fn read_group_raw(&mut self) -> io::Result<()> {
        let n = (&self.files[0]).read(&mut self.buf)?;
        parse_group(&self.buf[..n], &mut self.parsed)
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "short group read"))
    }

    /// Reads every counter into `out` (one entry per event, in event order), with the
    /// cheapest path available. `rdpmc_fallbacks` counts rdpmc snapshots that had to use
    /// `read()` instead.
    #[inline]
    pub(crate) fn read(
        &mut self,
        out: &mut [Reading],
        rdpmc_fallbacks: &mut u64,
    ) -> io::Result<()> {
        if let Some(pages) = &self.pages {
            let mut ok = true;
            for ((page, o), &id) in pages.iter().zip(out.iter_mut()).zip(&self.ids) {
                match page.read() {
                    Ok(r) => *o = r.to_reading(id),
                    Err(_) => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                return Ok(());
            }
            *rdpmc_fallbacks += 1;
        }
        self.read_syscall(out)
    }

    /// Reads with `read()`: one call for a group, one per event otherwise.
    #[inline]
    pub(crate) fn read_syscall(&mut self, out: &mut [Reading]) -> io::Result<()> {
        if self.group {
            self.read_group_raw()?;
            for (o, &s) in out.iter_mut().zip(&self.slot) {
                *o = self.parsed.get(s).copied().ok_or_else(|| {
                    io::Error::new(io::ErrorKind::UnexpectedEof, "short group read")
                })?;
            }
            Ok(())
        } else {
            for (o, f) in out.iter_mut().zip(&self.files) {
                *o = read_single(f)?;
            }
            Ok(())
        }
    }
}
