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
            format!("\r{}\x1b[K", p.line())
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
        let _ = write!(std::io::stderr().lock(), "\r{}\x1b[K\n", p.summary());
    }
}
