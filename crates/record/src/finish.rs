//! Finishing the recording: reaping the target, the last drain, the feature sections
//! (build ids of what the samples hit, groups, host facts) and the report.
//!
//! It must never leave the target unreaped nor the file without its final header.

use std::io::{self};
use std::time::Duration;

use cpiflame_counters::child::ExitStatus;
use cpiflame_perf_data::write::WriteError;

use crate::drain::Decoder;
use crate::{RecordError, RecordOptions, Report, Session, Status, Target};

/// How long a command stopped after a write error has to end before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Reaps the command, writes the feature sections and the final header; after a write error
/// (`outcome`), cuts the file back to its last whole record and says what it keeps.
pub(crate) fn finish(
    options: &RecordOptions,
    session: Session,
    state: &mut Decoder,
    outcome: Result<(), WriteError>,
    elapsed: Duration,
    mut report: Report,
    status: &mut dyn FnMut(Status<'_>),
) -> Result<Report, RecordError> {
    let Session {
        mut child,
        attrs,
        opened,
        rings,
        writer,
        rotating,
        ..
    } = session;
    // A command is never left running unrecorded: after a write error it is stopped, as
    // perf does (SIGTERM; SIGKILL when it is still there after a grace period), and reaped.
    report.status = child.as_mut().map(|c| match outcome {
        Ok(()) => c.wait(),
        Err(_) => c.terminate(STOP_GRACE),
    });
    drop(rings);
    drop(opened);
    // The command has ended: its JIT files are whole, and a dump it left in the current
    // directory can be moved.
    report.jit = state.jit.keep(&options.output, &mut report.warnings);

    let features = state.facts.features(options, outcome.is_ok());
    if let Some(why) = state
        .facts
        .finish_containers(options.buildid_cache.as_deref())
    {
        report.warnings.push(why);
    }
    report.bytes_written = writer.bytes_written();
    let data_offset = writer.data_offset();
    let data_end = data_offset + writer.bytes_written();
    let spool = writer.get_ref();
    let closed = spool.close(&attrs, &features, data_offset, data_end);
    let secs = elapsed.as_secs_f64();
    let finishing = |source| WriteError::Io {
        what: "the end of the file",
        source,
    };
    let (error, when) = match outcome {
        Err(e) => (e, format!("recording stopped after {secs:.1} s")),
        Ok(()) => (
            match (&closed, spool.take_error()) {
                (Ok(c), _) if c.complete && c.features => {
                    if let Some(rotating) = rotating {
                        rotating.finish(&options.output, spool, *c, &mut report, status)?;
                    }
                    return Ok(report);
                }
                (_, Some(e)) => finishing(e),
                (Err(_), None) => finishing(io::Error::other("cannot finish the file")),
                (Ok(_), None) => finishing(io::Error::other("cannot write the feature sections")),
            },
            format!("the recording ended after {secs:.1} s, then finishing the file failed"),
        ),
    };
    drop(writer);
    let mut what = vec![when];
    match (&options.target, report.status) {
        (Target::Pids(pids) | Target::Tids(pids), _) => {
            let list: Vec<String> = pids.iter().map(i32::to_string).collect();
            let (what_, are) = match (&options.target, pids.len()) {
                (Target::Tids(_), 1) => ("thread", "is"),
                (Target::Tids(_), _) => ("threads", "are"),
                (_, 1) => ("process", "is"),
                _ => ("processes", "are"),
            };
            what.push(format!(
                "{what_} {} {are} no longer recorded",
                list.join(",")
            ))
        }
        (_, Some(ExitStatus::Signaled(libc::SIGTERM))) => {
            what.push("the command was ended with SIGTERM".into())
        }
        (_, Some(ExitStatus::Signaled(libc::SIGKILL))) => what.push(format!(
            "the command was killed (it ignored SIGTERM for {} s)",
            STOP_GRACE.as_secs()
        )),
        (_, Some(status)) => what.push(format!("the command ended with status {}", status.code())),
        (_, None) => {}
    }
    match closed {
        // (--switch-output: a file finished and named before the next could be started.)
        Ok(_) if !options.output.exists() => {}
        Ok(c) => what.push(format!(
            "the file keeps the {} samples written before ({:.1} MB{}; render, fold and perf read it)",
            c.samples,
            c.data_size as f64 / 1e6,
            if c.features { "" } else { ", no feature sections: no room" },
        )),
        Err(e) => {
            let _ = std::fs::remove_file(&options.output);
            what.push(format!("nothing readable was written ({e}); the file was removed"));
        }
    }
    if let Some(r) = rotating.filter(|r| r.written() > 0) {
        what.push(r.finished_line());
    }
    Err(RecordError::WriteFailed {
        path: options.output.clone(),
        error,
        what: what.join("; "),
        status: report.status,
    })
}
