//! Progress of a long read on standard error: one line redrawn a few times a second (bytes of
//! the file read, samples, elapsed time) and a one-line summary at the end. Only when standard
//! error is a terminal and not under CI: a pipe or a log gets nothing. A command that reads
//! the file twice (`convert --to pprof`: roles, then addresses) gets one summary, at its end.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::{observe_progress, ReadProgress};

/// Reads shorter than this show no running line, only the summary.
const QUIET_FOR: Duration = Duration::from_millis(300);

/// The last finished read, its elapsed time the sum of every read's.
static FINISHED: Mutex<Option<ReadProgress>> = Mutex::new(None);

/// Shows the progress of every read of a perf.data file on standard error, when it is a
/// terminal and `CI` is unset.
pub fn show_on_terminal(env: &Environment) {
    if env.ci || !std::io::stderr().is_terminal() {
        return;
    }
    observe_progress(|p| {
        let text = if p.done {
            let mut finished = FINISHED.lock().unwrap_or_else(|e| e.into_inner());
            let before = finished.as_ref().map_or(Duration::ZERO, |f| f.elapsed);
            *finished = Some(ReadProgress {
                elapsed: before + p.elapsed,
                ..p.clone()
            });
            "\r\x1b[K".to_string()
        } else if p.elapsed >= QUIET_FOR {
            format!("\r{}\x1b[K", progress_line(p))
        } else {
            return;
        };
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    });
}

/// The one-line summary of the reads shown, if any: called once, when the command ends.
pub fn print_summary() {
    let finished = FINISHED.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(p) = finished {
        let _ = write!(std::io::stderr().lock(), "\r{}\x1b[K\n", summary_line(&p));
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// `cpiflame: reading out.data: 312.4 of 583.8 MiB (53%), 40213 samples, 1.2 s`
fn progress_line(p: &ReadProgress) -> String {
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

/// `cpiflame: read out.data: 583.8 MiB, 72425 samples in 2.31 s`
fn summary_line(p: &ReadProgress) -> String {
    format!(
        "cpiflame: read {}: {:.1} MiB, {} samples in {:.2} s",
        p.file.display(),
        mib(p.bytes_total),
        p.samples,
        p.elapsed.as_secs_f64()
    )
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
            progress_line(&p),
            "cpiflame: reading out.data: 312.4 of 583.8 MiB (53%), 40213 samples, 1.2 s"
        );
        assert_eq!(
            summary_line(&at(0, 612_117_780, 72425, 2314)),
            "cpiflame: read out.data: 583.8 MiB, 72425 samples in 2.31 s"
        );
        // An empty data section is read at once.
        assert_eq!(
            progress_line(&at(0, 0, 0, 0)),
            "cpiflame: reading out.data: 0.0 of 0.0 MiB (100%), 0 samples, 0.0 s"
        );
    }
}
