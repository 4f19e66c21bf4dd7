//! The JIT files a recording needs, kept beside it so it reads alone later on this machine:
//! each JIT dump a recorded process mapped (`jit-PID.dump`: a runtime maps its dump so that
//! the recording has an MMAP of it, which is how perf inject finds it) and the perf map
//! (`/tmp/perf-PID.map`) of each process with samples, copied at the end into the folder
//! `OUTPUT.jit/` (with `--switch-output`, named after the OUTPUT given, shared by its files).
//!
//! A dump a runtime wrote into the recorder's current directory (node writes `jit-PID.dump`
//! into its own) is moved there instead, out of the user's way: only a file that was not
//! there when the recording started, that a recorded process mapped, and whose process has
//! ended. With `--jit` having given node `--perf-prof`, V8's log of that process
//! (`isolate-0xADDR-PID-v8.log`, which it then writes into the same directory) is moved too.
//!
//! A container's dump is opened through its process's root as soon as its mapping is seen
//! and held open; a container's perf map (its `/tmp/perf-NSPID.map`, named by its pid in its
//! own pid namespace) is read through the root held from the process's first sample. Both
//! are kept under the recording's (host) pid: `perf-PID.map`; a dump keeps its own name, as
//! the recording's MMAP record gives it.
//!
//! It must never remove or move a file but those it moves into the folder (named above), nor
//! read a container's file outside its root.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirEntryExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use cpiflame_perf_data::RecordKind;

/// Most dumps, and containers' roots, held open at once (each is one fd).
const MAX_DUMPS: usize = 256;
const MAX_ROOTS: usize = 256;

/// What was kept, for the report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// The folder (`OUTPUT.jit`); `None` when nothing was kept.
    pub dir: Option<PathBuf>,
    /// JIT dumps, perf maps and V8 logs copied or moved into it.
    pub dumps: usize,
    pub maps: usize,
    pub logs: usize,
    /// Of those, moved out of the current directory.
    pub moved: usize,
}

impl Kept {
    /// Every file kept.
    pub fn files(&self) -> usize {
        self.dumps + self.maps + self.logs
    }

    /// What the final status line says of them: `1 JIT dump, 2 perf maps kept in
    /// out.data.jit (1 moved there from the current directory)`; empty when none was kept.
    pub fn said(&self) -> String {
        let Some(dir) = &self.dir else {
            return String::new();
        };
        let count = |n: usize, what: &str| match n {
            0 => None,
            1 => Some(format!("1 {what}")),
            n => Some(format!("{n} {what}s")),
        };
        let parts: Vec<String> = [
            count(self.dumps, "JIT dump"),
            count(self.maps, "perf map"),
            count(self.logs, "V8 log"),
        ]
        .into_iter()
        .flatten()
        .collect();
        format!(
            "{} kept in {}{}",
            parts.join(", "),
            dir.display(),
            match self.moved {
                0 => String::new(),
                m => format!(" ({m} moved there from the current directory)"),
            }
        )
    }
}

/// What the recording noted of JIT files while it ran.
#[derive(Default)]
pub(crate) struct JitFiles {
    /// The recorder's current directory (real path), and the (name, inode) of its entries
    /// when the recording started: a file there before is the user's and never moved.
    cwd: Option<PathBuf>,
    there_before: HashSet<(OsString, u64)>,
    /// Move V8's logs too (`--jit` gave node `--perf-prof`).
    v8_logs: bool,
    /// JIT dumps mapped, by (pid, recorded path).
    dumps: BTreeMap<(i32, Vec<u8>), Dump>,
    /// Processes with samples: where each one's perf map is.
    sampled: HashMap<i32, Process>,
    roots_held: usize,
    last_sampled: Option<i32>,
}

/// A dump as mapped: held open (through the process's root in a container) when it could
/// be opened.
struct Dump {
    file: Option<File>,
    in_container: bool,
}

/// Where a sampled process's perf map is read from.
enum Process {
    /// On the host: `/tmp/perf-PID.map`.
    Host,
    /// In a container, its root held from its first sample.
    Container(Root),
    /// In a container whose root was not held (too many held, or it had gone): its map
    /// is read through its root at the end if it still runs.
    Unheld,
}

/// A container's root directory (an O_PATH descriptor), its mount namespace (held, so the
/// mounts seen through the root, a `/tmp` of its own, outlive the container), the process's
/// pid inside, and its perf map when it had one at its first sample (held: a runtime appends
/// to it).
struct Root {
    dir: File,
    _namespace: Option<File>,
    nspid: i32,
    map: Option<File>,
}

/// `jit-DIGITS.dump`, the name perf inject and the runtimes use.
fn is_dump_name(name: &[u8]) -> bool {
    name.strip_prefix(b"jit-")
        .and_then(|r| r.strip_suffix(b".dump"))
        .is_some_and(|d| !d.is_empty() && d.iter().all(u8::is_ascii_digit))
}

/// V8's log of process `pid` (`isolate-0x55d0c8a2f000-1234-v8.log`).
fn is_v8_log_of(name: &[u8], pids: &[i32]) -> bool {
    let Some(rest) = name
        .strip_prefix(b"isolate-0x")
        .and_then(|r| r.strip_suffix(b"-v8.log"))
    else {
        return false;
    };
    let Some((addr, pid)) = std::str::from_utf8(rest)
        .ok()
        .and_then(|r| r.split_once('-'))
    else {
        return false;
    };
    addr.bytes().all(|b| b.is_ascii_hexdigit())
        && pid.parse::<i32>().is_ok_and(|p| pids.contains(&p))
}

/// The folder `output`'s JIT files are kept in: `OUTPUT.jit`.
pub fn folder_of(output: &Path) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(".jit");
    PathBuf::from(name)
}

impl JitFiles {
    /// Starts noting: lists the current directory, and (without `--switch-output`, whose
    /// files share one folder) keeps an existing `OUTPUT.jit` folder as `OUTPUT.old.jit`,
    /// beside the `OUTPUT.old` the old recording becomes, so no stale file of another
    /// recording is read with this one.
    pub(crate) fn start(output: &Path, rotating: bool, v8_logs: bool) -> JitFiles {
        if !rotating {
            let folder = folder_of(output);
            if std::fs::symlink_metadata(&folder).is_ok_and(|m| m.is_dir()) {
                let mut old = output.as_os_str().to_owned();
                old.push(".old");
                let old = folder_of(Path::new(&old));
                if std::fs::symlink_metadata(&old).is_ok_and(|m| m.is_dir()) {
                    let _ = std::fs::remove_dir_all(&old);
                }
                let _ = std::fs::rename(&folder, &old);
            }
        }
        let cwd = std::env::current_dir()
            .ok()
            .and_then(|d| std::fs::canonicalize(d).ok());
        let there_before = cwd
            .as_deref()
            .and_then(|d| std::fs::read_dir(d).ok())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| (e.file_name(), e.ino()))
            .collect();
        JitFiles {
            cwd,
            there_before,
            v8_logs,
            ..JitFiles::default()
        }
    }

    /// A side-band record: a mapping of a JIT dump is noted, and the dump opened (through the
    /// process's root in a container) and held.
    pub(crate) fn observe(&mut self, kind: &RecordKind<'_>) {
        let RecordKind::Mmap(m) = kind else { return };
        let name = m.path.rsplit(|&b| b == b'/').next().unwrap_or(m.path);
        if !m.path.starts_with(b"/") || !is_dump_name(name) {
            return;
        }
        let key = (m.pid, m.path.to_vec());
        if self.dumps.contains_key(&key) {
            return;
        }
        let path = Path::new(OsStr::from_bytes(m.path));
        let root = cpiflame_unwind::foreign_root(m.pid);
        let file = (self.dumps.len() < MAX_DUMPS)
            .then(|| match &root {
                Some((_, root)) => cpiflame_unwind::open_in_root(root, path).ok(),
                None => cpiflame_unwind::open_regular(path).ok(),
            })
            .flatten();
        self.dumps.insert(
            key,
            Dump {
                file,
                in_container: root.is_some(),
            },
        );
    }

    /// A sample of process `pid`: its perf map is kept at the end; a container's root is
    /// held from now on, so its map can be read after it has gone.
    pub(crate) fn sampled(&mut self, pid: i32) {
        if self.last_sampled == Some(pid) || pid <= 0 {
            return;
        }
        self.last_sampled = Some(pid);
        if self.sampled.contains_key(&pid) {
            return;
        }
        let process = match cpiflame_unwind::foreign_root(pid) {
            None => Process::Host,
            Some(_) if self.roots_held >= MAX_ROOTS => Process::Unheld,
            Some((_, root)) => match container_root(pid, &root) {
                Some(root) => {
                    self.roots_held += 1;
                    Process::Container(root)
                }
                None => Process::Unheld,
            },
        };
        self.sampled.insert(pid, process);
    }

    /// Copies (or moves) the files into `OUTPUT.jit/`; warnings for what could not be kept.
    pub(crate) fn keep(&self, output: &Path, warnings: &mut Vec<String>) -> Kept {
        let mut items: Vec<(OsString, Item, Kind)> = Vec::new();
        let mut names = HashSet::new();
        let mut dump_pids = Vec::new();
        for ((pid, recorded), dump) in &self.dumps {
            let path = PathBuf::from(OsStr::from_bytes(recorded));
            let Some(name) = path.file_name().map(OsStr::to_os_string) else {
                continue;
            };
            dump_pids.push(*pid);
            if !names.insert(name.clone()) {
                continue;
            }
            let item = if !dump.in_container && self.movable(&path, &[*pid]) {
                Item::Move(path)
            } else {
                match &dump.file {
                    Some(file) => Item::Held(file),
                    None if !dump.in_container => Item::Path(path),
                    None => continue,
                }
            };
            items.push((name, item, Kind::Dump));
        }
        let mut pids: Vec<i32> = self.sampled.keys().copied().collect();
        pids.sort_unstable();
        for &pid in &pids {
            let name = OsString::from(format!("perf-{pid}.map"));
            let late;
            let root = match &self.sampled[&pid] {
                Process::Host => {
                    let path = PathBuf::from(format!("/tmp/perf-{pid}.map"));
                    if path.is_file() && names.insert(name.clone()) {
                        items.push((name, Item::Path(path), Kind::Map));
                    }
                    continue;
                }
                Process::Container(Root { map: Some(map), .. }) => {
                    if names.insert(name.clone()) {
                        items.push((name, Item::Held(map), Kind::Map));
                    }
                    continue;
                }
                Process::Container(root) => root,
                Process::Unheld => {
                    match cpiflame_unwind::foreign_root(pid)
                        .and_then(|(_, root)| container_root(pid, &root))
                    {
                        Some(root) => {
                            late = root;
                            &late
                        }
                        None => continue,
                    }
                }
            };
            // The root held, reopened through its descriptor: the process may have gone (its
            // mount namespace, held too, keeps a /tmp mounted in it).
            let at = PathBuf::from(format!("/proc/self/fd/{}", root.dir.as_raw_fd()));
            let inside = format!("/tmp/perf-{}.map", root.nspid);
            let item = match cpiflame_unwind::open_in_root(&at, Path::new(&inside)) {
                Ok(file) => Item::Owned(file),
                Err(_) => continue,
            };
            if names.insert(name.clone()) {
                items.push((name, item, Kind::Map));
            }
        }
        if self.v8_logs {
            dump_pids.extend(&pids);
            let logs = self
                .cwd
                .as_deref()
                .and_then(|d| std::fs::read_dir(d).ok())
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| is_v8_log_of(e.file_name().as_bytes(), &dump_pids));
            for entry in logs {
                let path = entry.path();
                let pid = v8_log_pid(entry.file_name().as_bytes());
                if self.movable(&path, &[pid]) && names.insert(entry.file_name()) {
                    items.push((entry.file_name(), Item::Move(path), Kind::Log));
                }
            }
        }
        let mut kept = Kept::default();
        if items.is_empty() {
            return kept;
        }
        let dir = folder_of(output);
        if let Err(e) = std::fs::create_dir(&dir) {
            if e.kind() != io::ErrorKind::AlreadyExists
                || !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir())
            {
                warnings.push(format!(
                    "{}: {}; the {} JIT files the recording needs were not kept",
                    dir.display(),
                    if e.kind() == io::ErrorKind::AlreadyExists {
                        "not a folder".to_string()
                    } else {
                        e.to_string()
                    },
                    items.len()
                ));
                return kept;
            }
        }
        for (name, item, kind) in items {
            let to = dir.join(&name);
            let done = match &item {
                Item::Move(from) => move_file(from, &to).map(|()| true),
                Item::Held(file) => copy_from(file, &to).map(|()| false),
                Item::Owned(file) => copy_from(file, &to).map(|()| false),
                Item::Path(from) => cpiflame_unwind::open_regular(from)
                    .and_then(|f| copy_from(&f, &to))
                    .map(|()| false),
            };
            match done {
                Ok(moved) => {
                    *match kind {
                        Kind::Dump => &mut kept.dumps,
                        Kind::Map => &mut kept.maps,
                        Kind::Log => &mut kept.logs,
                    } += 1;
                    kept.moved += usize::from(moved);
                }
                Err(e) => warnings.push(format!(
                    "{}: not kept in {}: {e}",
                    name.to_string_lossy(),
                    dir.display()
                )),
            }
        }
        kept.dir = (kept.files() > 0).then_some(dir);
        kept
    }

    /// Whether `path` is a file the recording may move: in the recorder's current directory,
    /// not there when it started, and its process (the first of `pids`) gone.
    fn movable(&self, path: &Path, pids: &[i32]) -> bool {
        let Some(cwd) = &self.cwd else { return false };
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return false;
        };
        if std::fs::canonicalize(parent).ok().as_deref() != Some(cwd.as_path()) {
            return false;
        }
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return false;
        };
        meta.is_file()
            && !self
                .there_before
                .contains(&(name.to_os_string(), meta.ino()))
            && pids
                .first()
                .is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists())
    }
}

/// What a kept file is.
#[derive(Clone, Copy)]
enum Kind {
    Dump,
    Map,
    Log,
}

/// One file to keep.
enum Item<'a> {
    /// Moved from the current directory.
    Move(PathBuf),
    /// Copied from a file held open since its mapping.
    Held(&'a File),
    /// Copied from a file opened now (through a container's root).
    Owned(File),
    /// Copied from a host path.
    Path(PathBuf),
}

fn v8_log_pid(name: &[u8]) -> i32 {
    std::str::from_utf8(name)
        .ok()
        .and_then(|n| n.strip_suffix("-v8.log")?.rsplit('-').next()?.parse().ok())
        .unwrap_or(0)
}

/// A container process's root (`root`, its `/proc/PID/root`), held open, and its pid in its
/// own pid namespace (the last of `NSpid:` in its status, as perf names its perf map).
fn container_root(pid: i32, root: &Path) -> Option<Root> {
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
        .open(root)
        .ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let nspid = status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
        .unwrap_or(pid);
    let namespace = File::open(format!("/proc/{pid}/ns/mnt")).ok();
    let map =
        cpiflame_unwind::open_in_root(root, Path::new(&format!("/tmp/perf-{nspid}.map"))).ok();
    Some(Root {
        dir,
        _namespace: namespace,
        nspid,
        map,
    })
}

/// Copies `from` (from its start) to `to`, written aside and renamed, so a reader never sees
/// half a file.
fn copy_from(from: &File, to: &Path) -> io::Result<()> {
    let mut part = to.as_os_str().to_owned();
    part.push(format!(".part{}", std::process::id()));
    let part = PathBuf::from(part);
    let written = (|| {
        let mut out = File::create(&part)?;
        let mut reader = from.try_clone()?;
        io::Seek::seek(&mut reader, io::SeekFrom::Start(0))?;
        io::copy(&mut reader, &mut out)?;
        std::fs::rename(&part, to)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    written
}

/// Moves `from` to `to` (copied and removed across file systems).
fn move_file(from: &Path, to: &Path) -> io::Result<()> {
    match std::fs::rename(from, to) {
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
            copy_from(&cpiflame_unwind::open_regular(from)?, to)?;
            std::fs::remove_file(from)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_dump_name(b"jit-1234.dump"));
        for bad in [
            &b"jit-.dump"[..],
            b"jit-12a.dump",
            b"jit-1.dump.x",
            b"xjit-1.dump",
        ] {
            assert!(!is_dump_name(bad), "{}", String::from_utf8_lossy(bad));
        }
        assert!(is_v8_log_of(b"isolate-0x2d2fac90-2525-v8.log", &[2525]));
        assert!(!is_v8_log_of(b"isolate-0x2d2fac90-2525-v8.log", &[2526]));
        assert!(!is_v8_log_of(b"isolate-0xzz-2525-v8.log", &[2525]));
        assert_eq!(v8_log_pid(b"isolate-0x2d2fac90-2525-v8.log"), 2525);
        assert_eq!(
            folder_of(Path::new("a/perf.data")),
            Path::new("a/perf.data.jit")
        );
    }
}
