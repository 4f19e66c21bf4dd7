//! What the caller tells the resolver: where to look for files and kernel symbols. Plain
//! values: the command line's defaults (caches under `$HOME`, `CPIFLAME_THREADS`) are read
//! from the environment by `cpiflame_pipeline::options`, never here.

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
    /// The recording is being made now (the recorder's unwinder): a container's process
    /// is read through its root (`/proc/PID/root`) even when no build id can vouch for the
    /// file; reading a finished recording, only a file whose build id matches is.
    pub recording_now: bool,
    /// Where else to look for a JIT dump (`jit-PID.dump`) or perf map (`perf-PID.map`) than
    /// the path the recording gives (`--jit-dir`, the recording's own folder and the
    /// `RECORDING.jit/` folder `cpiflame record` keeps them in), in this order.
    pub jit_dirs: Vec<PathBuf>,
}
