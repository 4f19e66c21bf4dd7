//! Finding the files behind recorded paths: a container's process's root (`/proc/PID/root`),
//! `--symfs`, perf's build-id cache (`~/.debug`),
//! separate debug info by build id (`/usr/lib/debug/.build-id/`) and `.gnu_debuglink`, and the
//! vDSO of this machine. Decides which paths to try, in which order, and which file to
//! trust; reading them is the [`Source`]'s business.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::image::{Image, ImageError};
use crate::source::Source;

/// Where to look for binaries and debug info, and what to read them with.
#[derive(Clone)]
pub struct Locator {
    /// Reads the files and the vDSO.
    pub source: Arc<dyn Source>,
    /// `--symfs DIR`: recorded paths are looked up under DIR.
    pub symfs: Option<PathBuf>,
    /// perf's build-id cache, normally `~/.debug`.
    pub buildid_cache: Option<PathBuf>,
    /// Where decompressed debug sections are kept between runs; `None` for nowhere.
    pub dwarf_cache: Option<PathBuf>,
    /// Whether the file was recorded on this machine (its paths and vDSO are ours).
    pub recorded_here: bool,
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Locator {
    /// Opens the file at `path` as an image that keeps its decompressed debug sections in
    /// this locator's cache.
    fn open(&self, path: &Path) -> Result<Image, ImageError> {
        let mut image = Image::open_in(&*self.source, path)?;
        image.dwarf_cache = self
            .dwarf_cache
            .clone()
            .map(|dir| (dir, self.source.clone()));
        Ok(image)
    }

    fn under_symfs(&self, path: &Path) -> Option<PathBuf> {
        let symfs = self.symfs.as_ref()?;
        Some(symfs.join(path.strip_prefix("/").unwrap_or(path)))
    }

    /// Opens the image recorded at `path`, checking `build_id` when the recording has one.
    /// `root`: the root of the (running, containerized) process that mapped it
    /// ([`Source::process_root`]), under which its path is tried first.
    pub fn open_image(
        &self,
        path: &str,
        build_id: Option<&[u8]>,
        root: Option<&Path>,
    ) -> Result<Image, ImageError> {
        if path == "[vdso]" {
            return self.open_vdso(build_id);
        }
        let path = Path::new(path.strip_suffix(" (deleted)").unwrap_or(path));
        let mut candidates = Vec::new();
        if let Some(root) = root {
            candidates.push(root.join(path.strip_prefix("/").unwrap_or(path)));
        }
        if let Some(p) = self.under_symfs(path) {
            candidates.push(p);
        }
        // The recorded path itself: always without --symfs; with it, as a fallback when a
        // build id will vouch for the file or the recording was made on this machine (a
        // symfs usually holds the program, not every system library).
        if self.symfs.is_none() || build_id.is_some() || self.recorded_here {
            candidates.push(path.to_path_buf());
        }
        if let (Some(cache), Some(id)) = (&self.buildid_cache, build_id) {
            let h = hex(id);
            if h.len() > 2 {
                candidates.push(
                    cache
                        .join(".build-id")
                        .join(&h[..2])
                        .join(&h[2..])
                        .join("elf"),
                );
            }
        }
        let mut first_error = None;
        for candidate in candidates {
            match self.open(&candidate) {
                Ok(image) => match (build_id, &image.build_id) {
                    (Some(want), Some(have)) if want != have.as_slice() => {
                        first_error = Some(ImageError::BuildIdMismatch);
                    }
                    _ => return Ok(image),
                },
                Err(e) => {
                    if first_error.is_none() || e != ImageError::NotFound {
                        first_error = first_error.or(Some(e));
                    }
                }
            }
        }
        Err(first_error.unwrap_or(ImageError::NotFound))
    }

    fn open_vdso(&self, build_id: Option<&[u8]>) -> Result<Image, ImageError> {
        if let (Some(cache), Some(id)) = (&self.buildid_cache, build_id) {
            let p = cache.join("[vdso]").join(hex(id)).join("vdso");
            if let Ok(image) = self.open(&p) {
                return Ok(image);
            }
        }
        if !self.recorded_here {
            return Err(ImageError::NotFound);
        }
        let bytes = self.source.vdso().ok_or(ImageError::NotFound)?;
        let image = Image::from_bytes(PathBuf::from("[vdso]"), bytes)?;
        match (build_id, &image.build_id) {
            (Some(want), Some(have)) if want != have.as_slice() => Err(ImageError::BuildIdMismatch),
            _ => Ok(image),
        }
    }

    /// Separate debug info for `image`: by build id, then by `.gnu_debuglink` next to the
    /// binary, in its `.debug/` folder, and under `/usr/lib/debug`.
    pub fn open_debug(&self, image: &Image) -> Option<Image> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        let prefixed = |p: PathBuf| -> PathBuf { self.under_symfs(&p).unwrap_or(p) };
        if let Some(id) = &image.build_id {
            let h = hex(id);
            if h.len() > 2 {
                let rel = format!("/usr/lib/debug/.build-id/{}/{}.debug", &h[..2], &h[2..]);
                candidates.push(prefixed(PathBuf::from(&rel)));
                if self.symfs.is_some() {
                    candidates.push(PathBuf::from(rel));
                }
                if let Some(cache) = &self.buildid_cache {
                    candidates.push(
                        cache
                            .join(".build-id")
                            .join(&h[..2])
                            .join(&h[2..])
                            .join("debug"),
                    );
                }
            }
        }
        if let Some((name, _)) = &image.debuglink {
            let name = String::from_utf8_lossy(name).to_string();
            if let Some(dir) = image.path.parent() {
                candidates.push(dir.join(&name));
                candidates.push(dir.join(".debug").join(&name));
                let rel = dir.strip_prefix("/").unwrap_or(dir);
                candidates.push(Path::new("/usr/lib/debug").join(rel).join(&name));
            }
        }
        for candidate in candidates {
            if candidate == image.path {
                continue;
            }
            let Ok(debug) = self.open(&candidate) else {
                continue;
            };
            if !debug.has_dwarf {
                continue;
            }
            let same_build =
                matches!((&image.build_id, &debug.build_id), (Some(a), Some(b)) if a == b);
            // The CRC reads the whole file: only when the build ids do not settle it, and its
            // pages released after (megabytes of sections that naming never reads).
            let crc_ok = !same_build
                && image.debuglink.as_ref().is_some_and(|(_, crc)| {
                    let ok = crc32fast::hash(debug.bytes()) == *crc;
                    debug.release_pages();
                    ok
                });
            let unverifiable = image.build_id.is_none() || debug.build_id.is_none();
            if same_build || crc_ok || (unverifiable && image.debuglink.is_none()) {
                return Some(debug);
            }
        }
        None
    }
}
