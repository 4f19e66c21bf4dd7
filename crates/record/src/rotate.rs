//! `record --switch-output`: a long recording cut into files that each stand alone, perf's
//! way of naming them, and `--switch-max-files` (`--max-files`) keeping the newest few.
//!
//! As in perf, the file being written is always OUTPUT; at a switch it is finished (header,
//! feature sections of its own: build ids of what it maps, its samples' time range), made
//! durable (fsync) and renamed OUTPUT.YYYYMMDDHHMMSScc (local time of the switch, to the
//! hundredth of a second), and a new OUTPUT is started. At the end the last file is named so
//! too. A recorder killed mid-file leaves every earlier file whole and OUTPUT as a recording
//! without `--switch-output` leaves its file.
//!
//! Unlike perf, which synthesizes the target's threads and mappings from `/proc` again at
//! each switch (the command's first process only, not what it started, nor a process that
//! ended since), the recorder keeps what the side-band records it wrote say of every live
//! process (`side_band::SideBand`) and writes it at the start of every new file, so that every file
//! names its samples alone; what a file holds for its own feature sections (`FileFacts`)
//! starts again with it.
//!
//! Counter values (a leader-sampled group's, PERF_SAMPLE_READ) run on across files, and a
//! reader weighs each sample by its values' increase since the previous sample of the same
//! counter (and thread, when inherited). So that the first sample of a file is weighed by its
//! increase since the file before, not by the count since the counters were enabled, every
//! new file also starts with a PERF_RECORD_READ per (counter group, thread) holding the last
//! values the file before carried (`Seeds`): a record of the kernel's ABI (pid, tid, the
//! event's `read_format`, sample_id trailer; the kernel writes the same at a thread's exit
//! with `inherit_stat`), which cpiflame's reader starts from and perf reads past (its
//! `perf script` and `perf report` use READ records for nothing else than `report -T`).
//!
//! It must never let a file be renamed, or removed by `--max-files`, before it is finished.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cpiflame_perf_data::write::{EventAttr, PerfDataWriter, WriteError};
use cpiflame_perf_data::{Endian, RecordView};

use crate::file_facts::FileFacts;
use crate::side_band::SideBand;
use crate::spool::{Closed, Spool};
use crate::{create_output, RecordError, RecordOptions, Report, Status};

/// When to switch to a new file (`--switch-output`, perf's syntax).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchOutput {
    /// When the recorder receives SIGUSR2 (`signal`, perf's default).
    Signal,
    /// Once the file holds this many bytes of records (a number and B, K, M or G).
    Size(u64),
    /// Once the file has been written this long (a number and s, m, h or d).
    Time(Duration),
}

impl FromStr for SwitchOutput {
    type Err = String;

    /// `signal`, `SIZE[BKMG]` or `TIME[smhd]`, as perf reads them (units in powers of 1024;
    /// perf's case: `m` is minutes, `M` MiB).
    fn from_str(text: &str) -> Result<SwitchOutput, String> {
        if text == "signal" {
            return Ok(SwitchOutput::Signal);
        }
        let digits = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(digits);
        let n = number.parse::<u64>().ok().filter(|&n| n > 0);
        let bytes = |shift: u32| n.and_then(|n| n.checked_mul(1 << shift));
        let secs = |each: u64| n.and_then(|n| n.checked_mul(each));
        let secs = |each| secs(each).map(|s| SwitchOutput::Time(Duration::from_secs(s)));
        match unit {
            "B" => bytes(0).map(SwitchOutput::Size),
            "K" => bytes(10).map(SwitchOutput::Size),
            "M" => bytes(20).map(SwitchOutput::Size),
            "G" => bytes(30).map(SwitchOutput::Size),
            "s" => secs(1),
            "m" => secs(60),
            "h" => secs(3600),
            "d" => secs(86400),
            _ => None,
        }
        .ok_or_else(|| {
            format!(
                "--switch-output {text}: expected signal, a size (a whole number and B, K, M or G: 100M) or a time (a whole number and s, m, h or d: 30s); before the command, a bare --switch-output is --switch-output=signal"
            )
        })
    }
}

/// Set by SIGUSR2 while a recording switches on it.
static SWITCH: AtomicBool = AtomicBool::new(false);

extern "C" fn on_usr2(_: libc::c_int) {
    SWITCH.store(true, Ordering::SeqCst);
}

/// The files of a recording with `--switch-output`.
pub(crate) struct Rotating {
    when: SwitchOutput,
    max_files: Option<usize>,
    /// When the file being written was started.
    opened: Instant,
    /// The records every file starts with: the kernel image's MMAP2 record, the CGROUP
    /// records of the cgroups there at the start and of those made since.
    start: Vec<Vec<u8>>,
    /// Finished files still on disk, oldest first.
    kept: VecDeque<PathBuf>,
    /// Files finished, those `--max-files` removed included.
    written: usize,
    /// Bytes of records in the files finished.
    bytes: u64,
    /// The timestamp of the last file's name.
    last_stamp: Option<String>,
}

impl Rotating {
    /// The rotation `options` ask for (SIGUSR2 is caught from here on, as in perf: it
    /// switches files in `signal` mode and is ignored otherwise).
    pub(crate) fn new(options: &RecordOptions) -> Option<Rotating> {
        let when = options.switch_output?;
        SWITCH.store(false, Ordering::SeqCst);
        // SAFETY: installs a handler that only stores to an atomic.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_usr2 as *const () as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut());
        }
        Some(Rotating {
            when,
            max_files: options.max_files,
            opened: Instant::now(),
            start: Vec::new(),
            kept: VecDeque::new(),
            written: 0,
            bytes: 0,
            last_stamp: None,
        })
    }

    /// Every file starts with `start` (the kernel image's record, the cgroups' records).
    pub(crate) fn starting_with(self, start: Vec<Vec<u8>>) -> Rotating {
        Rotating { start, ..self }
    }

    /// Whether the file being written (`bytes` of records so far) is due to be switched.
    pub(crate) fn due(&self, bytes: u64) -> bool {
        match self.when {
            SwitchOutput::Signal => SWITCH.swap(false, Ordering::SeqCst),
            SwitchOutput::Size(size) => bytes >= size,
            SwitchOutput::Time(time) => self.opened.elapsed() >= time,
        }
    }

    /// Renames the finished file at `output` OUTPUT.TIMESTAMP (made unique with `.N` when a
    /// file of that name is there from before), then removes the oldest files beyond `--max-files`.
    fn name_finished(&mut self, output: &Path) -> io::Result<PathBuf> {
        // Two files in the same hundredth of a second would share a name: the second
        // waits for the next one, so that names stay unique and sort as the files were
        // written (a clock set back is left to the `.N` below).
        let mut stamp = timestamp();
        while self.last_stamp.as_ref() == Some(&stamp) {
            std::thread::sleep(Duration::from_millis(2));
            stamp = timestamp();
        }
        self.last_stamp = Some(stamp.clone());
        let mut name = output.as_os_str().to_owned();
        name.push(format!(".{stamp}"));
        let mut path = PathBuf::from(&name);
        let mut n = 0;
        while std::fs::symlink_metadata(&path).is_ok() {
            n += 1;
            path = PathBuf::from(format!("{}.{n}", name.to_string_lossy()));
        }
        std::fs::rename(output, &path)?;
        self.written += 1;
        self.kept.push_back(path.clone());
        while self.kept.len() > self.max_files.unwrap_or(usize::MAX) {
            if let Some(old) = self.kept.pop_front() {
                // One moved or removed by someone else is gone already.
                match std::fs::remove_file(&old) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
        }
        Ok(path)
    }

    /// Files finished so far.
    pub(crate) fn written(&self) -> usize {
        self.written
    }

    /// What the files finished before a failure hold.
    pub(crate) fn finished_line(&self) -> String {
        let names: Vec<String> = self.kept.iter().map(|p| p.display().to_string()).collect();
        format!(
            "the {} files finished before are whole{}",
            self.written,
            match names.as_slice() {
                [] => String::new(),
                [one] => format!(" ({one} kept)"),
                [first, .., last] => format!(" ({} kept: {first} to {last})", names.len()),
            }
        )
    }

    /// Names the last file once it is finished, and says in `report` which files are left.
    pub(crate) fn finish(
        mut self,
        output: &Path,
        spool: &Spool,
        closed: Closed,
        report: &mut Report,
        status: &mut dyn FnMut(Status<'_>),
    ) -> Result<(), RecordError> {
        let err = |error| RecordError::Output {
            path: output.to_path_buf(),
            error,
        };
        spool.sync().map_err(err)?;
        let path = self.name_finished(output).map_err(err)?;
        status(Status::Dumped {
            path: &path,
            samples: closed.samples,
            data_size: closed.data_size,
        });
        report.bytes_written += self.bytes;
        report.files_written = self.written;
        report.files = self.kept.into();
        Ok(())
    }
}

/// perf's file name timestamp: local time to the hundredth of a second, `2015122520103046`.
fn timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    // SAFETY: localtime_r writes the broken-down time into `tm`, which we own.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&secs, &mut tm);
        tm
    };
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        now.subsec_millis() / 10
    )
}

/// Finishes the file being written, names it, and starts the next one with the side-band
/// records of every live process. A failure stops the recording as a failed write does
/// (`finish` then says what the files hold).
#[allow(clippy::too_many_arguments)] // the file's four parts and where its news go
pub(crate) fn switch(
    options: &RecordOptions,
    attrs: &[EventAttr],
    writer: &mut PerfDataWriter<Spool>,
    rotating: &mut Rotating,
    facts: &mut FileFacts,
    side_band: &mut SideBand,
    report: &Report,
    status: &mut dyn FnMut(Status<'_>),
) -> Result<(), WriteError> {
    let io = |what, source| WriteError::Io { what, source };
    let data_offset = writer.data_offset();
    let data_end = data_offset + writer.bytes_written();
    let features = facts.features(options, true);
    let spool = writer.get_ref();
    let closed = match spool.close(attrs, &features, data_offset, data_end) {
        Ok(c) if c.complete && c.features => c,
        Ok(_) => {
            let e = spool.take_error();
            return Err(io(
                "the end of the file",
                e.unwrap_or(io::Error::other("no room")),
            ));
        }
        Err(e) => return Err(io("the end of the file", e)),
    };
    spool.sync().map_err(|e| io("the finished file", e))?;
    let samples: u64 = report.samples.iter().sum();
    let name = rotating
        .name_finished(&options.output)
        .map_err(|e| io("the finished file's name", e))?;
    status(Status::Dumped {
        path: &name,
        samples: closed.samples,
        data_size: closed.data_size,
    });

    let file = create_output(&options.output).map_err(|e| match e {
        RecordError::Output { error, .. } => io("the next file", error),
        e => io("the next file", io::Error::other(e.to_string())),
    })?;
    let next = PerfDataWriter::new(Spool::after(file, samples), attrs.to_vec())?;
    let done = std::mem::replace(writer, next);
    rotating.bytes += done.bytes_written();
    rotating.opened = Instant::now();
    facts.next_file();
    side_band.next_file();
    let mut start: Vec<Vec<u8>> = rotating.start.clone();
    start.extend(side_band.replay(&attrs[0])?);
    for record in &start {
        if let Some(Ok(kind)) =
            RecordView::parse(record, Endian::NATIVE).map(|v| v.side_band(&attrs[0]))
        {
            facts.note_mapped(&kind);
        }
        writer.write_record(record)?;
    }
    for record in side_band.seeds.records(attrs)? {
        writer.write_record(&record)?;
    }
    // The new file's header and attrs on disk at once: a reader of the folder (or a kill)
    // finds a file that reads, not an empty one.
    writer
        .get_ref()
        .flush_now()
        .map_err(|e| io("the header and attrs", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drain::{write_one, Decoder};
    use crate::side_band::SideBand;
    use crate::{CallGraph, Rate, Target};
    use cpiflame_perf_data::abi::{attr_type, misc, read_format as rf, sample as st};
    use cpiflame_perf_data::attr_flags;
    use cpiflame_perf_data::write::{
        comm_record, exit_record, fork_record, mmap2_record, sample_record, Mmap2, ReadValue,
        ReadValues, SampleFields, SampleId,
    };
    use cpiflame_perf_data::PerfData;
    use cpiflame_perf_data::RecordKind;
    use cpiflame_testkit::Dir;

    #[test]
    fn switch_output_values_are_perfs() {
        use SwitchOutput::*;
        let cases = [
            ("signal", Signal),
            ("1B", Size(1)),
            ("64K", Size(64 << 10)),
            ("100M", Size(100 << 20)),
            ("2G", Size(2 << 30)),
            ("30s", Time(Duration::from_secs(30))),
            ("5m", Time(Duration::from_secs(300))),
            ("2h", Time(Duration::from_secs(7200))),
            ("1d", Time(Duration::from_secs(86400))),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<SwitchOutput>(), Ok(want), "{text}");
        }
        for bad in [
            "", "10", "10X", "0M", "1.5M", "M", "10k", "10 M", "-1s", "1Ms", "sig",
        ] {
            let e = bad.parse::<SwitchOutput>().unwrap_err();
            assert!(e.starts_with(&format!("--switch-output {bad}: ")), "{e}");
        }
    }

    const ID: u64 = 7;

    /// A sample's pid, tid, time and ip.
    type Seen = (i32, i32, u64, u64);

    fn attrs() -> Vec<EventAttr> {
        vec![EventAttr {
            type_: attr_type::SOFTWARE,
            config: 0,
            sample_period_or_freq: 1000,
            sample_type: st::IDENTIFIER | st::IP | st::TID | st::TIME,
            flags: attr_flags::SAMPLE_ID_ALL,
            name: Some("cpu-clock".into()),
            ids: vec![ID],
            ..EventAttr::default()
        }]
    }

    fn sid(pid: i32, tid: i32, time: u64) -> SampleId {
        SampleId {
            pid,
            tid,
            time,
            id: ID,
            stream_id: ID,
            cpu: 0,
        }
    }

    fn mmap(pid: i32, addr: u64, path: &str, time: u64) -> Vec<u8> {
        let m = Mmap2 {
            pid,
            tid: pid,
            addr,
            len: 0x1000,
            prot: libc::PROT_EXEC as u32,
            filename: path.into(),
            misc: if pid == -1 { misc::KERNEL } else { misc::USER },
            ..Mmap2::default()
        };
        mmap2_record(&attrs()[0], &m, &sid(pid, pid, time)).unwrap()
    }

    /// What a process's samples hit: its program's page.
    fn program(pid: i32) -> u64 {
        0x10_0000 * pid as u64
    }

    /// A recording's records as the kernel would write them: a process (100) with a
    /// second thread (102), a child it forks (101, which inherits its mappings and exits
    /// half way), a process that execs (200: its mapping before exec is gone after), and
    /// samples of them all; with the samples (pid, tid, time, ip) in order.
    fn stream() -> (Vec<Vec<u8>>, Vec<Seen>) {
        let a = &attrs()[0];
        let mut records = vec![
            comm_record(a, 100, 100, "app", true, &sid(100, 100, 1)).unwrap(),
            mmap(100, program(100), "/bin/app", 2),
            fork_record(a, 100, 100, 102, 100, 3, &sid(100, 102, 3)).unwrap(),
            comm_record(a, 100, 102, "app-worker", false, &sid(100, 102, 4)).unwrap(),
            fork_record(a, 101, 100, 101, 100, 5, &sid(101, 101, 5)).unwrap(),
            comm_record(a, 200, 200, "old", false, &sid(200, 200, 6)).unwrap(),
            mmap(200, 0x4000, "/bin/old", 7),
        ];
        let mut samples = Vec::new();
        for time in 10..400u64 {
            if time == 200 {
                records
                    .push(exit_record(a, 101, 100, 101, 100, time, &sid(101, 101, time)).unwrap());
                records.push(comm_record(a, 200, 200, "new", true, &sid(200, 200, time)).unwrap());
                records.push(mmap(200, program(200), "/bin/new", time));
                continue;
            }
            let (pid, tid) = match time % 4 {
                0 => (100, 100),
                1 => (100, 102),
                2 if time < 200 => (101, 101),
                _ => (200, 200),
            };
            // 101 runs the program it inherited; 200 its old one before the exec.
            let ip = time
                + match pid {
                    101 => program(100),
                    200 if time < 200 => 0x4000,
                    _ => program(pid),
                };
            let fields = SampleFields {
                ip,
                pid,
                tid,
                time,
                id: ID,
                ..SampleFields::default()
            };
            records.push(sample_record(a, &fields).unwrap());
            samples.push((pid, tid, time, ip));
        }
        (records, samples)
    }

    fn options(output: PathBuf, max_files: Option<usize>) -> RecordOptions {
        RecordOptions {
            events: cpiflame_events::parse_events("cpu-clock")
                .unwrap()
                .iter()
                .map(|e| e.resolve(0))
                .collect(),
            groups: Vec::new(),
            sampling: Rate::Period(1000),
            call_graph: CallGraph::None,
            target: Target::Pids(vec![100]),
            output,
            duration: None,
            buffer_pages: 1,
            cmdline: vec!["cpiflame".into(), "record".into()],
            memory: None,
            buildid_cache: None,
            off_cpu: None,
            cpus: None,
            // Never due by itself: the test switches.
            switch_output: Some(SwitchOutput::Size(u64::MAX)),
            max_files,
            cgroup: None,
            cgroup_mount: None,
            namespaces: false,
            clockid: None,
            env: Vec::new(),
        }
    }

    /// Writes `records` as the recorder does, switching files before record `at[k]`;
    /// returns the files left, oldest first, and the report.
    fn record(dir: &Dir, records: &[Vec<u8>], at: &[usize], max: Option<usize>) -> Report {
        record_with(dir, attrs(), records, at, max)
    }

    /// [`record`] with events `attrs`.
    fn record_with(
        dir: &Dir,
        attrs: Vec<EventAttr>,
        records: &[Vec<u8>],
        at: &[usize],
        max: Option<usize>,
    ) -> Report {
        let options = options(dir.path("out.data"), max);
        let file = create_output(&options.output).unwrap();
        let mut writer = PerfDataWriter::new(Spool::new(file), attrs.clone()).unwrap();
        let kernel = mmap(-1, 0xffff_ffff_8000_0000, "[kernel.kallsyms]_text", 0);
        writer.write_record(&kernel).unwrap();
        let mut rotating = Rotating::new(&options).unwrap().starting_with(vec![kernel]);
        let mut state = Decoder::new(&attrs, CallGraph::None, true);
        let mut report = Report {
            samples: vec![0],
            ..Report::default()
        };
        for (i, r) in records.iter().enumerate() {
            if at.contains(&i) {
                switch(
                    &options,
                    &attrs,
                    &mut writer,
                    &mut rotating,
                    &mut state.facts,
                    state.side_band.as_mut().unwrap(),
                    &report,
                    &mut |_| {},
                )
                .unwrap();
            }
            write_one(r, &mut writer, &mut state, &mut report).unwrap();
        }
        let (offset, size) = (writer.data_offset(), writer.bytes_written());
        let features = state.facts.features(&options, true);
        let spool = writer.get_ref();
        let closed = spool
            .close(&attrs, &features, offset, offset + size)
            .unwrap();
        report.bytes_written = size;
        rotating
            .finish(&options.output, spool, closed, &mut report, &mut |_| {})
            .unwrap();
        report
    }

    /// Each file's samples, and whether each names its sample alone: a COMM record of its
    /// thread and a mapping of its process over its address, in that file.
    fn read(path: &Path) -> Vec<Seen> {
        let data = PerfData::open(path).unwrap();
        let mut comms = Vec::new();
        let mut maps: Vec<(i32, u64, u64, Vec<u8>)> = Vec::new();
        let mut samples = Vec::new();
        for r in data.records() {
            match r.unwrap().kind {
                RecordKind::Comm { pid, tid, name, .. } => comms.push((pid, tid, name.to_vec())),
                RecordKind::Mmap(m) => maps.push((m.pid, m.addr, m.len, m.path.to_vec())),
                // As readers do: a new thread or process is named after its parent, and a
                // new process has its parent's mappings.
                RecordKind::Fork { pid, ppid, tid, .. } => {
                    comms.push((pid, tid, Vec::new()));
                    let inherited: Vec<_> = maps.iter().filter(|m| m.0 == ppid).cloned().collect();
                    maps.extend(inherited.into_iter().map(|m| (pid, m.1, m.2, m.3)));
                }
                RecordKind::Sample(s) => {
                    let (pid, tid) = (s.pid.unwrap(), s.tid.unwrap());
                    let ip = s.ip.unwrap();
                    let named = comms.iter().any(|c| (c.0, c.1) == (pid, tid));
                    let mapped = maps
                        .iter()
                        .rev()
                        .find(|m| m.0 == pid && (m.1..m.1 + m.2).contains(&ip));
                    assert!(named, "{}: no COMM for {pid}/{tid}", path.display());
                    let want: &[u8] = match pid {
                        200 if s.time.unwrap() < 200 => b"/bin/old",
                        200 => b"/bin/new",
                        _ => b"/bin/app",
                    };
                    assert_eq!(
                        mapped.map(|m| &m.3[..]),
                        Some(want),
                        "{}: {ip:#x}",
                        path.display()
                    );
                    samples.push((pid, tid, s.time.unwrap(), ip));
                }
                _ => {}
            }
        }
        assert!(
            maps.iter().any(|m| m.0 == -1),
            "{}: no kernel mapping",
            path.display()
        );
        samples
    }

    /// The files' samples, one file after the other, are the samples given, whatever the
    /// switch points; every file names its samples alone (its thread's COMM and its
    /// process's mapping are in it); each says how many samples it holds.
    #[test]
    fn the_files_together_hold_every_sample_once_and_each_names_its_own() {
        let (records, samples) = stream();
        let n = records.len();
        for at in [
            vec![],
            vec![1],
            vec![8, 9],
            vec![n / 3, n / 2, n - 1],
            (10..n).step_by(37).collect(),
        ] {
            let dir = Dir::new("rotate-unit");
            let report = record(&dir, &records, &at, None);
            assert_eq!(report.files_written, at.len() + 1, "{at:?}");
            assert_eq!(report.files.len(), at.len() + 1, "{at:?}");
            let mut names = report.files.clone();
            names.sort();
            assert_eq!(names, report.files, "names sort as the files were written");
            assert!(!dir.path("out.data").exists());
            let got: Vec<_> = report.files.iter().flat_map(|f| read(f)).collect();
            assert_eq!(got, samples, "switching before records {at:?}");
            assert_eq!(report.samples, [samples.len() as u64]);
        }
    }

    /// `--max-files 2`: the newest two files are left, holding the samples after the
    /// second-to-last switch.
    #[test]
    fn max_files_keeps_the_newest() {
        let (records, samples) = stream();
        let at = [50, 150, 250, 350];
        let dir = Dir::new("rotate-max");
        let report = record(&dir, &records, &at, Some(2));
        assert_eq!(report.files_written, 5);
        assert_eq!(report.files.len(), 2);
        let mut left: Vec<PathBuf> = std::fs::read_dir(dir.root())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        left.sort();
        assert_eq!(left, report.files);
        let got: Vec<_> = report.files.iter().flat_map(|f| read(f)).collect();
        let before = records[..at[2]]
            .iter()
            .filter(|r| u32::from_ne_bytes(r[0..4].try_into().unwrap()) == 9)
            .count();
        assert_eq!(got, samples[before..]);
    }

    /// A leader-sampled group of two (ids 7 and 8), inherited or not.
    fn group_attrs(inherit: bool) -> Vec<EventAttr> {
        let mut leader = attrs().remove(0);
        leader.sample_type |= st::READ;
        leader.read_format = rf::ID | rf::GROUP | rf::LOST;
        if inherit {
            leader.flags |= attr_flags::INHERIT;
        }
        let member = EventAttr {
            config: 1,
            name: Some("task-clock".into()),
            ids: vec![8],
            ..leader.clone()
        };
        vec![leader, member]
    }

    /// A sample of the group: tid, time, [leader's value, member's value].
    type Grouped = (i32, u64, [u64; 2]);

    /// A READ record: pid, tid, time, the group's values, the member's lost count.
    type Seeded = (i32, i32, u64, [u64; 2], Option<u64>);

    /// Samples of threads 100 and 102 (pid 100) carrying the group's values, which rise by
    /// thread when inherited and together when not.
    fn group_stream(attrs: &[EventAttr]) -> (Vec<Vec<u8>>, Vec<Grouped>) {
        let a = &attrs[0];
        let inherit = a.flags & attr_flags::INHERIT != 0;
        let mut records = vec![
            comm_record(a, 100, 100, "app", true, &sid(100, 100, 1)).unwrap(),
            mmap(100, program(100), "/bin/app", 2),
            fork_record(a, 100, 100, 102, 100, 3, &sid(100, 102, 3)).unwrap(),
        ];
        let mut samples = Vec::new();
        let mut counts = [[0u64; 2]; 2];
        for time in 10..100u64 {
            let k = (time % 2) as usize;
            let tid = [100, 102][k];
            let c = &mut counts[if inherit { k } else { 0 }];
            c[0] += 1000 + time;
            c[1] += 7 * time;
            let values = ReadValues {
                values: vec![
                    ReadValue {
                        value: c[0],
                        id: ID,
                        lost: 0,
                    },
                    ReadValue {
                        value: c[1],
                        id: 8,
                        lost: time,
                    },
                ],
                ..ReadValues::default()
            };
            let fields = SampleFields {
                ip: program(100) + time,
                pid: 100,
                tid,
                time,
                id: ID,
                cpu: 1,
                read: Some(values),
                ..SampleFields::default()
            };
            records.push(sample_record(a, &fields).unwrap());
            samples.push((tid, time, *c));
        }
        (records, samples)
    }

    /// Every file after the first starts with a READ record per (group, thread) (per group
    /// when not inherited) holding the last values a sample of the files before carried,
    /// with that sample's thread, time, id and cpu; the first file has none, nor has a file
    /// its READ records anywhere but before its first sample.
    #[test]
    fn every_file_after_the_first_starts_from_the_values_before_it() {
        for inherit in [true, false] {
            let attrs = group_attrs(inherit);
            let (records, samples) = group_stream(&attrs);
            let n = records.len();
            let at = vec![3, 20, n / 2, n - 1];
            let dir = Dir::new("rotate-reads");
            let report = record_with(&dir, attrs.clone(), &records, &at, None);
            assert_eq!(report.files.len(), at.len() + 1);
            let mut seen: Vec<Grouped> = Vec::new();
            for file in &report.files {
                let before = seen.len();
                let data = PerfData::open(file).unwrap();
                // (pid, tid, time, values, member's lost) of the READ records.
                let mut reads = Vec::new();
                let mut sampled = false;
                for r in data.records_in_file_order() {
                    let r = r.unwrap();
                    match r.kind {
                        RecordKind::Read(read) => {
                            assert!(!sampled, "{}: a READ record after a sample", file.display());
                            let counters = read.values.counters();
                            let values = [counters[0].0, counters[1].0];
                            let ids = [counters[0].1, counters[1].1];
                            assert_eq!(ids, [Some(ID), Some(8)]);
                            reads.push((
                                read.pid,
                                read.tid,
                                r.time.unwrap(),
                                values,
                                counters[1].2,
                            ));
                        }
                        RecordKind::Sample(s) => {
                            sampled = true;
                            let c = s.read.unwrap().values();
                            seen.push((s.tid.unwrap(), s.time.unwrap(), [c[0].0, c[1].0]));
                        }
                        _ => {}
                    }
                }
                // What the files before ended with: the last sample of each thread (of the
                // group when not inherited), oldest first.
                let mut want: Vec<Seeded> = Vec::new();
                for &(tid, time, values) in seen[..before].iter().rev() {
                    if !want.iter().any(|w| !inherit || w.1 == tid) {
                        want.push((100, tid, time, values, Some(time)));
                    }
                }
                want.reverse();
                assert_eq!(reads, want, "{} (inherit {inherit})", file.display());
            }
            assert_eq!(seen, samples);
        }
    }

    /// An inherited group's values of a thread that exited are written once more (its last
    /// samples may be drained after its exit), then forgotten; those kept per id stay.
    #[test]
    fn an_exited_threads_values_are_written_once_more() {
        for inherit in [true, false] {
            let attrs = group_attrs(inherit);
            let a = &attrs[0];
            let mut side_band = SideBand::default();
            for record in group_stream(&attrs).0 {
                let view = RecordView::parse(&record, Endian::NATIVE).unwrap();
                if let Ok(sample) = view.sample(0, a) {
                    side_band.seeds.note(0, a, &sample);
                }
            }
            let tids = |side_band: &SideBand| -> Vec<i32> {
                let records = side_band.seeds.records(&attrs).unwrap();
                let view = |r| RecordView::parse(r, Endian::NATIVE).unwrap();
                records
                    .iter()
                    .map(|r| view(r).read(a).unwrap().tid)
                    .collect()
            };
            // The last samples: 100 at time 98, 102 at 99 (the group's last, per id).
            let all: &[i32] = if inherit { &[100, 102] } else { &[102] };
            assert_eq!(tids(&side_band), all);
            let exit = exit_record(a, 100, 100, 102, 100, 100, &sid(100, 102, 100)).unwrap();
            let view = RecordView::parse(&exit, Endian::NATIVE).unwrap();
            side_band.observe(&exit, &view.side_band(a).unwrap());
            side_band.next_file();
            assert_eq!(tids(&side_band), all, "written once more");
            side_band.next_file();
            let left: &[i32] = if inherit { &[100] } else { &[102] };
            assert_eq!(tids(&side_band), left, "inherit {inherit}");
        }
    }

    /// The pids and tids of the COMM records a new file would start with.
    fn replayed(side_band: &SideBand) -> Vec<(i32, i32)> {
        let attr = &attrs()[0];
        side_band
            .replay(attr)
            .unwrap()
            .iter()
            .filter_map(
                |r| match RecordView::parse(r, Endian::NATIVE)?.side_band(attr) {
                    Ok(RecordKind::Comm { pid, tid, .. }) => Some((pid, tid)),
                    _ => None,
                },
            )
            .collect()
    }

    /// What exited is written once more (its last samples may come after its exit), then
    /// forgotten; a process whose first thread exited lives while another thread does.
    #[test]
    fn what_exited_is_forgotten_a_file_later() {
        let a = &attrs()[0];
        let mut side_band = SideBand::default();
        let mut see = |record: Vec<u8>| {
            let view = RecordView::parse(&record, Endian::NATIVE).unwrap();
            side_band.observe(&record, &view.side_band(a).unwrap());
        };
        see(comm_record(a, 100, 100, "a", true, &sid(100, 100, 1)).unwrap());
        see(fork_record(a, 100, 100, 102, 100, 2, &sid(100, 102, 2)).unwrap());
        see(fork_record(a, 101, 100, 101, 100, 3, &sid(101, 101, 3)).unwrap());
        see(fork_record(a, 101, 101, 103, 101, 4, &sid(101, 103, 4)).unwrap());
        // 100's first thread exits, its second lives on; all of 101 exits.
        see(exit_record(a, 100, 100, 100, 100, 5, &sid(100, 100, 5)).unwrap());
        see(exit_record(a, 101, 100, 103, 101, 6, &sid(101, 103, 6)).unwrap());
        see(exit_record(a, 101, 100, 101, 100, 7, &sid(101, 101, 7)).unwrap());
        let all = [(100, 100), (100, 102), (101, 101), (101, 103)];
        assert_eq!(replayed(&side_band), all);
        side_band.next_file();
        assert_eq!(replayed(&side_band), all, "written once more");
        side_band.next_file();
        assert_eq!(replayed(&side_band), [(100, 102)]);
    }
}
