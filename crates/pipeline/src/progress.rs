//! How far a read of a recording has come, for a caller that shows it (the binary draws it on
//! a terminal). This crate measures, and makes the text a terminal shows of it
//! ([`ProgressLines`]); it writes that text only to a stream the caller hands it
//! ([`show_progress`]).

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// The state of one read, as handed to the observer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadProgress {
    pub file: PathBuf,
    /// Bytes of the data section behind the reader, and in all.
    pub bytes_read: u64,
    pub bytes_total: u64,
    pub samples: u64,
    pub elapsed: Duration,
    /// The last report of this read: everything was read.
    pub done: bool,
}

type Observer = Box<dyn Fn(&ReadProgress) + Send + Sync>;

static OBSERVER: OnceLock<Observer> = OnceLock::new();

/// Registers the function that is told how every read of a perf.data file goes: a few times
/// a second while it lasts, and once at its end. The first registration stays.
pub fn observe_progress(observer: impl Fn(&ReadProgress) + Send + Sync + 'static) {
    let _ = OBSERVER.set(Box::new(observer));
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

impl ReadProgress {
    /// The line shown while the read lasts:
    /// `cpiflame: reading out.data: 312.4 of 583.8 MiB (53%), 40213 samples, 1.2 s`
    pub fn line(&self) -> String {
        let p = self;
        let percent = if p.bytes_total == 0 {
            100
        } else {
            (u128::from(p.bytes_read) * 100 / u128::from(p.bytes_total)) as u64
        };
        format!(
            "cpiflame: reading {}: {:.1} of {:.1} MiB ({percent}%), {} samples, {:.1} s",
            p.file.display(),
            mib(p.bytes_read),
            mib(p.bytes_total),
            p.samples,
            p.elapsed.as_secs_f64()
        )
    }

    /// The line shown when the command ends:
    /// `cpiflame: read out.data: 583.8 MiB, 72425 samples in 2.31 s`
    pub fn summary(&self) -> String {
        let p = self;
        format!(
            "cpiflame: read {}: {:.1} MiB, {} samples in {:.2} s",
            p.file.display(),
            mib(p.bytes_total),
            p.samples,
            p.elapsed.as_secs_f64()
        )
    }
}

/// Reads shorter than this show no running line, only the summary.
const QUIET_FOR: Duration = Duration::from_millis(300);

/// What a terminal shows of the reads of one command: one line redrawn in place while a read
/// lasts (once it has lasted 300 ms), erased when it ends, and at the command's end
/// one summary of them all: the last read's, its elapsed time the sum of every read's (a
/// command that reads the file twice, `convert --to pprof`, gets one summary).
#[derive(Debug, Default)]
pub struct ProgressLines {
    finished: Option<ReadProgress>,
}

impl ProgressLines {
    /// No read seen yet.
    pub const fn new() -> ProgressLines {
        ProgressLines { finished: None }
    }

    /// The text to write to the terminal for the report `p`, if any (carriage return and
    /// erase-to-end-of-line included).
    pub fn update(&mut self, p: &ReadProgress) -> Option<String> {
        if p.done {
            let before = self.finished.as_ref().map_or(Duration::ZERO, |f| f.elapsed);
            self.finished = Some(ReadProgress {
                elapsed: before + p.elapsed,
                ..p.clone()
            });
            Some("\r\x1b[K".to_string())
        } else if p.elapsed >= QUIET_FOR {
            Some(format!("\r{}\x1b[K", p.line()))
        } else {
            None
        }
    }

    /// The summary line of the reads finished, with its newline, once: `None` when no read
    /// finished (or the summary was taken).
    pub fn summary(&mut self) -> Option<String> {
        let p = self.finished.take()?;
        Some(format!("\r{}\x1b[K\n", p.summary()))
    }
}

/// The stream [`show_progress`] writes to, and what it has shown there.
static TERMINAL: Mutex<Option<(ProgressLines, Box<dyn Write + Send>)>> = Mutex::new(None);

fn terminal() -> MutexGuard<'static, Option<(ProgressLines, Box<dyn Write + Send>)>> {
    TERMINAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Shows every read of a perf.data file on `terminal`, the stream the caller chose (the
/// binary: standard error, when it is a terminal and not under CI), as [`ProgressLines`]
/// says; [`finish_progress`] writes the summary at the end. The first call stays. Errors
/// writing to the stream are ignored: progress is no output of the command.
pub fn show_progress(terminal: impl Write + Send + 'static) {
    self::terminal().get_or_insert_with(|| (ProgressLines::new(), Box::new(terminal)));
    observe_progress(|p| {
        if let Some((lines, out)) = self::terminal().as_mut() {
            if let Some(text) = lines.update(p) {
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
            }
        }
    });
}

/// Writes the summary line of the reads [`show_progress`] showed, if it showed any: once,
/// when the command ends.
pub fn finish_progress() {
    if let Some((lines, out)) = terminal().as_mut() {
        if let Some(text) = lines.summary() {
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }
}

/// How often the observer hears of a read in progress.
const REPORT_EVERY: Duration = Duration::from_millis(150);
/// Records between looks at the clock.
const RECORDS_PER_CHECK: u32 = 256;

/// One read's progress, reported to the observer when there is one.
pub(crate) struct Meter {
    observer: Option<&'static Observer>,
    report: ReadProgress,
    data_start: u64,
    start: Instant,
    next_report: Instant,
    countdown: u32,
}

impl Meter {
    /// A meter for reading the data section at `data` (file offsets) of `file`.
    pub(crate) fn new(file: PathBuf, data: std::ops::Range<u64>) -> Meter {
        let start = Instant::now();
        Meter {
            observer: OBSERVER.get(),
            report: ReadProgress {
                file,
                bytes_read: 0,
                bytes_total: data.end.saturating_sub(data.start),
                samples: 0,
                elapsed: Duration::ZERO,
                done: false,
            },
            data_start: data.start,
            start,
            next_report: start + REPORT_EVERY,
            countdown: RECORDS_PER_CHECK,
        }
    }

    /// Notes a record at file offset `offset` (records come in time order, so offsets only
    /// roughly grow) and whether it was a sample.
    #[inline]
    pub(crate) fn record(&mut self, offset: u64, sample: bool) {
        let Some(observer) = self.observer else {
            return;
        };
        self.report.samples += u64::from(sample);
        self.countdown -= 1;
        if self.countdown > 0 {
            return;
        }
        self.countdown = RECORDS_PER_CHECK;
        let read = offset
            .saturating_sub(self.data_start)
            .min(self.report.bytes_total);
        self.report.bytes_read = self.report.bytes_read.max(read);
        let now = Instant::now();
        if now >= self.next_report {
            self.next_report = now + REPORT_EVERY;
            self.report.elapsed = now - self.start;
            observer(&self.report);
        }
    }

    /// Reports the end of the read.
    pub(crate) fn finish(mut self, samples: u64) {
        if let Some(observer) = self.observer {
            self.report.samples = samples;
            self.report.bytes_read = self.report.bytes_total;
            self.report.elapsed = self.start.elapsed();
            self.report.done = true;
            observer(&self.report);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(read: u64, total: u64, samples: u64, ms: u64) -> ReadProgress {
        ReadProgress {
            file: "out.data".into(),
            bytes_read: read,
            bytes_total: total,
            samples,
            elapsed: Duration::from_millis(ms),
            done: false,
        }
    }

    #[test]
    fn formats_the_running_line_and_the_summary() {
        let p = at(327_600_000, 612_117_780, 40213, 1234);
        assert_eq!(
            p.line(),
            "cpiflame: reading out.data: 312.4 of 583.8 MiB (53%), 40213 samples, 1.2 s"
        );
        assert_eq!(
            at(0, 612_117_780, 72425, 2314).summary(),
            "cpiflame: read out.data: 583.8 MiB, 72425 samples in 2.31 s"
        );
        // An empty data section is read at once.
        assert_eq!(
            at(0, 0, 0, 0).line(),
            "cpiflame: reading out.data: 0.0 of 0.0 MiB (100%), 0 samples, 0.0 s"
        );
    }

    #[test]
    fn a_terminal_gets_running_lines_after_a_while_and_one_summary_of_every_read() {
        let mut lines = ProgressLines::new();
        assert_eq!(
            lines.update(&at(1, 10, 1, 100)),
            None,
            "too early for a line"
        );
        assert_eq!(
            lines.update(&at(5, 10, 2, 400)).as_deref(),
            Some("\rcpiflame: reading out.data: 0.0 of 0.0 MiB (50%), 2 samples, 0.4 s\x1b[K")
        );
        let done = |ms| ReadProgress {
            done: true,
            ..at(10, 10, 3, ms)
        };
        // Each finished read erases its line; the summary adds their times.
        assert_eq!(lines.update(&done(1000)).as_deref(), Some("\r\x1b[K"));
        assert_eq!(lines.update(&done(500)).as_deref(), Some("\r\x1b[K"));
        assert_eq!(
            lines.summary().as_deref(),
            Some("\rcpiflame: read out.data: 0.0 MiB, 3 samples in 1.50 s\x1b[K\n")
        );
        assert_eq!(lines.summary(), None, "once");
    }
}
