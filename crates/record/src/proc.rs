//! What `/proc` says about a running process, for attaching to it: its threads, and the
//! COMM and MMAP2 records the kernel would have written had we been there from its start.

use std::io;
use std::path::Path;

use cpiflame_perf_data::abi::misc;
use cpiflame_perf_data::host;
use cpiflame_perf_data::write::{
    comm_record, mmap2_record, namespaces_record, EventAttr, Mmap2, SampleId, NAMESPACE_NAMES,
};

/// Thread ids of process `pid` (`/proc/PID/task`).
pub fn threads(pid: i32) -> io::Result<Vec<i32>> {
    let mut tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map_err(|e| no_such("process", e))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    if tids.is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no threads"));
    }
    Ok(tids)
}

/// "no such process" for a pid whose /proc directory is missing, rather than the "No such
/// file or directory" of the path nobody asked about.
fn no_such(what: &str, e: io::Error) -> io::Error {
    match e.kind() {
        io::ErrorKind::NotFound => {
            io::Error::new(io::ErrorKind::NotFound, format!("no such {what}"))
        }
        _ => e,
    }
}

/// The process thread `tid` belongs to (`Tgid:` of `/proc/TID/status`).
pub fn process_of(tid: i32) -> io::Result<i32> {
    let status =
        std::fs::read_to_string(format!("/proc/{tid}/status")).map_err(|e| no_such("thread", e))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:")?.trim().parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no Tgid in its status"))
}

/// Every process in `/proc`, by pid, in order (for a system-wide recording).
pub fn processes() -> Vec<i32> {
    let mut pids: Vec<i32> = std::fs::read_dir("/proc")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

/// One executable mapping of `/proc/PID/maps`.
#[derive(Debug, PartialEq, Eq)]
pub struct MapsLine {
    pub start: u64,
    pub end: u64,
    pub prot: u32,
    pub pgoff: u64,
    pub maj: u32,
    pub min: u32,
    pub inode: u64,
    pub path: String,
}

/// The executable mappings listed in `/proc/PID/maps` text (parsed by
/// [`cpiflame_perf_data::host::parse_maps`]), with mmap's `prot` bits and perf's `//anon`
/// for mappings without a path.
pub fn parse_maps(text: &str) -> Vec<MapsLine> {
    host::parse_maps(text)
        .filter(|m| m.executable())
        .map(|m| {
            let perm = |c, bit| if m.perms.contains(c) { bit } else { 0 };
            let prot = perm('r', libc::PROT_READ) | perm('w', libc::PROT_WRITE) | libc::PROT_EXEC;
            MapsLine {
                start: m.start,
                end: m.end,
                prot: prot as u32,
                pgoff: m.offset,
                maj: m.maj,
                min: m.min,
                inode: m.inode,
                path: if m.path.is_empty() {
                    "//anon".into()
                } else {
                    m.path.to_string()
                },
            }
        })
        .collect()
}

/// COMM records for every thread and MMAP2 records for every executable mapping of `pid`.
pub fn synthesize(pid: i32, attr: &EventAttr) -> io::Result<Vec<Vec<u8>>> {
    let mut records = Vec::new();
    let sample_id = |tid| SampleId {
        pid,
        tid,
        time: 0,
        id: attr.ids.first().copied().unwrap_or(0),
        stream_id: attr.ids.first().copied().unwrap_or(0),
        cpu: 0,
    };
    for tid in threads(pid)? {
        let comm =
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).unwrap_or_default();
        records.push(
            comm_record(attr, pid, tid, comm.trim_end(), false, &sample_id(tid))
                .map_err(io::Error::other)?,
        );
    }
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    for m in parse_maps(&maps) {
        let record = Mmap2 {
            pid,
            tid: pid,
            addr: m.start,
            len: m.end - m.start,
            pgoff: m.pgoff,
            maj: m.maj,
            min: m.min,
            ino: m.inode,
            prot: m.prot,
            flags: libc::MAP_PRIVATE as u32,
            filename: m.path,
            misc: misc::USER,
            ..Mmap2::default()
        };
        records.push(mmap2_record(attr, &record, &sample_id(pid)).map_err(io::Error::other)?);
    }
    Ok(records)
}

/// PERF_RECORD_NAMESPACES for every thread of `pid`, as perf's `--namespaces` synthesizes
/// them: each namespace's (device, inode) from `/proc/PID/task/TID/ns/NAME`, (0, 0) for one
/// the kernel does not show.
pub fn namespaces(pid: i32, attr: &EventAttr) -> io::Result<Vec<Vec<u8>>> {
    use std::os::unix::fs::MetadataExt;
    let mut records = Vec::new();
    for tid in threads(pid)? {
        let ns: Vec<(u64, u64)> = NAMESPACE_NAMES
            .iter()
            .map(|name| {
                std::fs::metadata(format!("/proc/{pid}/task/{tid}/ns/{name}"))
                    .map_or((0, 0), |m| (m.dev(), m.ino()))
            })
            .collect();
        let sample_id = SampleId {
            pid,
            tid,
            id: attr.ids.first().copied().unwrap_or(0),
            stream_id: attr.ids.first().copied().unwrap_or(0),
            ..SampleId::default()
        };
        records.push(namespaces_record(attr, pid, tid, &ns, &sample_id).map_err(io::Error::other)?);
    }
    Ok(records)
}

/// The MMAP2 record perf writes for the kernel image: `[kernel.kallsyms]_text` from `_text`
/// to the top of the address space, file offset `_text` (what perf expects to relocate
/// kernel symbols). `None` when `/proc/kallsyms` hides addresses. With a build-id cache,
/// the kernel symbols just read are kept there too ([`cache_kallsyms`]).
pub fn kernel_mmap(attr: &EventAttr, buildid_cache: Option<&Path>) -> Option<Vec<u8>> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    let start = text_of(&text)?;
    if start == 0 {
        return None;
    }
    if let (Some(cache), Some(id)) = (buildid_cache, kernel_build_id()) {
        cache_kallsyms(cache, &id, &text, start);
    }
    let record = Mmap2 {
        pid: -1,
        tid: 0,
        addr: start,
        len: u64::MAX - start,
        pgoff: start,
        filename: "[kernel.kallsyms]_text".into(),
        misc: misc::KERNEL,
        ..Mmap2::default()
    };
    let sample_id = SampleId {
        pid: -1,
        tid: 0,
        time: 0,
        id: attr.ids.first().copied().unwrap_or(0),
        stream_id: attr.ids.first().copied().unwrap_or(0),
        cpu: 0,
    };
    mmap2_record(attr, &record, &sample_id).ok()
}

/// Keeps `kallsyms` (whose `_text` is at `text`, so addresses are shown) as
/// `CACHE/[kernel.kallsyms]/BUILD_ID/kallsyms`, where perf record keeps its copy and perf
/// report and `cpiflame render` look for it. A copy already there stays when its `_text` is
/// this boot's; one from another boot (KASLR moved the kernel) is replaced, else no later
/// recording could use it (readers check that the copy matches the recording). Best effort: a
/// cache that cannot be written costs only speed.
pub fn cache_kallsyms(cache: &Path, build_id: &[u8], kallsyms: &str, text: u64) {
    let id: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    let dir = cache.join("[kernel.kallsyms]").join(id);
    let path = dir.join("kallsyms");
    if std::fs::read_to_string(&path).is_ok_and(|copy| text_of(&copy) == Some(text)) {
        return;
    }
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    // Written aside and renamed: a reader never sees half a file.
    let part = dir.join(format!(".kallsyms.{}", std::process::id()));
    if std::fs::write(&part, kallsyms).is_err() || std::fs::rename(&part, &path).is_err() {
        let _ = std::fs::remove_file(&part);
    }
}

/// The address of `_text` in kallsyms text.
fn text_of(kallsyms: &str) -> Option<u64> {
    kallsyms.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let (addr, _, name) = (w.next()?, w.next()?, w.next()?);
        (name == "_text").then(|| u64::from_str_radix(addr, 16).ok())?
    })
}

/// Build id of the running kernel: the GNU build-id note of `/sys/kernel/notes` (ELF notes,
/// 4-byte aligned, in the host's byte order).
pub fn kernel_build_id() -> Option<Vec<u8>> {
    use object::elf::{FileHeader64, ELF_NOTE_GNU, NT_GNU_BUILD_ID};
    use object::read::elf::NoteIterator;
    use object::NativeEndian;
    let notes = std::fs::read("/sys/kernel/notes").ok()?;
    let mut iter = NoteIterator::<FileHeader64<NativeEndian>>::new(NativeEndian, 4, &notes).ok()?;
    while let Ok(Some(note)) = iter.next() {
        if note.name() == ELF_NOTE_GNU && note.n_type(NativeEndian) == NT_GNU_BUILD_ID {
            return Some(note.desc().to_vec());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_executable_mappings_only() {
        let maps = "55d0c0000000-55d0c0001000 r--p 00000000 fd:01 1234 /usr/bin/app\n\
                    55d0c0001000-55d0c0005000 r-xp 00001000 fd:01 1234 /usr/bin/app\n\
                    7f0000000000-7f0000001000 rwxp 00000000 00:00 0 \n\
                    7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]\n";
        let m = parse_maps(maps);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].start, 0x55d0c0001000);
        assert_eq!(m[0].pgoff, 0x1000);
        assert_eq!((m[0].maj, m[0].min, m[0].inode), (0xfd, 1, 1234));
        assert_eq!(m[0].path, "/usr/bin/app");
        assert_eq!(m[1].path, "//anon");
        assert_eq!(m[2].path, "[vdso]");
    }

    #[test]
    fn kernel_build_id_matches_the_notes_file() {
        // What perf itself reads: the desc of the GNU build-id note, 20 bytes for SHA-1.
        match (std::fs::read("/sys/kernel/notes"), kernel_build_id()) {
            (Ok(notes), Some(id)) => {
                assert!(!id.is_empty() && id.len() <= 20, "{id:x?}");
                assert!(notes.windows(id.len()).any(|w| w == id));
            }
            // Skip locally, fail under CI=true: CI's kernel must give the oracle.
            (Ok(_), None) => cpiflame_testkit::unavailable("the kernel has no build-id note"),
            (Err(e), _) => cpiflame_testkit::unavailable(format!("/sys/kernel/notes: {e}")),
        }
    }
}
