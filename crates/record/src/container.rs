//! Containers' files: a process in another mount namespace maps paths that are its own
//! files, not the host's. While recording, each such file is opened once through the
//! process's root (`/proc/PID/root`, the path resolved inside it: a symlink in the container
//! never leads to a host file) and held open, so it can still be read at the end
//! when the process (or the whole container) is gone. Its build id goes into its mappings'
//! MMAP2 records (as the kernel writes them with `attr.build_id`: a host file at the same
//! path keeps its own) and, where no host process maps that path, the file's build-id
//! table; a copy goes into perf's build-id cache, so cpiflame and `perf report` name the
//! container's code after it has gone.
//!
//! It must never write anything but entries of the build-id cache it is given.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use cpiflame_perf_data::abi::misc;
use cpiflame_perf_data::write::HOST_PID;
use cpiflame_perf_data::BuildIdEntry;

/// Most container files held open (each is one fd).
const MAX_FILES: usize = 512;

/// The files containers' processes mapped, held open.
#[derive(Default)]
pub(crate) struct Containers {
    /// Per pid: its mount namespace and root when it is in a container (asked once per
    /// process image).
    roots: HashMap<i32, Option<(u64, PathBuf)>>,
    /// By recorded path and mount namespace: the file, opened through a process's root
    /// (`None`: the host's own file, shared with the container).
    files: BTreeMap<(Vec<u8>, u64), Option<Kept>>,
    /// Why no file could be opened through a root (a kernel without openat2(2)), once.
    refused: Option<String>,
}

/// A container's file held open, and its build id.
struct Kept {
    file: File,
    build_id: Option<Vec<u8>>,
}

/// The GNU build id of the ELF file `file`.
fn build_id_of(file: &File) -> Option<Vec<u8>> {
    use object::Object;
    // SAFETY: a read-only map of a file held open; a container rewriting its binary while
    // it runs is the same limitation perf has.
    let bytes = unsafe { cpiflame_unwind::SharedBytes::map_file(file.try_clone().ok()?) }.ok()?;
    let id = object::File::parse(&*bytes).ok()?.build_id().ok()??;
    (!id.is_empty() && id.len() <= 20).then(|| id.to_vec())
}

impl Containers {
    /// A process's image changed (exec, or a new process): its namespace is asked again.
    pub(crate) fn forget(&mut self, pid: i32) {
        self.roots.remove(&pid);
    }

    /// An executable mapping of `path` by `pid`: `None` for a host file, else a container's
    /// own file (held open; the host's file at that path, if any, is another) with its build
    /// id. A file the container shares with the host (the same device and inode) is the
    /// host's.
    pub(crate) fn mapped(&mut self, pid: i32, path: &[u8]) -> Option<Option<&[u8]>> {
        let root = self
            .roots
            .entry(pid)
            .or_insert_with(|| cpiflame_unwind::foreign_root(pid));
        let (ns, root) = root.as_ref()?;
        let key = (path.to_vec(), *ns);
        if !self.files.contains_key(&key) {
            let kept = match Self::open(root, path) {
                Ok(kept) => kept,
                Err(e) => {
                    if e.kind() == io::ErrorKind::Unsupported {
                        self.refused.get_or_insert_with(|| e.to_string());
                    }
                    return None;
                }
            };
            if self.files.len() >= MAX_FILES {
                return Some(None);
            }
            self.files.insert(key.clone(), kept);
        }
        let kept = self.files.get(&key)?.as_ref()?;
        Some(kept.build_id.as_deref())
    }

    /// The regular file at `path` as the process whose root is `root` sees it (resolved
    /// inside the root: [`cpiflame_unwind::open_in_root`]), and whether it is the
    /// container's own: an error when it cannot be opened (gone already: read at its host
    /// path, as any other), `None` when it is the host's file.
    fn open(root: &Path, path: &[u8]) -> io::Result<Option<Kept>> {
        use std::os::unix::fs::MetadataExt;
        let host_path = Path::new(std::ffi::OsStr::from_bytes(path));
        let file = cpiflame_unwind::open_in_root(root, host_path)?;
        let same = |m: std::fs::Metadata| (m.dev(), m.ino());
        let shared = match (file.metadata(), std::fs::metadata(host_path)) {
            (Ok(a), Ok(b)) => same(a) == same(b),
            _ => false,
        };
        Ok((!shared).then(|| Kept {
            build_id: build_id_of(&file),
            file,
        }))
    }

    /// Why containers' files were not read through their roots, when that was refused.
    pub(crate) fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    /// The build-id table's entries of the files held, for paths no host process mapped
    /// (`host`; each path once, the first namespace's) and, with `cache`, each file kept in
    /// perf's build-id cache. Best effort: a file that cannot be read or kept is left out.
    pub(crate) fn finish(
        &self,
        cache: Option<&Path>,
        host: &BTreeSet<Vec<u8>>,
    ) -> Vec<BuildIdEntry> {
        let mut entries: Vec<BuildIdEntry> = Vec::new();
        for ((path, _), kept) in &self.files {
            let Some(Kept {
                file,
                build_id: Some(id),
            }) = kept
            else {
                continue;
            };
            if let Some(cache) = cache {
                let mut data = Vec::new();
                if io::Read::read_to_end(&mut &*file, &mut data).is_ok() {
                    let _ = keep_in_cache(cache, path, id, &data);
                }
            }
            if !host.contains(path) && !entries.iter().any(|e| &e.path == path) {
                entries.push(BuildIdEntry {
                    pid: HOST_PID,
                    misc: misc::USER,
                    build_id: id.to_vec(),
                    path: path.clone(),
                });
            }
        }
        entries
    }
}

/// Keeps `bytes` (the file recorded at `path`, build id `id`) in perf's build-id cache as
/// perf does (`build_id_cache__add`): the file at `CACHE/PATH/HEX/elf`, and the link
/// `CACHE/.build-id/HE/X...` to `../../PATH/HEX`, through which readers (perf, cpiflame)
/// find it by build id. An entry already there is kept.
pub(crate) fn keep_in_cache(cache: &Path, path: &[u8], id: &[u8], bytes: &[u8]) -> io::Result<()> {
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let relative = Path::new(std::ffi::OsStr::from_bytes(path));
    let relative = relative.strip_prefix("/").unwrap_or(relative);
    if relative
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(io::ErrorKind::InvalidInput.into());
    }
    let dir = cache.join(relative).join(&hex);
    let elf = dir.join("elf");
    if !elf.exists() {
        std::fs::create_dir_all(&dir)?;
        // Written aside and renamed: a reader never sees half a file.
        let part = dir.join(format!(".elf.{}", std::process::id()));
        let written = std::fs::write(&part, bytes).and_then(|()| std::fs::rename(&part, &elf));
        if written.is_err() {
            let _ = std::fs::remove_file(&part);
            return written;
        }
    }
    let links = cache.join(".build-id").join(&hex[..2]);
    std::fs::create_dir_all(&links)?;
    let target = Path::new("../..").join(relative).join(&hex);
    match std::os::unix::fs::symlink(&target, links.join(&hex[2..])) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// perf's layout: the copy under the recorded path and build id, found by build id
    /// through the link, as `.build-id/HE/X.../elf`; a second keep changes nothing; paths
    /// that would leave the cache are refused.
    #[test]
    fn kept_where_perf_and_cpiflame_look() {
        let dir = cpiflame_testkit::Dir::new("container-cache");
        let cache = dir.root();
        let id = [0xab, 0xcd, 0xef, 0x01];
        keep_in_cache(cache, b"/opt/app/bin/app", &id, b"\x7fELF...").unwrap();
        let by_id = cache.join(".build-id/ab/cdef01/elf");
        assert_eq!(std::fs::read(&by_id).unwrap(), b"\x7fELF...");
        assert_eq!(
            std::fs::read_link(cache.join(".build-id/ab/cdef01")).unwrap(),
            Path::new("../../opt/app/bin/app/abcdef01")
        );
        assert!(cache.join("opt/app/bin/app/abcdef01/elf").is_file());
        keep_in_cache(cache, b"/opt/app/bin/app", &id, b"other").unwrap();
        assert_eq!(std::fs::read(&by_id).unwrap(), b"\x7fELF...");
        assert!(keep_in_cache(cache, b"/opt/../../etc/x", &id, b"x").is_err());
    }
}
