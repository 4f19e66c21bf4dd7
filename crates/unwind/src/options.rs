//! What the caller tells the resolver: where to look for files and kernel symbols.

use std::path::PathBuf;

/// How to find files and kernel symbols.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--symfs DIR`: look up recorded paths under DIR.
    pub symfs: Option<PathBuf>,
    /// perf's build-id cache (`~/.debug`); `None` to not use one.
    pub buildid_cache: Option<PathBuf>,
    /// Where decompressed debug sections are kept between runs (`~/.cache/cpiflame`); `None`
    /// to decompress them in memory every time.
    pub dwarf_cache: Option<PathBuf>,
    /// Kernel symbol file (`--kallsyms`); defaults to `/proc/kallsyms`. When given, it names
    /// the kernel frames of files from other machines too: the user vouches for it.
    pub kallsyms: Option<PathBuf>,
    /// Treat the file as recorded on this machine even if its header says otherwise.
    pub assume_local: bool,
    /// Only unwind, never name: no debug info or kernel symbols are loaded (the recorder
    /// unwinds at record time to know how much of each stack copy to keep).
    pub unwind_only: bool,
    /// Do everything on the calling thread: no symbol tables, debug info or kernel symbols
    /// read ahead on other threads (`CPIFLAME_THREADS=1`). The result is the same either way.
    pub single_threaded: bool,
}

impl Options {
    /// Defaults for the command line: perf's build-id cache under `$HOME/.debug`, the cache of
    /// decompressed debug sections under `$CPIFLAME_CACHE_DIR`, else `$XDG_CACHE_HOME/cpiflame`,
    /// else `$HOME/.cache/cpiflame` (none when `CPIFLAME_CACHE_DIR` is set but empty), and one
    /// thread when `CPIFLAME_THREADS=1`. The only place this crate reads the environment; the
    /// resolver itself never does.
    pub fn from_env() -> Options {
        let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
        let home = var("HOME");
        let dwarf_cache = match var("CPIFLAME_CACHE_DIR") {
            Some(dir) if dir.as_os_str().is_empty() => None,
            Some(dir) => Some(dir),
            None => var("XDG_CACHE_HOME")
                .filter(|d| d.is_absolute())
                .or_else(|| home.as_ref().map(|h| h.join(".cache")))
                .map(|d| d.join("cpiflame")),
        };
        Options {
            buildid_cache: home.map(|h| h.join(".debug")),
            dwarf_cache,
            single_threaded: single_threaded_from_env(),
            ..Options::default()
        }
    }
}

/// Whether `CPIFLAME_THREADS` asks for one thread (`1`; any other value, or none, lets the
/// work spread over threads where it pays).
pub fn single_threaded_from_env() -> bool {
    std::env::var("CPIFLAME_THREADS").is_ok_and(|v| v.trim() == "1")
}
