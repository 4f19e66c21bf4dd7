//! `/proc/self/mountinfo`: what is mounted where, read by the cgroup hierarchy's lookup
//! ([`crate::cgroup::find_mount`]) and tracefs's ([`crate::tracefs`]).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Where mounts are listed.
pub const MOUNTINFO: &str = "/proc/self/mountinfo";

/// One line of mountinfo: the fields the lookups use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount<'a> {
    /// The mount point, unescaped.
    pub point: PathBuf,
    pub fstype: &'a str,
    /// The superblock's options (`rw,perf_event`).
    pub super_options: &'a str,
}

/// The mounts of `mountinfo` text, in its order; malformed lines are passed over.
pub fn mounts(mountinfo: &str) -> impl Iterator<Item = Mount<'_>> {
    mountinfo.lines().filter_map(|line| {
        // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
        let (left, right) = line.split_once(" - ")?;
        let point = left.split(' ').nth(4)?;
        let mut right = right.split(' ');
        let fstype = right.next()?;
        Some(Mount {
            point: unescape(point),
            fstype,
            super_options: right.nth(1).unwrap_or(""),
        })
    })
}

/// A mountinfo path: space, tab, newline and backslash are written as `\OOO` octal.
fn unescape(field: &str) -> PathBuf {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0')));
        match octal.and_then(|v| u8::try_from(v).ok()) {
            Some(v) => {
                out.push(v);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(OsStr::from_bytes(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_and_points_unescaped() {
        let text = "22 1 0:20 / /sys rw,nosuid - sysfs sysfs rw\n\
                    35 22 0:29 / /sys/fs/cgroup/a\\040b rw shared:9 - cgroup cgroup rw,perf_event\n\
                    not a mount line\n\
                    40 22 0:12 / /sys/kernel/tracing rw - tracefs tracefs rw\n";
        let found: Vec<Mount> = mounts(text).collect();
        assert_eq!(found.len(), 3);
        assert_eq!(found[1].point, PathBuf::from("/sys/fs/cgroup/a b"));
        assert_eq!(
            (found[1].fstype, found[1].super_options),
            ("cgroup", "rw,perf_event")
        );
        assert_eq!(found[2].fstype, "tracefs");
    }
}
