//! What the recorder tells as it goes ([`Status`], handed to the callback the binary gives
//! [`crate::record`]) and the text a terminal shows of it ([`StatusLines`], written to the
//! stream the binary hands it), as `pipeline` hands its read progress to `show_progress`.
//!
//! It must never write anywhere but the stream it is given.

use std::io::Write;
use std::path::Path;

/// What the recorder tells as it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status<'a> {
    /// About every 250 ms while recording: samples written and lost so far.
    Progress { samples: u64, lost: u64 },
    /// A `--switch-output` file finished and named (perf's `[ perf record: Dump ... ]`):
    /// its samples and the bytes of its records.
    Dumped {
        path: &'a Path,
        samples: u64,
        data_size: u64,
    },
}

/// The recorder's news as text: on a terminal a live "samples, lost" line redrawn in place;
/// a line for each `--switch-output` file finished, wherever it goes. Write errors are
/// ignored (a closed terminal must not stop a recording).
pub struct StatusLines<W: Write> {
    out: W,
    terminal: bool,
    /// A live line is on the screen, not ended.
    drawn: bool,
}

impl<W: Write> StatusLines<W> {
    /// Lines written to `out`; the live line only when it is a `terminal`.
    pub fn new(out: W, terminal: bool) -> StatusLines<W> {
        StatusLines {
            out,
            terminal,
            drawn: false,
        }
    }

    pub fn show(&mut self, status: Status<'_>) {
        match status {
            Status::Progress { samples, lost } if self.terminal => {
                let _ = write!(
                    self.out,
                    "\r[ cpiflame record: {samples} samples, {lost} lost ]"
                );
                self.drawn = true;
            }
            Status::Progress { .. } => {}
            Status::Dumped {
                path,
                samples,
                data_size,
            } => {
                // The live line is cleared first, so the file's line starts at the margin.
                let clear = if self.drawn { "\r\x1b[K" } else { "" };
                let _ = writeln!(
                    self.out,
                    "{clear}cpiflame: dumped {} ({samples} samples, {:.1} MB)",
                    path.display(),
                    data_size as f64 / 1e6
                );
                self.drawn = false;
            }
        }
        let _ = self.out.flush();
    }

    /// Ends the live line, if one is drawn.
    pub fn end(&mut self) {
        if std::mem::take(&mut self.drawn) {
            let _ = writeln!(self.out);
        }
    }

    /// The stream written to.
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dumped(path: &str) -> Status<'_> {
        Status::Dumped {
            path: Path::new(path),
            samples: 12,
            data_size: 2_500_000,
        }
    }

    /// On a terminal: the live line redrawn, cleared before a file's line, ended at the
    /// end; elsewhere only the files' lines.
    #[test]
    fn a_terminal_gets_the_live_line_and_a_log_only_the_files() {
        let progress = Status::Progress {
            samples: 5,
            lost: 1,
        };
        let mut tty = StatusLines::new(Vec::new(), true);
        for s in [progress, dumped("out.data.1"), progress] {
            tty.show(s);
        }
        tty.end();
        tty.end();
        assert_eq!(
            String::from_utf8(tty.into_inner()).unwrap(),
            "\r[ cpiflame record: 5 samples, 1 lost ]\r\x1b[Kcpiflame: dumped out.data.1 (12 samples, 2.5 MB)\n\r[ cpiflame record: 5 samples, 1 lost ]\n"
        );
        let mut log = StatusLines::new(Vec::new(), false);
        for s in [progress, dumped("out.data.1"), progress] {
            log.show(s);
        }
        log.end();
        assert_eq!(
            String::from_utf8(log.into_inner()).unwrap(),
            "cpiflame: dumped out.data.1 (12 samples, 2.5 MB)\n"
        );
    }
}
