//! What this machine says about itself in `/proc` and `/sys` text: cpu lists
//! (`/sys/devices/system/cpu/online`, a PMU's `cpus`, a NUMA node's `cpulist`), the lines of
//! `/proc/PID/maps`, and the host-describing features a perf.data writer records
//! ([`Features::from_host`]).
//!
//! The one home of these parsers: the writer, `stat`, the recorder, the resolver (the vDSO)
//! and `c2c` all call them. The parsers are pure functions of the text; the few readers read
//! a file and hand it to them. This module must never write anything, open an event, or
//! panic on what the kernel or a recording hands it.

use crate::write::Features;

/// The ranges of a cpu list as the kernel prints it (`0-3,8,10-11`; `lib/bitmap.c`'s
/// `bitmap_print_to_pagebuf`), in order: `Some((first, last))` per element (`8` is
/// `(8, 8)`), `None` for an element that is neither a number nor two numbers joined by `-`.
///
/// Empty elements (a blank file, a trailing newline or comma) are skipped; spaces around
/// the numbers are allowed; a range whose last cpu is below its first is returned as is,
/// for the caller to refuse or skip.
pub fn cpu_list_ranges(list: &str) -> impl Iterator<Item = Option<(u32, u32)>> + '_ {
    list.split(',')
        .filter(|r| !r.trim().is_empty())
        .map(|r| match r.split_once('-') {
            Some((lo, hi)) => Some((lo.trim().parse().ok()?, hi.trim().parse().ok()?)),
            None => {
                let v = r.trim().parse().ok()?;
                Some((v, v))
            }
        })
}

/// The highest cpu in a cpu list such as "0-3,8" (0 for an empty list); `None` if any
/// element does not parse.
pub fn cpu_list_max(list: &str) -> Option<u32> {
    cpu_list_ranges(list).try_fold(0u32, |acc, r| Some(acc.max(r?.1)))
}

/// The number of cpus in a cpu list such as "0-3,8"; `None` if any element does not parse
/// or runs backwards, or the count overflows.
pub fn cpu_list_count(list: &str) -> Option<u32> {
    let mut n = 0u32;
    for r in cpu_list_ranges(list) {
        let (lo, hi) = r?;
        n = n.checked_add(hi.checked_sub(lo)?.checked_add(1)?)?;
    }
    Some(n)
}

/// Online CPUs, from `/sys/devices/system/cpu/online` (`0-3,5`); elements that do not parse
/// are skipped. Every CPU up to the available parallelism when the file cannot be read or
/// names none.
pub fn online_cpus() -> Vec<i32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus: Vec<i32> = cpu_list_ranges(text.trim())
        .flatten()
        .flat_map(|(a, b)| a..=b)
        .filter_map(|cpu| i32::try_from(cpu).ok())
        .collect();
    if cpus.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        cpus.extend(0..n as i32);
    }
    cpus
}

/// One line of `/proc/PID/maps` (`proc(5)`), borrowed from the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapsEntry<'a> {
    /// First address of the mapping.
    pub start: u64,
    /// First address past the mapping.
    pub end: u64,
    /// The permissions as printed: `r-xp`, `rw-s`, ...
    pub perms: &'a str,
    /// Offset of the mapping in its file.
    pub offset: u64,
    /// Major device number of the file.
    pub maj: u32,
    /// Minor device number of the file.
    pub min: u32,
    /// Inode of the file (0 for anonymous mappings).
    pub inode: u64,
    /// The file's path, or a pseudo-path such as `[vdso]` or `[heap]`; empty for anonymous
    /// mappings. Spaces inside the path are kept (and a ` (deleted)` suffix, as printed).
    pub path: &'a str,
}

impl MapsEntry<'_> {
    /// Whether the mapping is executable.
    pub fn executable(&self) -> bool {
        self.perms.contains('x')
    }
}

/// The lines of `/proc/PID/maps` text, in order; lines that do not parse are skipped.
pub fn parse_maps(text: &str) -> impl Iterator<Item = MapsEntry<'_>> {
    text.lines().filter_map(|line| {
        // The path is the rest of the line after the fifth field, padded with spaces.
        let mut f = line.splitn(6, ' ');
        let (range, perms, offset, dev, inode) =
            (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
        let path = f.next().unwrap_or("").trim();
        let (start, end) = range.split_once('-')?;
        let (maj, min) = dev.split_once(':')?;
        Some(MapsEntry {
            start: u64::from_str_radix(start, 16).ok()?,
            end: u64::from_str_radix(end, 16).ok()?,
            perms,
            offset: u64::from_str_radix(offset, 16).ok()?,
            maj: u32::from_str_radix(maj, 16).ok()?,
            min: u32::from_str_radix(min, 16).ok()?,
            inode: inode.parse().ok()?,
            path,
        })
    })
}

impl Features {
    /// The host-describing features as perf would record them on this machine: hostname and
    /// os release (from `/proc/sys/kernel`), arch, cpu counts (from `/sys/devices/system/cpu`),
    /// cpu description and, on x86, cpuid (from `/proc/cpuinfo`), total memory (from
    /// `/proc/meminfo`), plus the given command line. Whatever cannot be read is left `None`.
    pub fn from_host(cmdline: Vec<String>) -> Features {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let line = |path: &str| read(path).map(|s| s.trim().to_string());
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        let cpuinfo_field = |key: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.split_whitespace().collect::<Vec<_>>().join(" "))
            })
        };
        let cpuid = if cfg!(any(target_arch = "x86_64", target_arch = "x86")) {
            match (
                cpuinfo_field("vendor_id"),
                cpuinfo_field("cpu family"),
                cpuinfo_field("model"),
                cpuinfo_field("stepping"),
            ) {
                (Some(v), Some(f), Some(m), Some(s)) => Some(format!("{v},{f},{m},{s}")),
                _ => None,
            }
        } else {
            None
        };
        let present = line("/sys/devices/system/cpu/present").and_then(|s| cpu_list_max(&s));
        let online = line("/sys/devices/system/cpu/online").and_then(|s| cpu_list_count(&s));
        let nr_cpus = match (present, online) {
            (Some(max), Some(online)) => Some((max + 1, online)),
            _ => None,
        };
        let total_mem_kb = read("/proc/meminfo").and_then(|m| {
            m.lines().find_map(|l| {
                l.strip_prefix("MemTotal:")?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
        });
        Features {
            hostname: line("/proc/sys/kernel/hostname"),
            os_release: line("/proc/sys/kernel/osrelease"),
            perf_version: None,
            arch: Some(std::env::consts::ARCH.to_string()),
            nr_cpus,
            cpu_desc: cpuinfo_field("model name"),
            cpuid,
            total_mem_kb,
            cmdline,
            build_ids: Vec::new(),
            sample_time: None,
            compression: None,
            groups: Vec::new(),
            numa_nodes: Vec::new(),
            tracing_data: None,
            clockid_res_ns: None,
            clock_data: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list_max("0-3,8"), Some(8));
        assert_eq!(cpu_list_count("0-3,8"), Some(5));
        assert_eq!(cpu_list_count("0"), Some(1));
        assert_eq!(cpu_list_count("3-1"), None);
        assert_eq!(cpu_list_count(""), Some(0));
        assert_eq!(cpu_list_max("0-3,x"), None);
        assert_eq!(cpu_list_count("0-4294967295"), None);
    }

    #[test]
    fn cpu_list_ranges_keep_order_and_mark_what_does_not_parse() {
        let r: Vec<_> = cpu_list_ranges("0-3,8,10-11\n").collect();
        assert_eq!(r, [Some((0, 3)), Some((8, 8)), Some((10, 11))]);
        let r: Vec<_> = cpu_list_ranges(" 1 - 2 ,,x,5-,3-1").collect();
        assert_eq!(r, [Some((1, 2)), None, None, Some((3, 1))]);
        assert_eq!(cpu_list_ranges("").count(), 0);
    }

    #[test]
    fn online_cpus_names_at_least_one() {
        let cpus = online_cpus();
        assert!(!cpus.is_empty());
        assert!(cpus.iter().all(|&c| c >= 0));
    }

    #[test]
    fn maps_lines_parse_with_paths_with_spaces_and_without_paths() {
        let text = "\
55d0c0a00000-55d0c0a28000 r--p 00000000 08:01 1311 /usr/bin/cat
55d0c0a28000-55d0c0a6d000 r-xp 00028000 fd:1a 1311                       /opt/my app/bin (deleted)
7ffd5e1f2000-7ffd5e213000 rw-p 00000000 00:00 0                          [stack]
7ffd5e3f0000-7ffd5e3f2000 r-xp 00000000 00:00 0                          [vdso]
7f0000000000-7f0000001000 ---p 00000000 00:00 0
not a maps line
";
        let m: Vec<_> = parse_maps(text).collect();
        assert_eq!(m.len(), 5);
        assert_eq!(
            m[1],
            MapsEntry {
                start: 0x55d0c0a28000,
                end: 0x55d0c0a6d000,
                perms: "r-xp",
                offset: 0x28000,
                maj: 0xfd,
                min: 0x1a,
                inode: 1311,
                path: "/opt/my app/bin (deleted)",
            }
        );
        assert!(m[1].executable() && !m[0].executable());
        assert_eq!(m[2].path, "[stack]");
        assert_eq!(m[3].path, "[vdso]");
        assert_eq!(m[4].path, "");
    }

    #[test]
    fn this_process_maps_name_the_vdso_or_nothing() {
        let text = std::fs::read_to_string("/proc/self/maps").unwrap();
        let maps: Vec<_> = parse_maps(&text).collect();
        assert_eq!(maps.len(), text.lines().count());
        assert!(maps.iter().filter(|m| m.path == "[vdso]").count() <= 1);
    }

    #[test]
    fn host_features_read_this_machine() {
        let f = Features::from_host(vec!["cpiflame".into()]);
        assert_eq!(f.arch.as_deref(), Some(std::env::consts::ARCH));
        assert_eq!(f.cmdline, ["cpiflame"]);
        if let Some((avail, online)) = f.nr_cpus {
            assert!(online >= 1 && online <= avail, "{avail} {online}");
        }
        println!("{f:?}");
    }
}
