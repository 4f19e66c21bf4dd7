//! Opening a file as a process with another root sees it (a container's process, through
//! `/proc/PID/root`): the path, its symlinks' targets and its `..` are all resolved inside
//! that root, as the process itself would resolve them, by openat2(2) with
//! `RESOLVE_IN_ROOT`. Joining the root and the path instead (`/proc/PID/root/usr/bin/app`)
//! lets an absolute symlink inside (`/usr/bin/app -> /etc/shadow`, or a directory on the
//! path swapped for one after the mapping) be followed from the reader's root: a container
//! could have a root-run recorder read a host file, hash it and keep it as its own.
//!
//! It must never open anything outside the root, never follow procfs magic links inside it
//! (`/proc/self/root` of whoever resolves), and never fall back to a plain open: where the
//! kernel cannot resolve inside a root (before Linux 5.6), nothing is read through one.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// Why nothing is read through a process's root on a kernel without openat2(2).
pub const NO_OPENAT2: &str =
    "openat2(2) is not available (Linux < 5.6): a container's files are not read through its root";

/// How many times an open the kernel asks to retry (`EAGAIN`: a rename raced with a `..`
/// being resolved inside the root; `EINTR`) is tried before giving up.
const TRIES: usize = 8;

/// Opens the regular file `path` for reading as seen by a process whose root is the
/// directory `root` (`/proc/PID/root`): an absolute `path` or symlink target starts at
/// `root`, and `..` never leaves it. Anything that is not a regular file is an error (a FIFO
/// would block the open; a device would be read without end), checked on the open file.
/// Errors: `NotFound` when nothing is at `path` inside the root, `Unsupported`
/// ([`NO_OPENAT2`]) on kernels without openat2(2).
pub fn open_in_root(root: &Path, path: &Path) -> io::Result<File> {
    let dir: OwnedFd = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
        .open(root)?
        .into();
    let path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: `open_how` is three integers, all zero by default (no mode, no resolve flag).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS;
    let mut last = io::Error::from(io::ErrorKind::Interrupted);
    for _ in 0..TRIES {
        // SAFETY: `dir` is an open descriptor, `path` a NUL-terminated string and `how` an
        // `open_how` of the size passed, all alive for the call; the descriptor returned is
        // owned by no one else.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.as_raw_fd(),
                path.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd >= 0 {
            let fd = i32::try_from(fd).map_err(|_| io::Error::other("openat2: bad descriptor"))?;
            // SAFETY: a descriptor openat2 just returned, owned here only.
            let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
            if !file.metadata()?.is_file() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a regular file",
                ));
            }
            return Ok(file);
        }
        last = io::Error::last_os_error();
        match last.raw_os_error() {
            Some(libc::EAGAIN | libc::EINTR) => continue,
            Some(libc::ENOSYS) => {
                return Err(io::Error::new(io::ErrorKind::Unsupported, NO_OPENAT2))
            }
            _ => return Err(last),
        }
    }
    Err(last)
}

/// A path under a process's root, `/proc/PID/root/REST` (as [`crate::Source::process_root`]
/// joined with a recorded path), split into the root (`/proc/PID/root`) and `REST`, which
/// is to be resolved inside it ([`open_in_root`]). `None` for any other path.
pub fn under_process_root(path: &Path) -> Option<(PathBuf, &Path)> {
    let mut parts = path.components();
    let pid = match (parts.next()?, parts.next()?, parts.next()?, parts.next()?) {
        (
            Component::RootDir,
            Component::Normal(proc),
            Component::Normal(pid),
            Component::Normal(root),
        ) if proc == "proc" && root == "root" => pid
            .to_str()
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))?,
        _ => return None,
    };
    Some((PathBuf::from(format!("/proc/{pid}/root")), parts.as_path()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A directory standing for a container's root, with its own `/etc/passwd`, and a file
    /// outside it (the host's): absolute symlinks (to a file or a directory on the path),
    /// `..` in links and in the path all resolve inside, where the naive join (the oracle
    /// that the setup escapes) reads the host's file; what is outside only is not found.
    #[test]
    fn symlinks_and_dotdot_resolve_inside_the_root() {
        let dir = cpiflame_testkit::Dir::new("in-root");
        let root = dir.path("root");
        let host = dir.path("host");
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::fs::create_dir_all(root.join("usr/bin")).unwrap();
        std::fs::create_dir_all(host.join("etc")).unwrap();
        std::fs::write(root.join("etc/passwd"), "inside").unwrap();
        std::fs::write(host.join("etc/passwd"), "host").unwrap();
        std::fs::write(host.join("secret"), "host only").unwrap();
        let host_passwd = host.join("etc/passwd");
        symlink(&host_passwd, root.join("usr/bin/abs")).unwrap();
        symlink("../../../../../../etc/passwd", root.join("usr/bin/up")).unwrap();
        symlink(host.join("etc"), root.join("lib")).unwrap();
        symlink(host.join("secret"), root.join("usr/bin/app")).unwrap();
        // What `/proc/PID/root/PATH` joined would do: the host's file.
        assert_eq!(
            std::fs::read_to_string(root.join("usr/bin/abs")).unwrap(),
            "host"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("lib/passwd")).unwrap(),
            "host"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("usr/bin/app")).unwrap(),
            "host only"
        );

        let read = |p: &str| {
            let mut text = String::new();
            io::Read::read_to_string(&mut open_in_root(&root, Path::new(p))?, &mut text)?;
            Ok::<_, io::Error>(text)
        };
        // `abs` names the host's passwd by its absolute path: inside, that is
        // ROOT/HOST/etc/passwd, which does not exist.
        assert_eq!(
            read("/usr/bin/abs").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        std::fs::create_dir_all(root.join(host.strip_prefix("/").unwrap()).join("etc")).unwrap();
        std::fs::write(
            root.join(host_passwd.strip_prefix("/").unwrap()),
            "inside too",
        )
        .unwrap();
        assert_eq!(read("/usr/bin/abs").unwrap(), "inside too");
        assert_eq!(read("usr/bin/abs").unwrap(), "inside too");
        assert_eq!(read("/usr/bin/up").unwrap(), "inside");
        assert_eq!(read("/../../../etc/passwd").unwrap(), "inside");
        assert_eq!(read("/lib/passwd").unwrap(), "inside too");
        assert_eq!(read("/etc/passwd").unwrap(), "inside");
        assert_eq!(
            read("/usr/bin/app").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        // Not regular files: refused, without blocking on the FIFO.
        assert_eq!(
            read("/etc").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        let fifo = CString::new(root.join("fifo").as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert_eq!(
            read("/fifo").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn paths_under_a_process_root_are_split_at_it() {
        let split =
            |p: &str| under_process_root(Path::new(p)).map(|(r, rest)| (r, rest.to_path_buf()));
        assert_eq!(
            split("/proc/42/root/usr/bin/app"),
            Some((PathBuf::from("/proc/42/root"), PathBuf::from("usr/bin/app")))
        );
        assert_eq!(
            split("/proc/42/root/../../etc/x"),
            Some((PathBuf::from("/proc/42/root"), PathBuf::from("../../etc/x")))
        );
        assert_eq!(
            split("/proc/7/root/tmp/perf-1.map"),
            Some((
                PathBuf::from("/proc/7/root"),
                PathBuf::from("tmp/perf-1.map")
            ))
        );
        for other in [
            "/usr/bin/app",
            "/proc/self/root/etc/passwd",
            "/proc/42/cwd/x",
            "proc/42/root/x",
            "/proc/4a/root/x",
            "/proc/42",
        ] {
            assert_eq!(split(other), None, "{other}");
        }
    }
}
