//! Progress of a long read on standard error: one line redrawn a few times a second (bytes of
//! the file read, samples, elapsed time) and a one-line summary at the end, written by the
//! pipeline (`show_progress`, `finish_progress`). Only when standard error is a terminal and
//! not under CI: a pipe or a log gets nothing.

use std::io::IsTerminal;

use cpiflame_pipeline::options::Environment;

/// Shows the progress of every read of a perf.data file on standard error, when it is a
/// terminal and `CI` is unset.
pub fn show_on_terminal(env: &Environment) {
    if !env.ci && std::io::stderr().is_terminal() {
        cpiflame_pipeline::show_progress(std::io::stderr());
    }
}
