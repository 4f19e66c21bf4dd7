//! How far a read of a recording has come, for a caller that shows it (the binary draws it on
//! a terminal). This crate only measures and hands the numbers over; it prints nothing.

use std::path::PathBuf;
use std::sync::OnceLock;
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
}
