//! Cgroups: where the cgroup hierarchy that perf events see is mounted, `--cgroup NAME`
//! resolved in it (events of only that cgroup's tasks, PERF_FLAG_PID_CGROUP), and the
//! PERF_RECORD_CGROUP records of the cgroups that exist when recording starts, so the ids
//! samples carry (PERF_SAMPLE_CGROUP) have paths, as `perf record --all-cgroups` writes them.
//!
//! The hierarchy is perf's (`cgroupfs_find_mountpoint`): a cgroup v1 mount with the
//! `perf_event` controller when there is one, else the cgroup v2 mount (`/sys/fs/cgroup` on a
//! pure v2 machine, `/sys/fs/cgroup/unified` on a hybrid one). A cgroup's id is its kernfs
//! node id, which `name_to_handle_at` hands out as the directory's 8-byte file handle (what
//! perf's `perf_event__synthesize_cgroups` reads, and what the kernel puts in samples).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use cpiflame_perf_data::write::{cgroup_record, EventAttr, SampleId};

use crate::RecordOptions;

use crate::mounts::mounts;
pub use crate::mounts::MOUNTINFO;

/// The mounted cgroup hierarchy perf events use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub path: PathBuf,
    /// A cgroup v1 hierarchy with the perf_event controller (else cgroup v2).
    pub v1: bool,
}

impl Mount {
    /// What the mount is, for messages.
    pub fn describe(&self) -> String {
        let kind = if self.v1 {
            "the cgroup v1 perf_event hierarchy"
        } else {
            "the cgroup v2 mount"
        };
        format!("{kind} {}, from {MOUNTINFO}", self.path.display())
    }
}

/// The hierarchy in `/proc/self/mountinfo` text: the first cgroup v1 mount with the
/// perf_event controller, else the first cgroup v2 mount.
pub fn find_mount(mountinfo: &str) -> Option<Mount> {
    let mut v2 = None;
    for m in mounts(mountinfo) {
        match m.fstype {
            "cgroup" if m.super_options.split(',').any(|o| o == "perf_event") => {
                return Some(Mount {
                    path: m.point,
                    v1: true,
                });
            }
            "cgroup2" if v2.is_none() => v2 = Some(m.point),
            _ => {}
        }
    }
    v2.map(|path| Mount { path, v1: false })
}

/// The directory of `--cgroup NAME` (NAME relative to the hierarchy of `mountinfo`, as perf
/// takes it). Checked here, before anything is opened; the error is the one line to show.
/// One name for every event: perf's list matched to events one by one (`-G a,b`) is refused.
pub fn resolve(name: &str, mountinfo: Option<&str>) -> Result<PathBuf, String> {
    if name.contains(',') {
        return Err(format!(
            "--cgroup {name}: one cgroup for all events (perf's list of one cgroup per event is not supported)"
        ));
    }
    let relative = Path::new(name.trim_start_matches('/'));
    if name.is_empty() || relative.components().any(|c| c.as_os_str() == "..") {
        return Err(format!(
            "--cgroup {name:?}: expected a cgroup path relative to the cgroup hierarchy (e.g. system.slice/app)"
        ));
    }
    let mount = mountinfo.and_then(find_mount).ok_or_else(|| {
        format!(
            "--cgroup {name}: no cgroup v2 mount nor cgroup v1 perf_event hierarchy in {MOUNTINFO}"
        )
    })?;
    let dir = mount.path.join(relative);
    if !dir.is_dir() {
        return Err(format!(
            "--cgroup {name}: no such cgroup: {} is not a directory (looked in {})",
            dir.display(),
            mount.describe()
        ));
    }
    Ok(dir)
}

/// The kernel's id of the cgroup at directory `path`: its kernfs node id, the 8 bytes of
/// the file handle `name_to_handle_at` gives.
pub fn cgroup_id(path: &Path) -> io::Result<u64> {
    let c_path = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // struct file_handle { u32 handle_bytes; i32 handle_type; u8 f_handle[]; } with room
    // for 8 bytes of handle, u64-aligned.
    let mut buf = [0u64; 3];
    buf[0] = 8; // handle_bytes (the low half on little-endian, the high one on big)
    let handle = buf.as_mut_ptr().cast::<libc::file_handle>();
    // SAFETY: `handle` points at 24 writable bytes, a file_handle header and 8 bytes of
    // handle, as handle_bytes says.
    unsafe {
        (*handle).handle_bytes = 8;
        (*handle).handle_type = 0;
        let mut mount_id = 0;
        if libc::name_to_handle_at(libc::AT_FDCWD, c_path.as_ptr(), handle, &mut mount_id, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if (*handle).handle_bytes != 8 {
            return Err(io::Error::other("not an 8-byte cgroup file handle"));
        }
    }
    Ok(buf[1])
}

/// Most cgroups written: a machine with more is not walked further (each costs a record).
const MAX_CGROUPS: usize = 100_000;

/// PERF_RECORD_CGROUP records for every cgroup under `mount` (its root as `/`), parents
/// before children, as perf synthesizes them. Cgroups that vanish during the walk are
/// skipped.
pub fn synthesize(mount: &Path, attr: &EventAttr) -> Vec<Vec<u8>> {
    let sample_id = SampleId {
        pid: -1,
        tid: 0,
        id: attr.ids.first().copied().unwrap_or(0),
        stream_id: attr.ids.first().copied().unwrap_or(0),
        ..SampleId::default()
    };
    let mut records = Vec::new();
    let mut pending = vec![mount.to_path_buf()];
    while let Some(dir) = pending.pop() {
        if records.len() >= MAX_CGROUPS {
            break;
        }
        let Ok(id) = cgroup_id(&dir) else { continue };
        let relative = dir.strip_prefix(mount).unwrap_or(&dir);
        let path = format!("/{}", relative.to_string_lossy());
        if let Ok(record) = cgroup_record(attr, id, &path, &sample_id) {
            records.push(record);
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut children: Vec<PathBuf> = entries
            .filter_map(|e| {
                let e = e.ok()?;
                e.file_type().ok()?.is_dir().then(|| e.path())
            })
            .collect();
        // Popped in name order.
        children.sort_unstable_by(|a, b| b.cmp(a));
        pending.extend(children);
    }
    records
}

/// The options to retry with when the kernel refuses `options`' events, in order, each with
/// the line that says what it leaves out: without namespaces (`attr.namespaces` needs
/// CAP_PERFMON or root), without cgroup ids (PERF_SAMPLE_CGROUP is Linux 5.7's), without
/// both. Empty when there is nothing to leave out.
pub(crate) fn without_extras(options: &RecordOptions) -> Vec<(RecordOptions, String)> {
    let namespaces = "namespaces not recorded: the kernel refused attr.namespaces (it needs CAP_PERFMON or root)";
    let cgroups = "cgroup ids not recorded: the kernel refused PERF_SAMPLE_CGROUP (Linux 5.7 and later have it)";
    let (has_ns, has_cg) = (options.namespaces, options.cgroup_mount.is_some());
    let mut out = Vec::new();
    let mut with = |ns: bool, cg: bool, line: String| {
        let o = RecordOptions {
            namespaces: ns,
            cgroup_mount: options.cgroup_mount.clone().filter(|_| cg),
            ..options.clone()
        };
        out.push((o, line));
    };
    if has_ns {
        with(false, has_cg, namespaces.into());
    }
    if has_cg {
        with(has_ns, false, cgroups.into());
    }
    if has_ns && has_cg {
        with(false, false, format!("{namespaces}; {cgroups}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    /// perf's order: a v1 perf_event hierarchy wins over cgroup2 wherever it is listed;
    /// without one, the first cgroup2 mount; mount points are unescaped.
    #[test]
    fn the_mount_perf_uses() {
        let v2 = |p: &str| Mount {
            path: p.into(),
            v1: false,
        };
        assert_eq!(find_mount(HYBRID), Some(v2("/sys/fs/cgroup/unified")));
        let pure =
            "30 23 0:27 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n\
                    99 30 0:50 / /mnt/other cgroup2 rw - cgroup2 cgroup2 rw\n";
        assert_eq!(find_mount(pure), Some(v2("/sys/fs/cgroup")));
        let v1 = format!(
            "{HYBRID}50 31 0:40 / /sys/fs/cgroup/perf\\040event rw - cgroup cgroup rw,cpuset,perf_event\n"
        );
        assert_eq!(
            find_mount(&v1),
            Some(Mount {
                path: "/sys/fs/cgroup/perf event".into(),
                v1: true
            })
        );
        assert_eq!(
            find_mount("31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"),
            None
        );
        assert_eq!(find_mount("garbage\n\n1 2 3\n"), None);
    }

    /// Bad names are refused before the mount is looked at, each in one line naming the
    /// flag; a missing cgroup names where it was looked for.
    #[test]
    fn bad_names_are_one_line_each() {
        let mount = Some(HYBRID);
        for (name, want) in [
            ("a,b", "one cgroup for all events"),
            ("", "relative to the cgroup hierarchy"),
            ("../etc", "relative to the cgroup hierarchy"),
            (
                "cpiflame-no-such-cgroup",
                "/sys/fs/cgroup/unified/cpiflame-no-such-cgroup is not a directory (looked in the cgroup v2 mount /sys/fs/cgroup/unified, from /proc/self/mountinfo)",
            ),
        ] {
            let e = resolve(name, mount).unwrap_err();
            assert!(e.starts_with("--cgroup "), "{e}");
            assert!(e.contains(want), "{name}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = resolve("x", Some("")).unwrap_err();
        assert!(e.contains("no cgroup v2 mount"), "{e}");
    }

    /// The root cgroup's id is its directory's inode number on cgroup2 (kernfs ids are the
    /// inode numbers on 64-bit machines): the same fact the kernel reports two ways.
    #[test]
    fn cgroup_ids_are_kernfs_inode_numbers() {
        use std::os::unix::fs::MetadataExt;
        let Some(mount) = std::fs::read_to_string(MOUNTINFO)
            .ok()
            .and_then(|t| find_mount(&t))
            .filter(|m| !m.v1)
        else {
            return cpiflame_testkit::unavailable("no cgroup v2 mount");
        };
        let id = cgroup_id(&mount.path).unwrap();
        assert_eq!(id, std::fs::metadata(&mount.path).unwrap().ino());
        let records = synthesize(&mount.path, &EventAttr::default());
        assert!(!records.is_empty());
        // The root first, as `/`: id then the path.
        assert_eq!(&records[0][8..16], &id.to_ne_bytes());
        assert_eq!(&records[0][16..18], b"/\0");
    }

    /// The retries leave out one thing at a time, namespaces first, then both; each says
    /// in one line what it left out.
    #[test]
    fn retries_leave_out_one_thing_at_a_time() {
        let options = |namespaces, mount: Option<&str>| RecordOptions {
            namespaces,
            cgroup_mount: mount.map(PathBuf::from),
            ..crate::open::probe_options()
        };
        let got = |o: &RecordOptions| -> Vec<(bool, bool, String)> {
            without_extras(o)
                .into_iter()
                .map(|(o, line)| (o.namespaces, o.cgroup_mount.is_some(), line))
                .collect()
        };
        assert!(got(&options(false, None)).is_empty());
        let both = got(&options(true, Some("/sys/fs/cgroup")));
        let shape: Vec<(bool, bool)> = both.iter().map(|(n, c, _)| (*n, *c)).collect();
        assert_eq!(shape, [(false, true), (true, false), (false, false)]);
        assert!(
            both[0].2.starts_with("namespaces not recorded"),
            "{}",
            both[0].2
        );
        assert!(
            both[1].2.starts_with("cgroup ids not recorded"),
            "{}",
            both[1].2
        );
        assert!(both[2].2.contains("namespaces") && both[2].2.contains("cgroup ids"));
        assert!(both.iter().all(|(_, _, l)| !l.contains('\n')));
        let only = got(&options(false, Some("/sys/fs/cgroup")));
        assert_eq!(only.len(), 1);
        assert!(!only[0].0 && !only[0].1);
    }
}
