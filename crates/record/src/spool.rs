//! The output file: buffered writes that remember where the recent records end, so that when
//! a write fails (the disk is full, a quota is reached) the file can be cut back to the last
//! record that reached the disk and finished with a header and feature sections that say
//! exactly that much: perf and cpiflame then read it like any finished recording.
//!
//! [`PerfDataWriter`] writes each record (and each piece of the header) with one `write`
//! call, and every call's end is a record boundary; the spool keeps those ends for the
//! buffer and for the last [`KEEP`] bytes before it, each with the number of samples written
//! by then. Finishing (after a failure or not) writes the header and feature sections the
//! writer makes for the records kept ([`write::file_end`]) behind them; when they do not fit, the last few records make room for them, and when even that
//! fails the header alone is fixed up.
//!
//! What is buffered reaches the file at least every [`FLUSH_INTERVAL`] ([`Spool::flush_due`],
//! called by the drain loop after each round), and the header and attrs as soon as the file
//! is started ([`Spool::flush_now`]): a recorder that is killed (SIGKILL, the OOM killer)
//! leaves a file whose header says data size 0 and whose records end where the last flush
//! ended, which cpiflame reads to its end (perf 6.1 reads its header and, as with its own
//! killed files, no sample: data size 0). It loses at most the last interval.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use cpiflame_perf_data::write::{self, EventAttr, Features};

/// Bytes buffered before a write reaches the file.
const CAPACITY: usize = 1 << 20;
/// Record ends kept behind the buffer: room for the feature sections when the disk is full.
const KEEP: u64 = 256 * 1024;
/// The longest time records stay buffered (a killed recorder loses at most this much, plus
/// the round being drained): one write call a fifth of a second when the buffer does not
/// fill sooner.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(200);
/// File system block: freeing fewer bytes than this may free no space at all.
const BLOCK: u64 = 4096;

pub struct Spool {
    inner: RefCell<Inner>,
    /// Samples written to this file so far (set by the recorder before it writes each
    /// sample).
    samples: Cell<u64>,
    /// Samples the recording wrote to earlier files (`record --switch-output`): the totals
    /// the recorder notes count them too.
    before: u64,
}

struct Inner {
    file: File,
    buf: Vec<u8>,
    /// File offset of `buf[0]`: every byte before it is on disk.
    at: u64,
    /// When the buffer last went to the file.
    flushed: Instant,
    /// Where write calls ended (file offsets), with the samples written by then.
    ends: VecDeque<(u64, u64)>,
    /// After a failed write: the bytes the file holds from its start.
    broken: Option<u64>,
    closed: bool,
    /// What closing left in the file, once it is closed (`None`: it could not be finished).
    finished: Option<Closed>,
    /// The first error met while closing.
    error: Option<io::Error>,
    /// Tests: the disk is full at this offset.
    #[cfg(test)]
    full_at: Option<u64>,
}

/// What the finished file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Closed {
    /// Samples in the file.
    pub samples: u64,
    /// Bytes of records in the file.
    pub data_size: u64,
    /// Whether the feature sections were written (no room for them otherwise).
    pub features: bool,
    /// Whether every record given to the writer is in the file.
    pub complete: bool,
}

impl Spool {
    pub fn new(file: File) -> Spool {
        Spool::after(file, 0)
    }

    /// A spool for a file that follows others holding `before` samples of the same
    /// recording (`record --switch-output`).
    pub fn after(file: File, before: u64) -> Spool {
        Spool {
            inner: RefCell::new(Inner {
                file,
                buf: Vec::with_capacity(CAPACITY),
                at: 0,
                flushed: Instant::now(),
                ends: VecDeque::new(),
                broken: None,
                closed: false,
                finished: None,
                error: None,
                #[cfg(test)]
                full_at: None,
            }),
            samples: Cell::new(0),
            before,
        }
    }

    /// The first error met by [`Spool::close`] (a full disk when finishing the file).
    pub fn take_error(&self) -> Option<io::Error> {
        self.inner.borrow_mut().error.take()
    }

    /// Tells the spool how many samples the recording has written (in every file) once the
    /// next write is done.
    pub fn note_samples(&self, samples: u64) {
        self.samples.set(samples.saturating_sub(self.before));
    }

    /// Writes what is buffered to the file now (the header and attrs of a file just
    /// started, so that a killed recorder leaves a file that reads).
    pub fn flush_now(&self) -> io::Result<()> {
        self.inner.borrow_mut().flush_buf()
    }

    /// Writes what is buffered to the file when it has waited [`FLUSH_INTERVAL`] or more.
    /// Called between drain rounds, so the file on disk always ends at a record boundary.
    pub fn flush_due(&self) -> io::Result<()> {
        let mut inner = self.inner.borrow_mut();
        if inner.buf.is_empty() || inner.flushed.elapsed() < FLUSH_INTERVAL {
            return Ok(());
        }
        inner.flush_buf()
    }

    /// Makes what was written durable (fsync): a finished file of a recording that goes on
    /// in another one survives a crash of the machine as well as of the recorder.
    pub fn sync(&self) -> io::Result<()> {
        self.inner.borrow().file.sync_all()
    }

    /// Finishes the file: `data_offset` is where the writer put the first record, and
    /// `data_end` where its last record ends. Cuts the file back to the last record on disk
    /// when a write failed, and writes the feature sections behind the records (dropping
    /// the last records to make room when they do not fit). Nothing is written after this;
    /// closing again says what the first close left.
    pub fn close(
        &self,
        attrs: &[EventAttr],
        features: &Features,
        data_offset: u64,
        data_end: u64,
    ) -> io::Result<Closed> {
        if self.inner.borrow().closed {
            return self
                .inner
                .borrow()
                .finished
                .ok_or_else(|| io::Error::other("the file could not be finished"));
        }
        let closed = self.close_once(attrs, features, data_offset, data_end);
        self.inner.borrow_mut().finished = closed.as_ref().ok().copied();
        closed
    }

    fn close_once(
        &self,
        attrs: &[EventAttr],
        features: &Features,
        data_offset: u64,
        data_end: u64,
    ) -> io::Result<Closed> {
        let mut inner = self.inner.borrow_mut();
        let inner = &mut *inner;
        if inner.broken.is_none() {
            inner.error = inner.flush_buf().err();
        }
        inner.closed = true;
        let on_disk = inner.broken.unwrap_or(inner.at).min(data_end);
        if on_disk < data_offset {
            return Err(io::Error::other(
                "the file ends before its first record: no room even for the header",
            ));
        }
        // The record boundaries on disk, last first.
        let mut bounds: Vec<(u64, u64)> = inner
            .ends
            .iter()
            .copied()
            .filter(|&(end, _)| end >= data_offset && end <= on_disk)
            .collect();
        bounds.push((data_offset, 0));
        if inner.broken.is_none() {
            bounds.push((data_end, self.samples.get()));
        }
        bounds.sort_unstable();
        bounds.dedup_by_key(|b| b.0);
        bounds.reverse();
        if write::data_offset(attrs) != data_offset {
            return Err(io::Error::other(
                "the header does not match the recording's",
            ));
        }
        // The feature sections are as long wherever the data ends.
        let tail_len = file_end(attrs, Some(features), 0)?.tail.len() as u64;
        let closed = |(end, samples): (u64, u64), features| Closed {
            samples,
            data_size: end - data_offset,
            features,
            complete: end == data_end,
        };

        let file = &inner.file;
        let limit = inner.limit();
        let last = bounds[0];
        match write_features(file, limit, attrs, features, data_offset, last.0) {
            Ok(()) => return Ok(closed(last, true)),
            Err(e) => {
                inner.error.get_or_insert(e);
            }
        }
        // No room: drop the last records, enough to free a block beyond the features.
        let room = tail_len + BLOCK;
        let mut cut = last;
        if let Some(&earlier) = bounds.iter().find(|&&(b, _)| b + room <= last.0) {
            cut = earlier;
            if write_features(file, limit, attrs, features, data_offset, cut.0).is_ok() {
                return Ok(closed(cut, true));
            }
        }
        // The header alone: the data size, no features.
        file.set_len(cut.0)?;
        let bare = file_end(attrs, None, cut.0 - data_offset)?;
        file.write_all_at(&bare.header, 0)?;
        Ok(closed(cut, false))
    }
}

impl Inner {
    /// Where the disk is full (tests only).
    fn limit(&self) -> u64 {
        #[cfg(test)]
        if let Some(full) = self.full_at {
            return full;
        }
        u64::MAX
    }

    fn check(&self) -> io::Result<()> {
        match self.broken {
            Some(_) => Err(io::Error::other("an earlier write to this file failed")),
            None if self.closed => Err(io::Error::other("the file is closed")),
            None => Ok(()),
        }
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        self.check()?;
        let mut done = 0;
        while done < self.buf.len() {
            let chunk = &self.buf[done..];
            #[cfg(test)]
            let chunk = match self.full_at {
                Some(full) => {
                    let room = full.saturating_sub(self.at + done as u64) as usize;
                    &chunk[..chunk.len().min(room.max(1))]
                }
                None => chunk,
            };
            #[cfg(test)]
            if self
                .full_at
                .is_some_and(|full| self.at + done as u64 >= full)
            {
                self.broken = Some(self.at + done as u64);
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            match self.file.write(chunk) {
                Ok(0) => {
                    self.broken = Some(self.at + done as u64);
                    return Err(io::ErrorKind::WriteZero.into());
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.broken = Some(self.at + done as u64);
                    return Err(e);
                }
            }
        }
        self.at += self.buf.len() as u64;
        self.buf.clear();
        self.flushed = Instant::now();
        while self
            .ends
            .front()
            .is_some_and(|&(end, _)| end + KEEP < self.at)
        {
            self.ends.pop_front();
        }
        Ok(())
    }
}

/// Cuts `file` at `end` and writes the feature sections there, then the header.
fn write_features(
    file: &File,
    limit: u64,
    attrs: &[EventAttr],
    features: &Features,
    data_offset: u64,
    end: u64,
) -> io::Result<()> {
    let file_end = file_end(attrs, Some(features), end - data_offset)?;
    file.set_len(end)?;
    if end + file_end.tail.len() as u64 > limit {
        return Err(io::Error::from_raw_os_error(libc::ENOSPC));
    }
    if let Err(e) = file.write_all_at(&file_end.tail, end) {
        let _ = file.set_len(end);
        return Err(e);
    }
    file.write_all_at(&file_end.header, 0)
}

/// The header and feature sections the writer writes for a file with `attrs` whose data is
/// `data_size` bytes (`features` `None`: the header alone).
fn file_end(
    attrs: &[EventAttr],
    features: Option<&Features>,
    data_size: u64,
) -> io::Result<write::FileEnd> {
    // Only input the writer cannot encode fails here (a NUL in a name), never I/O.
    write::file_end(attrs, features, data_size).map_err(io::Error::other)
}

impl Write for Spool {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let samples = self.samples.get();
        let inner = self.inner.get_mut();
        inner.check()?;
        if inner.buf.len() + data.len() > CAPACITY && !inner.buf.is_empty() {
            inner.flush_buf()?;
        }
        inner.buf.extend_from_slice(data);
        let end = inner.at + inner.buf.len() as u64;
        inner.ends.push_back((end, samples));
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.get_mut().flush_buf()
    }
}

impl Seek for Spool {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let inner = self.inner.get_mut();
        inner.flush_buf()?;
        inner.at = inner.file.seek(pos)?;
        inner.ends.clear();
        Ok(inner.at)
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        // A recording abandoned for another error keeps what it had.
        let _ = self.inner.get_mut().flush_buf();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpiflame_perf_data::abi::{attr_type, sample};
    use cpiflame_perf_data::write::{finished_round_record, PerfDataWriter};

    fn attrs() -> Vec<EventAttr> {
        vec![EventAttr {
            type_: attr_type::SOFTWARE,
            config: 0,
            sample_period_or_freq: 1000,
            sample_type: sample::IDENTIFIER | sample::IP | sample::TID,
            name: Some("cpu-clock".into()),
            ids: vec![7],
            ..EventAttr::default()
        }]
    }

    fn features() -> Features {
        Features {
            hostname: Some("host".into()),
            cmdline: vec!["cpiflame".into(), "record".into()],
            ..Features::default()
        }
    }

    fn temp(name: &str) -> (std::path::PathBuf, File) {
        let path =
            std::env::temp_dir().join(format!("cpiflame-spool-{}-{name}", std::process::id()));
        let file = File::options()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        (path, file)
    }

    /// A record of `n` bytes (FINISHED_ROUND with a body).
    fn record(n: usize) -> Vec<u8> {
        let mut r = finished_round_record();
        r.resize(n, 0);
        r[6..8].copy_from_slice(&(n as u16).to_ne_bytes());
        r
    }

    #[test]
    fn a_closed_file_is_what_finish_writes() {
        let rec = record(48);
        let mut mem = PerfDataWriter::new(io::Cursor::new(Vec::new()), attrs()).unwrap();
        let (path, file) = temp("same");
        let mut w = PerfDataWriter::new(Spool::new(file), attrs()).unwrap();
        // Over two buffers' worth, so the spool flushes in between.
        for i in 0..50_000u64 {
            mem.write_record(&rec).unwrap();
            w.get_ref().note_samples(i + 1);
            w.write_record(&rec).unwrap();
        }
        let expected = mem.finish(&features()).unwrap().into_inner();
        let (offset, end) = (w.data_offset(), w.data_offset() + w.bytes_written());
        let closed = w
            .get_ref()
            .close(&attrs(), &features(), offset, end)
            .unwrap();
        assert_eq!(
            closed,
            Closed {
                samples: 50_000,
                data_size: 48 * 50_000,
                features: true,
                complete: true
            }
        );
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), expected);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn the_header_at_once_and_records_at_the_flush_interval_reach_the_file() {
        let rec = record(48);
        let (path, file) = temp("interval");
        let mut w = PerfDataWriter::new(Spool::new(file), attrs()).unwrap();
        let on_disk = || std::fs::metadata(&path).unwrap().len();
        assert_eq!(on_disk(), 0);
        w.get_ref().flush_now().unwrap();
        // The header (data size 0) and attrs, as a killed recorder leaves them.
        assert_eq!(on_disk(), w.data_offset());
        w.write_record(&rec).unwrap();
        // Not yet due: the record stays buffered.
        w.get_ref().flush_due().unwrap();
        assert_eq!(on_disk(), w.data_offset());
        std::thread::sleep(FLUSH_INTERVAL);
        w.get_ref().flush_due().unwrap();
        assert_eq!(on_disk(), w.data_offset() + 48);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[48..56], &0u64.to_ne_bytes());
        drop(w);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn after_a_failed_write_the_file_ends_at_the_last_whole_record() {
        let rec = record(1000);
        let (path, file) = temp("cut");
        let spool = Spool::new(file);
        // The disk is full after 1,234,567 bytes: the second flush fails part way.
        spool.inner.borrow_mut().full_at = Some(1_234_567);
        let mut w = PerfDataWriter::new(spool, attrs()).unwrap();
        let mut failed = None;
        for i in 0..3000u64 {
            w.get_ref().note_samples(i + 1);
            if let Err(e) = w.write_record(&rec) {
                failed = Some(e);
                break;
            }
        }
        assert_eq!(
            failed.unwrap().io_error().and_then(io::Error::raw_os_error),
            Some(28)
        );
        let data_offset = w.data_offset();
        let end = data_offset + w.bytes_written();
        w.get_ref().inner.borrow_mut().full_at = None;
        let closed = w
            .get_ref()
            .close(&attrs(), &features(), data_offset, end)
            .unwrap();
        let whole = (1_234_567 - data_offset) / 1000;
        assert_eq!(closed.samples, whole);
        assert_eq!(closed.data_size, whole * 1000);
        assert!(closed.features && !closed.complete);
        drop(w);
        // The same bytes as a writer given just those records.
        let mut mem = PerfDataWriter::new(io::Cursor::new(Vec::new()), attrs()).unwrap();
        for _ in 0..whole {
            mem.write_record(&rec).unwrap();
        }
        assert_eq!(
            std::fs::read(&path).unwrap(),
            mem.finish(&features()).unwrap().into_inner()
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn records_make_room_for_the_features_and_else_the_header_is_fixed_alone() {
        let rec = record(1000);
        let tail = file_end(&attrs(), Some(&features()), 0).unwrap().tail;
        for features_fit in [true, false] {
            let (path, file) = temp(&format!("room-{features_fit}"));
            let mut w = PerfDataWriter::new(Spool::new(file), attrs()).unwrap();
            for i in 0..100u64 {
                w.get_ref().note_samples(i + 1);
                w.write_record(&rec).unwrap();
            }
            let data_offset = w.data_offset();
            let end = data_offset + w.bytes_written();
            // Every record reached the disk, but the features do not fit behind them; after
            // dropping records they do, or (second run) they never do.
            let full = if features_fit { end + 10 } else { end - 50_000 };
            w.get_ref().inner.borrow_mut().flush_buf().unwrap();
            w.get_ref().inner.borrow_mut().full_at = Some(full);
            let closed = w
                .get_ref()
                .close(&attrs(), &features(), data_offset, end)
                .unwrap();
            // The last record that leaves a block free beyond the features.
            let kept = (end - tail.len() as u64 - BLOCK - data_offset) / 1000;
            assert_eq!(
                closed,
                Closed {
                    samples: kept,
                    data_size: kept * 1000,
                    features: features_fit,
                    complete: false
                }
            );
            drop(w);
            let mut mem = PerfDataWriter::new(io::Cursor::new(Vec::new()), attrs()).unwrap();
            for _ in 0..kept {
                mem.write_record(&rec).unwrap();
            }
            let expected = if features_fit {
                mem.finish(&features()).unwrap().into_inner()
            } else {
                let mut bare = mem.finish(&Features::default()).unwrap().into_inner();
                // Without features the writer still writes EVENT_DESC: keep only the records.
                bare.truncate((data_offset + kept * 1000) as usize);
                // No feature bits (the bitmap is the header's last 32 bytes).
                bare[72..104].fill(0);
                bare
            };
            assert_eq!(std::fs::read(&path).unwrap(), expected);
            let _ = std::fs::remove_file(&path);
        }
    }
}
