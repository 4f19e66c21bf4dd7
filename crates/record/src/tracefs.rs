//! tracefs: where the kernel's tracing files are (tracepoint ids and formats, the ring
//! buffer's headers), mounted when nothing has mounted it yet.
//!
//! A freshly booted machine may have no tracefs mounted (nothing has asked for it: no perf,
//! no debugfs automount). perf then mounts it itself at its default mount point when it needs
//! a tracepoint and may (tools/lib/api/fs: `tracefs__mount`, a plain `mount(2)` of type
//! `tracefs`); the recorder does the same, so what it records does not depend on what ran on
//! the machine before. Without the right to mount (not root, no CAP_SYS_ADMIN) the error says
//! so, and the caller says what is lost.

use std::io;
use std::path::{Path, PathBuf};

use crate::mounts::{mounts, MOUNTINFO};

/// Where tracefs is mounted when it is not, as perf mounts it.
pub const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

/// The older place: debugfs's `tracing` directory (an automount of tracefs since Linux 4.1).
const DEBUGFS_TRACING: &str = "/sys/kernel/debug/tracing";

/// A tracefs to read tracepoints from: the first one mounted ([`candidates`]) that has an
/// `events` directory, else tracefs mounted now at [`DEFAULT_MOUNT`]. `Err` is why neither,
/// in words that end a sentence ("tracefs is not mounted, and ...").
pub fn find_or_mount() -> Result<PathBuf, String> {
    let mountinfo = std::fs::read_to_string(MOUNTINFO).unwrap_or_default();
    if let Some(root) = candidates(&mountinfo)
        .into_iter()
        .find(|root| root.join("events").is_dir())
    {
        return Ok(root);
    }
    mount_at(Path::new(DEFAULT_MOUNT)).map(|()| PathBuf::from(DEFAULT_MOUNT))
}

/// Where tracefs may be found, in order: its mounts in `mountinfo`, then the two places
/// perf looks ([`DEFAULT_MOUNT`], then debugfs's automount).
pub fn candidates(mountinfo: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = mounts(mountinfo)
        .filter(|m| m.fstype == "tracefs")
        .map(|m| m.point)
        .collect();
    for place in [DEFAULT_MOUNT, DEBUGFS_TRACING] {
        if !out.iter().any(|p| p == Path::new(place)) {
            out.push(place.into());
        }
    }
    out
}

/// Mounts tracefs at `point`.
fn mount_at(point: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let fail = |why: String| {
        format!(
            "tracefs is not mounted, and mounting it at {}: {why}",
            point.display()
        )
    };
    let target =
        std::ffi::CString::new(point.as_os_str().as_bytes()).map_err(|e| fail(e.to_string()))?;
    // SAFETY: every pointer is a NUL-terminated string that outlives the call; no data.
    let rc = unsafe {
        libc::mount(
            c"tracefs".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    Err(fail(match e.raw_os_error() {
        Some(libc::EPERM) => "needs root or CAP_SYS_ADMIN".into(),
        Some(libc::ENODEV) => "this kernel has no tracefs".into(),
        Some(libc::ENOENT) => "no such directory".into(),
        _ => e.to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounted_tracefs_comes_first_then_perfs_places() {
        let text = "40 22 0:12 / /mnt/trace rw - tracefs tracefs rw\n\
                    41 22 0:13 / /sys/kernel/tracing rw - tracefs tracefs rw\n";
        assert_eq!(
            candidates(text),
            [
                PathBuf::from("/mnt/trace"),
                PathBuf::from(DEFAULT_MOUNT),
                PathBuf::from(DEBUGFS_TRACING)
            ]
        );
        assert_eq!(
            candidates(""),
            [PathBuf::from(DEFAULT_MOUNT), PathBuf::from(DEBUGFS_TRACING)]
        );
    }

    /// Where the recorder may mount (root, as CI runs), tracefs is there afterwards, whether
    /// or not it was before; where it may not, the reason says so in one line.
    #[test]
    fn tracefs_is_found_or_mounted_or_the_reason_is_given() {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        match find_or_mount() {
            Ok(at) => assert!(at.join("events/sched").is_dir(), "{}", at.display()),
            Err(why) => {
                assert!(!root, "root could not find or mount tracefs: {why}");
                assert!(
                    why.starts_with("tracefs is not mounted, and mounting it at "),
                    "{why}"
                );
                assert!(!why.contains('\n'), "{why}");
            }
        }
    }
}
