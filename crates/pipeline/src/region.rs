//! `--region NAME`: the samples inside the intervals a program marked as region NAME, per
//! thread. The intervals come from marker files in samply's convention (its
//! `samply/src/shared/marker_file.rs`): a file named `marker-*.txt` that the program mapped
//! while recorded (so the recording has a PERF_RECORD_MMAP of its path, from the thread that
//! mapped it), one line per interval, `START END NAME`: START and END in nanoseconds on the
//! samples' clock (CLOCK_MONOTONIC for `cpiflame record` and `perf record -k monotonic`),
//! separated by one space, the name the rest of the line. The region-marker library
//! (`crates/markers`, `spans.rs`) writes one such file per thread, `marker-PID-TID.txt`.
//!
//! A file's intervals belong to the thread that mapped it, as samply shows them. A file is
//! read from the path the recording names, else from the recording's own folder (a perf
//! recording moved with its marker files beside it). Lines that do not parse are skipped,
//! as samply skips them; an interval's bounds are inclusive, as `--time`'s.
//!
//! This must never trust a marker file: any bytes parse without a panic, and memory grows
//! only with the intervals of the region asked for.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use cpiflame_perf_data::{PerfData, RecordKind};

/// One line of a marker file: `START END NAME`, or `None` for a line that is not one.
pub fn parse_line(line: &str) -> Option<(u64, u64, &str)> {
    let mut parts = line.splitn(3, ' ');
    let start = parts.next()?.parse().ok()?;
    let end = parts.next()?.parse().ok()?;
    let name = parts.next()?;
    (!name.is_empty()).then_some((start, end, name))
}

/// Whether `path`'s file name is a marker file's: `marker-*.txt`.
pub fn is_marker_file(path: &[u8]) -> bool {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    name.starts_with(b"marker-") && name.ends_with(b".txt")
}

/// The intervals of one region, per thread: sorted and merged, so a time is looked up by
/// binary search.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegionSpans {
    name: String,
    by_tid: HashMap<i32, Vec<(u64, u64)>>,
    /// The marker files read, for messages.
    files: Vec<PathBuf>,
    /// Other region names seen, for the message when `name` has no interval.
    others: Vec<String>,
}

impl RegionSpans {
    /// No interval yet, for region `name`.
    pub fn new(name: &str) -> RegionSpans {
        RegionSpans {
            name: name.to_string(),
            ..RegionSpans::default()
        }
    }

    /// Adds the lines of marker file `text` naming this region as intervals of thread `tid`.
    pub fn add_text(&mut self, tid: i32, text: &[u8]) {
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for line in text.split(|&b| b == b'\n') {
            let Ok(line) = std::str::from_utf8(line) else {
                continue;
            };
            let Some((start, end, name)) = parse_line(line.trim_end_matches('\r')) else {
                continue;
            };
            if name == self.name {
                spans.push((start.min(end), start.max(end)));
            } else if self.others.len() < 20 && !self.others.iter().any(|o| o == name) {
                self.others.push(name.to_string());
            }
        }
        if spans.is_empty() {
            return;
        }
        let all = self.by_tid.entry(tid).or_default();
        all.extend(spans);
        all.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(all.len());
        for &(s, e) in all.iter() {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        *all = merged;
    }

    /// The region's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many intervals (after merging), all threads.
    pub fn intervals(&self) -> usize {
        self.by_tid.values().map(Vec::len).sum()
    }

    /// Thread `tid`'s intervals, sorted, not overlapping.
    pub fn of_thread(&self, tid: i32) -> &[(u64, u64)] {
        self.by_tid.get(&tid).map_or(&[], Vec::as_slice)
    }

    /// Whether a sample of thread `tid` at `time` lies inside one of the thread's intervals.
    pub fn contains(&self, tid: Option<i32>, time: u64) -> bool {
        let Some(spans) = tid.and_then(|t| self.by_tid.get(&t)) else {
            return false;
        };
        let i = spans.partition_point(|&(s, _)| s <= time);
        i > 0 && time <= spans[i - 1].1
    }

    /// The marker files read.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The intervals of region `name` in the marker files `file` (the recording at
    /// `recording`) mapped: each file found by the path recorded, else in the recording's
    /// folder.
    pub fn read(file: &PerfData, recording: &Path, name: &str) -> Result<RegionSpans, RegionError> {
        let mut spans = RegionSpans::new(name);
        let (found, missing) = marker_files(file, recording);
        for (tid, path, bytes) in found {
            spans.add_text(tid, &bytes);
            spans.files.push(path);
        }
        if spans.files.is_empty() {
            return Err(RegionError::NoMarkerFiles {
                file: recording.to_path_buf(),
                name: name.to_string(),
                missing,
            });
        }
        if spans.intervals() == 0 {
            return Err(RegionError::NoSuchRegion {
                file: recording.to_path_buf(),
                name: name.to_string(),
                files: spans.files.len(),
                others: spans.others.clone(),
            });
        }
        Ok(spans)
    }
}

/// The marker files `file` (the recording at `recording`) mapped, each with the thread that
/// mapped it and its bytes, found by the path recorded, else in the recording's folder; and
/// the paths found in neither place.
#[allow(clippy::type_complexity)]
fn marker_files(file: &PerfData, recording: &Path) -> (Vec<(i32, PathBuf, Vec<u8>)>, Vec<PathBuf>) {
    let mut mapped: Vec<(i32, PathBuf)> = Vec::new();
    for record in file.records_on_one_thread() {
        let Ok(record) = record else { break };
        if let RecordKind::Mmap(m) = &record.kind {
            if is_marker_file(m.path) {
                let path = PathBuf::from(String::from_utf8_lossy(m.path).into_owned());
                if !mapped.iter().any(|(t, p)| *t == m.tid && *p == path) {
                    mapped.push((m.tid, path));
                }
            }
        }
    }
    let folder = recording.parent().unwrap_or(Path::new("."));
    let (mut found, mut missing) = (Vec::new(), Vec::new());
    for (tid, path) in mapped {
        let beside = path.file_name().map(|n| folder.join(n));
        let read = std::iter::once(path.clone())
            .chain(beside)
            .find_map(|p| std::fs::read(&p).ok().map(|bytes| (p, bytes)));
        match read {
            Some((p, bytes)) => found.push((tid, p, bytes)),
            None => missing.push(path),
        }
    }
    (found, missing)
}

/// One interval of a marker file, as the timeline page draws it: every line that parses,
/// of every region, as written (not merged; START and END ordered).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marked {
    /// The thread that mapped the file.
    pub tid: i32,
    /// Nanoseconds on the samples' clock, inclusive.
    pub start: u64,
    pub end: u64,
    pub name: String,
}

/// Every interval of every region in the marker files `file` (the recording at `recording`)
/// mapped, found as [`RegionSpans::read`] finds them; in file order, then line order. None
/// when the recording maps no marker file (or none can be read). Unlike `--region`'s read,
/// this keeps every line, so memory grows with the marker files' lines.
pub fn read_all(file: &PerfData, recording: &Path) -> Vec<Marked> {
    let mut all = Vec::new();
    for (tid, _, bytes) in marker_files(file, recording).0 {
        for line in bytes.split(|&b| b == b'\n') {
            let Ok(line) = std::str::from_utf8(line) else {
                continue;
            };
            if let Some((start, end, name)) = parse_line(line.trim_end_matches('\r')) {
                all.push(Marked {
                    tid,
                    start: start.min(end),
                    end: start.max(end),
                    name: name.to_string(),
                });
            }
        }
    }
    all
}

/// Why `--region` cannot be applied.
#[derive(Debug, thiserror::Error)]
pub enum RegionError {
    /// The recording maps no marker file, or none of those it maps can be read.
    #[error(
        "--region {name}: {} has no marker file (marker-*.txt) to read{}: record a program that marks regions (the markers library with CPIFLAME_MARKERS_DIR set; cpiflame record sets it)",
        file.display(),
        if missing.is_empty() {
            String::new()
        } else {
            format!(
                " ({} mapped but not found there or beside the recording: {})",
                missing.len(),
                missing.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            )
        }
    )]
    NoMarkerFiles {
        file: PathBuf,
        name: String,
        missing: Vec<PathBuf>,
    },
    /// No marker file has an interval of the region.
    #[error(
        "--region {name}: no interval of region '{name}' in the {files} marker file(s) of {} (regions there: {})",
        file.display(),
        if others.is_empty() { "none".to_string() } else { others.join(", ") }
    )]
    NoSuchRegion {
        file: PathBuf,
        name: String,
        files: usize,
        others: Vec<String>,
    },
    /// No sample of the recording (within `--time`) lies inside the region's intervals.
    #[error("--region {name}: none of the {samples} samples of {} is inside one of the region's {intervals} intervals (on the thread that marked it)", file.display())]
    NothingInside {
        file: PathBuf,
        name: String,
        intervals: usize,
        samples: u64,
    },
    /// A command that does not select samples by region (c2c).
    #[error("--region: {command} does not select samples by region")]
    NotHere { command: &'static str },
    /// Text input: no records to find marker files by.
    #[error("--region: {} is {kind} text; --region reads a perf.data recording (its marker files are found by its mmap records)", file.display())]
    NeedsPerfData { file: PathBuf, kind: &'static str },
    /// A wall-time graph would spread off-CPU time by thread intervals it cannot clip.
    #[error("--region {name}: {} has off-CPU data, whose time --region does not clip to the region's intervals; add --on-cpu-only", file.display())]
    WallTime { file: PathBuf, name: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_samply_reads_them() {
        assert_eq!(parse_line("10 20 pixel"), Some((10, 20, "pixel")));
        assert_eq!(
            parse_line("10 20 a name with spaces"),
            Some((10, 20, "a name with spaces"))
        );
        assert_eq!(parse_line("10 20 "), None);
        assert_eq!(parse_line("10 20"), None);
        assert_eq!(parse_line("x 20 a"), None);
        assert_eq!(parse_line("-1 20 a"), None);
        assert_eq!(parse_line(""), None);
        assert!(is_marker_file(b"/tmp/marker-12-13.txt"));
        assert!(is_marker_file(b"marker-12.txt"));
        assert!(!is_marker_file(b"/tmp/marker-12.txt/x"));
        assert!(!is_marker_file(b"/tmp/jit-12.dump"));
    }

    #[test]
    fn intervals_per_thread_merged_and_inclusive() {
        let mut r = RegionSpans::new("pixel");
        r.add_text(
            7,
            b"100 200 pixel\n150 250 pixel\n300 400 pixel\n50 60 frame\nbad line\n",
        );
        r.add_text(8, b"1000 2000 pixel\r\n\xff\xfe 1 2\n");
        assert_eq!(r.of_thread(7), &[(100, 250), (300, 400)]);
        assert_eq!(r.of_thread(8), &[(1000, 2000)]);
        assert_eq!(r.intervals(), 3);
        for (tid, t, inside) in [
            (7, 99, false),
            (7, 100, true),
            (7, 250, true),
            (7, 251, false),
            (7, 300, true),
            (7, 401, false),
            (8, 150, false),
            (8, 2000, true),
            (9, 150, false),
        ] {
            assert_eq!(r.contains(Some(tid), t), inside, "tid {tid} at {t}");
        }
        assert!(!r.contains(None, 150));
        assert_eq!(r.others, ["frame"]);
    }
}
