//! Finishing the recording: reaping the target, the last drain, the feature sections
//! (build ids of what the samples hit, groups, host facts) and the report.
//!
//! It must never leave the target unreaped nor the file without its final header.

use std::collections::{BTreeSet, HashMap};
use std::io::{self};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use cpiflame_counters::child::ExitStatus;
use cpiflame_perf_data::abi::misc;
use cpiflame_perf_data::write::{Features, GroupDesc, WriteError, HOST_PID};
use cpiflame_perf_data::BuildIdEntry;

use crate::drain::Drain;
use crate::proc;
use crate::{RecordError, RecordOptions, Report, Session, Target};

/// How long a command stopped after a write error has to end before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Reaps the command, writes the feature sections and the final header; after a write error
/// (`outcome`), cuts the file back to its last whole record and says what it keeps.
pub(crate) fn finish(
    options: &RecordOptions,
    session: Session,
    state: &mut Drain,
    outcome: Result<(), WriteError>,
    elapsed: Duration,
    mut report: Report,
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

    let features = file_features(options, state, outcome.is_ok());
    if let Some(cache) = options.buildid_cache.as_deref() {
        // Containers' files kept in perf's build-id cache, once, at the end.
        state.containers.finish(Some(cache), &state.mapped);
    }
    if let Some(why) = state.containers.refused() {
        report.warnings.push(why.to_string());
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
                        rotating.finish(&options.output, spool, *c, &mut report)?;
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

/// The feature sections of a file: the host, the command line with cpiflame's notes, build
/// ids of the files it maps, groups, the wakeup tracepoint's format and, when every sample
/// drained is in it (`whole`), their time range.
pub(crate) fn file_features(options: &RecordOptions, state: &mut Drain, whole: bool) -> Features {
    let mut features = Features::from_host(options.cmdline.clone());
    features.perf_version = Some(format!("cpiflame {}", env!("CARGO_PKG_VERSION")));
    features.build_ids = build_ids(&state.mapped, &mut state.build_ids);
    features
        .build_ids
        .extend(state.containers.finish(None, &state.mapped));
    features.groups = group_descs(options);
    // The wakeup tracepoint's format, so perf script can print its fields.
    features.tracing_data = options
        .off_cpu
        .as_ref()
        .and_then(|off| off.waking.as_ref())
        .and_then(|w| w.tracing.encode().ok());
    if let Some((res_ns, data)) = state.clock {
        features.clockid_res_ns = res_ns;
        features.clock_data = Some(data);
    }
    if let (Some(first), true) = (state.first_time, whole) {
        // (After a write error the file ends earlier than the last sample drained.)
        features.sample_time = Some((first, state.last_time));
    }
    features
}

/// The GROUP_DESC entries of the groups the user asked for.
pub(crate) fn group_descs(options: &RecordOptions) -> Vec<GroupDesc> {
    let mut start = 0;
    let mut descs = Vec::new();
    for g in &options.groups {
        if g.described && g.len > 1 {
            descs.push(GroupDesc {
                name: None,
                leader: start as u32,
                members: g.len as u32,
            });
        }
        start += g.len;
    }
    descs
}

/// The build ids of files read so far, by path, modification time and size (`None`: the
/// file has none).
pub(crate) type KnownBuildIds = HashMap<(Vec<u8>, Option<SystemTime>, u64), Option<Vec<u8>>>;

/// Build ids of the files that were mapped executable, and of the running kernel. `known`
/// keeps each file's (read once per recording unless it changes: with `--switch-output`
/// every file lists them again, and a system-wide recording maps large libraries).
pub(crate) fn build_ids(
    mapped: &BTreeSet<Vec<u8>>,
    known: &mut KnownBuildIds,
) -> Vec<BuildIdEntry> {
    use object::Object;
    let mut entries = Vec::new();
    for path in mapped {
        let p = Path::new(std::ffi::OsStr::from_bytes(path));
        let Ok(meta) = std::fs::metadata(p) else {
            continue;
        };
        let key = (path.clone(), meta.modified().ok(), meta.len());
        let id = known.entry(key).or_insert_with(|| {
            // The headers and notes only (object's ReadCache reads what parsing asks for),
            // not the whole file: `record -a` lists every file any process maps (rustc's
            // 150 MB librustc_driver, ...), and reading them whole cost 0.5 s and 200 MB.
            let data = object::ReadCache::new(std::fs::File::open(p).ok()?);
            let file = object::File::parse(&data).ok()?;
            file.build_id().ok().flatten().map(<[u8]>::to_vec)
        });
        if let Some(id) = id {
            entries.push(BuildIdEntry {
                pid: HOST_PID,
                misc: misc::USER,
                build_id: id.clone(),
                path: path.clone(),
            });
        }
    }
    if let Some(id) = proc::kernel_build_id() {
        entries.push(BuildIdEntry {
            pid: HOST_PID,
            misc: misc::KERNEL,
            build_id: id,
            path: b"[kernel.kallsyms]".to_vec(),
        });
    }
    entries
}
