//! Everything the resolver reads from outside the recording goes through [`Source`]: binaries
//! and debug files, kernel symbols, JIT maps, the vDSO and the identity of this machine, and
//! the on-disk cache of decompressed debug sections, the one thing it writes. The
//! rest of the crate works from the bytes and text it hands back, so it can be run on files
//! supplied in memory (tests, fuzzing) exactly as on the host's.
//!
//! [`HostSource`] reads the host. The environment (`$HOME`) is never read in this crate: the
//! caller passes the paths it gives in [`Options`](crate::Options).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cpiflame_perf_data::host::parse_maps;

use crate::shared::SharedBytes;

/// What the machine the resolver runs on says about itself, to tell whether a recording was
/// made on it (then its kernel symbols, vDSO and JIT maps are the recording's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Machine {
    /// Host name (`/proc/sys/kernel/hostname`).
    pub hostname: Option<String>,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub os_release: Option<String>,
    /// Build id of the running kernel (`/sys/kernel/notes`).
    pub kernel_build_id: Option<Vec<u8>>,
}

/// The resolver's view of the outside world. Paths are the ones recordings and options name
/// (after `--symfs` and build-id cache lookups), so an implementation can serve any of them.
///
/// Shared with the thread that reads kernel symbols ahead of use, hence `Send + Sync`.
pub trait Source: Send + Sync {
    /// The bytes of the regular file at `path` (binaries, debug files). A missing file is an
    /// error of kind [`io::ErrorKind::NotFound`]; anything that is not a regular file is an
    /// error too, since paths come from recordings, which may be hostile.
    fn map(&self, path: &Path) -> io::Result<SharedBytes>;

    /// The whole text of the regular file at `path` (kernel symbols, JIT maps), under the
    /// same rules as [`Source::map`].
    fn read_text(&self, path: &Path) -> io::Result<String>;

    /// Each line of the text file at `path`, without its line end, under the same rules as
    /// [`Source::read_text`]; by default read whole first.
    fn for_each_line(&self, path: &Path, f: &mut dyn FnMut(&str)) -> io::Result<()> {
        self.read_text(path)?.lines().for_each(f);
        Ok(())
    }

    /// A copy of this machine's vDSO image, `None` when it cannot be had.
    fn vdso(&self) -> Option<SharedBytes>;

    /// This machine's host name, kernel release and kernel build id.
    fn machine(&self) -> Machine;

    /// When process `pid` runs on this machine in another mount namespace than the
    /// resolver (a container): that namespace's id and the process's root as seen from
    /// here (`/proc/PID/root`), under which the paths it maps are its files. `None`
    /// otherwise, and by default. A path under that root is resolved inside it by
    /// [`HostSource`] (its symlinks and `..` never leave it; [`crate::open_in_root`]), so
    /// joining a recorded path to it names the process's file, never the host's.
    fn process_root(&self, pid: i32) -> Option<(u64, PathBuf)> {
        let _ = pid;
        None
    }

    /// The entry at `path` of the cache of decompressed debug sections, mapped; `None` when
    /// there is none. By default there is no cache.
    fn cached(&self, path: &Path) -> Option<SharedBytes> {
        let _ = path;
        None
    }

    /// Keeps what `write` writes as the cache entry at `path`, whole or not at all: a reader
    /// sees the entry whole or none. Errors are the caller's to ignore (a cache only saves
    /// work). By default nothing is kept.
    fn keep_cached(
        &self,
        path: &Path,
        write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        let _ = (path, write);
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// The host: files opened read-only and mapped, `/proc` and `/sys` for the machine's identity,
/// the vDSO copied out of this process.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostSource;

impl HostSource {
    /// The host as a shared [`Source`].
    pub fn shared() -> Arc<dyn Source> {
        Arc::new(HostSource)
    }
}

impl Source for HostSource {
    fn map(&self, path: &Path) -> io::Result<SharedBytes> {
        let file = open_regular(path)?;
        // SAFETY: read-only map; binaries replaced under us are a documented perf limitation too.
        unsafe { SharedBytes::map_file(file) }
    }

    fn read_text(&self, path: &Path) -> io::Result<String> {
        use std::io::Read;
        let mut text = String::new();
        open_regular(path)?.read_to_string(&mut text)?;
        Ok(text)
    }

    /// Read through a buffer: /proc/kallsyms is megabytes of text that need not be held.
    fn for_each_line(&self, path: &Path, f: &mut dyn FnMut(&str)) -> io::Result<()> {
        use std::io::BufRead;
        let mut reader = io::BufReader::with_capacity(1 << 16, open_regular(path)?);
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            f(line.trim_end_matches(['\n', '\r']));
        }
    }

    fn vdso(&self) -> Option<SharedBytes> {
        own_vdso().map(SharedBytes::owned)
    }

    fn machine(&self) -> Machine {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_string())
        };
        Machine {
            hostname: read("/proc/sys/kernel/hostname"),
            os_release: read("/proc/sys/kernel/osrelease"),
            kernel_build_id: std::fs::read("/sys/kernel/notes")
                .ok()
                .and_then(|notes| crate::notes::gnu_build_id_note(&notes)),
        }
    }

    fn process_root(&self, pid: i32) -> Option<(u64, PathBuf)> {
        foreign_root(pid)
    }

    fn cached(&self, path: &Path) -> Option<SharedBytes> {
        let file = std::fs::File::open(path).ok()?;
        // SAFETY: entries are written once to a temporary file and renamed into place
        // ([`Source::keep_cached`]); an entry is never written again under its name (a
        // changed one gets a new name).
        unsafe { SharedBytes::map_file(file) }.ok()
    }

    /// Written to a temporary file in the same directory and renamed into place.
    fn keep_cached(
        &self,
        path: &Path,
        write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        let dir = path.parent().ok_or(io::ErrorKind::InvalidInput)?;
        std::fs::create_dir_all(dir)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let temp = dir.join(format!(".tmp-{}-{nanos}", std::process::id()));
        let written = std::fs::File::create_new(&temp).and_then(|file| {
            let mut out = io::BufWriter::new(file);
            write(&mut out)?;
            out.flush()
        });
        let kept = written.and_then(|()| std::fs::rename(&temp, path));
        if kept.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        kept
    }
}

/// The mount namespace id and root (`/proc/PID/root`) of process `pid` when it is in another
/// mount namespace than this process (its `/proc/PID/ns/mnt` is another inode): the files a
/// container's process maps are found under its root, not at their paths on the host.
pub fn foreign_root(pid: i32) -> Option<(u64, PathBuf)> {
    use std::os::unix::fs::MetadataExt;
    if pid <= 0 {
        return None;
    }
    let ns = |p: &str| std::fs::metadata(format!("/proc/{p}/ns/mnt")).ok();
    let (theirs, ours) = (ns(&pid.to_string())?, ns("self")?);
    ((theirs.dev(), theirs.ino()) != (ours.dev(), ours.ino()))
        .then(|| (theirs.ino(), PathBuf::from(format!("/proc/{pid}/root"))))
}

/// Opens `path` for reading only if it is a regular file. Paths come from recordings, which
/// may be hostile: a FIFO planted at a recorded path would block `open` forever, and a
/// device would be read without end. O_NONBLOCK makes the open of a FIFO return at once; the
/// type is then checked on the open file, so it cannot change in between.
///
/// A path under a process's root (`/proc/PID/root/PATH`, [`Source::process_root`] joined
/// with a recorded path) is resolved inside that root, as the process sees it
/// ([`crate::open_in_root`]): a container's symlinks never lead to the host's files.
pub fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some((root, inside)) = crate::in_root::under_process_root(path) {
        return crate::in_root::open_in_root(&root, inside);
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// A copy of this process's vDSO image (the same for every process of this boot).
fn own_vdso() -> Option<Vec<u8>> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let vdso = parse_maps(&maps).find(|m| m.path == "[vdso]")?;
    let (start, end) = (vdso.start, vdso.end);
    let len = usize::try_from(end.checked_sub(start)?).ok()?;
    if start == 0 || len == 0 || len > 1 << 24 {
        return None;
    }
    // SAFETY: /proc/self/maps says [start, end) is the vDSO, mapped readable for the whole
    // life of this process; we copy it out and keep no reference.
    let bytes = unsafe { std::slice::from_raw_parts(start as *const u8, len) };
    Some(bytes.to_vec())
}
