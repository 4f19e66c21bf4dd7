//! Draining the ring buffers into the file while the target runs: records are written as
//! they come, samples' user stacks cut to the bytes in use; counts of samples and losses,
//! and the files mapped (for their build ids), are kept for the report.
//!
//! It must never write past the first write error: that error stops the recording, and the
//! command is asked to stop (SIGINT) for `finish` to reap.

use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use cpiflame_counters::{child, ring};
use cpiflame_perf_data::abi::record as rt;
use cpiflame_perf_data::write::{
    finished_round_record, set_mmap2_build_id, PerfDataWriter, WriteError,
};
use cpiflame_perf_data::{trim_user_stack_to, Endian, EventAttr, RecordKind, RecordView};
use cpiflame_unwind::Unwinder;

use crate::file_facts::FileFacts;
use crate::jitfiles::JitFiles;
use crate::offcpu::WakeeFilter;
use crate::rotate;
use crate::side_band::SideBand;
use crate::spool::Spool;
use crate::{CallGraph, RecordOptions, Report, Session, Status};

/// Drains the rings into the file until the target ends (or the time is up); returns the
/// first write error, which stops the recording.
pub(crate) fn drain_until_done(
    options: &RecordOptions,
    session: &mut Session,
    state: &mut Decoder,
    report: &mut Report,
    status: &mut dyn FnMut(Status<'_>),
) -> Result<(), WriteError> {
    let started = Instant::now();
    let deadline = options.duration.map(|d| started + d);
    let mut last_status = Instant::now();
    let mut stop_sent = false;
    let mut poll_fds: Vec<libc::pollfd> = session
        .opened
        .ring_fds
        .iter()
        .map(|&r| libc::pollfd {
            fd: session.opened.fds[r].as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let outcome = 'recording: {
        loop {
            // SAFETY: poll on fds we own, for at most 100 ms.
            unsafe { libc::poll(poll_fds.as_mut_ptr(), poll_fds.len() as _, 100) };
            let done = match &mut session.child {
                Some(c) => c.try_wait().is_some(),
                None => {
                    child::STOP.load(std::sync::atomic::Ordering::SeqCst)
                        || (options.cpus.is_none()
                            && !session
                                .watched
                                .iter()
                                .any(|p| Path::new(&format!("/proc/{p}")).exists()))
                }
            };
            if let Err(e) = drain_round(&mut session.rings, &mut session.writer, state, report) {
                break 'recording Err(e);
            }
            // What was drained reaches the file at a bounded interval, so a recorder that is
            // killed leaves the records up to the last flush (the buffer alone would hold a
            // mebibyte, a minute of a quiet recording).
            if let Err(source) = session.writer.get_ref().flush_due() {
                break 'recording Err(WriteError::Io {
                    what: "a record",
                    source,
                });
            }
            let bytes = session.writer.bytes_written();
            let due = session.rotating.as_mut().filter(|r| !done && r.due(bytes));
            if let (Some(r), Some(side_band)) = (due, state.side_band.as_mut()) {
                let (attrs, writer) = (&session.attrs, &mut session.writer);
                let switched = rotate::switch(
                    options,
                    attrs,
                    writer,
                    r,
                    &mut state.facts,
                    side_band,
                    report,
                    status,
                );
                if let Err(e) = switched {
                    break 'recording Err(e);
                }
            }
            if last_status.elapsed() >= Duration::from_millis(250) {
                last_status = Instant::now();
                status(Status::Progress {
                    samples: report.samples.iter().sum(),
                    lost: report.lost,
                });
            }
            if done {
                break;
            }
            if let Some(d) = deadline {
                if Instant::now() >= d {
                    match &session.child {
                        Some(c) if !stop_sent => {
                            c.kill(libc::SIGINT);
                            stop_sent = true;
                            report.stopped_at_duration = true;
                        }
                        Some(_) => {}
                        None => break,
                    }
                }
            }
        }
        // Whatever the kernel wrote after the last poll.
        drain_round(&mut session.rings, &mut session.writer, state, report)
    };
    outcome
}

/// Drains every ring and ends the round; the first write error stops the recording.
pub(crate) fn drain_round(
    rings: &mut [ring::Ring],
    writer: &mut PerfDataWriter<Spool>,
    state: &mut Decoder,
    report: &mut Report,
) -> Result<(), WriteError> {
    if drain_all(rings, writer, state, report)? > 0 {
        writer.write_record(&finished_round_record())?;
    }
    Ok(())
}

/// What draining keeps between rounds: the scratch of decoding the records, and what
/// they tell, each part kept by its own owner.
pub(crate) struct Decoder {
    pub(crate) by_id: HashMap<u64, usize>,
    /// Records of the current pass, and their (time, offset, length): kept to reuse.
    arena: Vec<u8>,
    index: Vec<(u64, usize, usize)>,
    unwinder: Option<Unwinder>,
    /// The attrs as opened. Their sample_id trailers are the same (TID, TIME, CPU,
    /// IDENTIFIER), so side-band records are read with the first; samples are read with
    /// their own event's (`--off-cpu`'s wakeup tracepoint has no stack, so its time lies
    /// elsewhere).
    pub(crate) attrs: Vec<EventAttr>,
    trimmed: Vec<u8>,
    /// `--off-cpu`'s wakeups seen on every CPU: only those of recorded threads are kept.
    pub(crate) wakees: Option<WakeeFilter>,
    /// What the file being written holds, for its feature sections.
    pub(crate) facts: FileFacts,
    /// With `--switch-output`: what every new file starts with.
    pub(crate) side_band: Option<SideBand>,
    /// The JIT dumps mapped and the processes sampled, whose files are kept at the end.
    pub(crate) jit: JitFiles,
}

impl Decoder {
    pub(crate) fn new(attrs: &[EventAttr], call_graph: CallGraph, rotating: bool) -> Decoder {
        // With DWARF call chains, samples are unwound as they come (unwinding only, no
        // names) to learn how much of each stack copy the unwinder reads; only that much is
        // kept.
        let unwinder = matches!(call_graph, CallGraph::Dwarf { .. }).then(|| {
            Unwinder::new(
                &cpiflame_perf_data::Meta::default(),
                cpiflame_unwind::Options {
                    unwind_only: true,
                    recording_now: true,
                    ..cpiflame_unwind::Options::default()
                },
            )
        });
        Decoder {
            by_id: attrs
                .iter()
                .enumerate()
                .flat_map(|(i, a)| a.ids.iter().map(move |&id| (id, i)))
                .collect(),
            arena: Vec::new(),
            index: Vec::new(),
            unwinder,
            attrs: attrs.to_vec(),
            trimmed: Vec::new(),
            wakees: None,
            facts: FileFacts::default(),
            side_band: rotating.then(SideBand::default),
            jit: JitFiles::default(),
        }
    }
}

/// Drains every ring buffer into the file; returns the records written.
pub(crate) fn drain_all(
    rings: &mut [ring::Ring],
    writer: &mut PerfDataWriter<Spool>,
    state: &mut Decoder,
    report: &mut Report,
) -> Result<u64, WriteError> {
    // Every ring's records of this pass, copied out and then handled in time order, so the
    // record-time unwinder sees a thread's mappings before its samples even when the kernel
    // put them in different CPUs' buffers (as the reader will, which sorts the same way).
    let mut arena = std::mem::take(&mut state.arena);
    let mut index = std::mem::take(&mut state.index);
    arena.clear();
    index.clear();
    let mut last_time = 0;
    for ring in rings.iter_mut() {
        if ring.pending() == 0 {
            continue;
        }
        ring.drain(|record| {
            let time = RecordView::parse(record, Endian::NATIVE)
                .and_then(|view| view.time(&state.attrs[event_of(&view, &state.by_id)]))
                .unwrap_or(last_time);
            last_time = time;
            index.push((time, arena.len(), record.len()));
            arena.extend_from_slice(record);
        });
    }
    index.sort_by_key(|&(time, at, _)| (time, at));
    let mut result = Ok(());
    for &(_, at, len) in &index {
        result = write_one(&arena[at..at + len], writer, state, report);
        if result.is_err() {
            break;
        }
    }
    let written = index.len() as u64;
    state.arena = arena;
    state.index = index;
    result.map(|()| written)
}

/// Writes one drained record, counting what the report counts and feeding the unwinder;
/// samples go out with their user stack copy trimmed to what the unwinder read.
pub(crate) fn write_one(
    record: &[u8],
    writer: &mut PerfDataWriter<Spool>,
    state: &mut Decoder,
    report: &mut Report,
) -> Result<(), WriteError> {
    let Some(view) = RecordView::parse(record, Endian::NATIVE) else {
        // Not a whole record: the writer says why.
        return writer.write_record(record);
    };
    match view.record_type {
        rt::SAMPLE => {
            if !keeps_wakeup(&view, state) {
                return Ok(());
            }
            let trimmed = on_sample(&view, record, state, report);
            writer.get_ref().note_samples(report.samples.iter().sum());
            if let Some(trimmed) = trimmed {
                return writer.write_record(trimmed);
            }
        }
        rt::LOST => {
            if let Ok(RecordKind::Lost { lost, .. }) = view.side_band(&state.attrs[0]) {
                report.lost += lost;
            }
        }
        rt::THROTTLE => report.throttled += 1,
        rt::CGROUP => {
            if let Some(side_band) = &mut state.side_band {
                side_band.keep_cgroup(record);
            }
        }
        rt::MMAP | rt::MMAP2 | rt::COMM | rt::FORK | rt::EXIT => {
            if let Ok(kind) = view.side_band(&state.attrs[0]) {
                if let (Some(wakees), RecordKind::Fork { tid, .. }) = (&mut state.wakees, &kind) {
                    wakees.add(*tid);
                }
                if let Some(unwinder) = &mut state.unwinder {
                    unwinder.observe(&kind);
                }
                state.jit.observe(&kind);
                // A container's own file's build id goes into its record.
                let mut with_id = None;
                if let Some(id) = state.facts.note_mapped(&kind) {
                    let mut patched = record.to_vec();
                    if set_mmap2_build_id(&mut patched, &id) {
                        with_id = Some(patched);
                    }
                }
                let written = with_id.as_deref().unwrap_or(record);
                if let Some(side_band) = &mut state.side_band {
                    side_band.observe(written, &kind);
                }
                if with_id.is_some() {
                    return writer.write_record(written);
                }
            }
        }
        _ => {}
    }
    writer.write_record(record)
}

/// The event of a sample (the first event for any other record). Every attr has
/// PERF_SAMPLE_IDENTIFIER, so the id comes first whatever the layout; the event's own attr
/// then reads the rest (a leader-sampled group's samples carry READ values that others' do
/// not, `--off-cpu`'s wakeups no IP).
fn event_of(view: &RecordView<'_>, by_id: &HashMap<u64, usize>) -> usize {
    if view.record_type != rt::SAMPLE {
        return 0;
    }
    view.body
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_ne_bytes)
        .and_then(|id| by_id.get(&id).copied())
        .unwrap_or(0)
}

/// Whether a sample is kept: all are but the wakeups of threads outside the recording that
/// a wakeup event opened for every process saw.
fn keeps_wakeup(view: &RecordView<'_>, state: &Decoder) -> bool {
    let Some(wakees) = &state.wakees else {
        return true;
    };
    let event = event_of(view, &state.by_id);
    if event != wakees.event {
        return true;
    }
    // A sample that does not parse is kept: the writer and the reader say what is wrong.
    match view.sample(event, &state.attrs[event]) {
        Ok(sample) => sample.raw.is_none_or(|raw| wakees.keeps(raw)),
        Err(_) => true,
    }
}

/// Counts a sample and notes its time; returns the sample with its stack copy trimmed to
/// what the unwinder read, when there is something to trim.
pub(crate) fn on_sample<'a>(
    view: &RecordView<'_>,
    record: &[u8],
    state: &'a mut Decoder,
    report: &mut Report,
) -> Option<&'a [u8]> {
    let event = event_of(view, &state.by_id);
    let sample = view.sample(event, &state.attrs[event]).ok();
    report.samples[event] += 1;
    if let Some(pid) = sample.as_ref().and_then(|s| s.pid) {
        state.jit.sampled(pid);
    }
    if let (Some(side_band), Some(sample)) = (&mut state.side_band, &sample) {
        // With `--switch-output`: the counter values the next file starts from.
        side_band.seeds.note(event, &state.attrs[event], sample);
    }
    if let Some(t) = sample.and_then(|s| s.time) {
        state.facts.note_time(t);
    }
    let limit = match (&mut state.unwinder, sample) {
        (Some(unwinder), Some(sample)) => unwinder.user_stack_extent(&sample),
        _ => None,
    };
    let trimmed = trim_user_stack_to(
        record,
        &state.attrs[event],
        Endian::NATIVE,
        limit.unwrap_or(usize::MAX),
        &mut state.trimmed,
    );
    trimmed.then_some(&state.trimmed[..])
}
