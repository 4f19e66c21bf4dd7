//! System-wide recording (`-a`, `-C LIST`): which CPUs, and whether this user may record
//! every process on them, decided before anything is opened.

use cpiflame_perf_data::host;

/// Capability bits as the kernel numbers them (`linux/capability.h`).
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;

/// The CPUs of `-C LIST` (perf's syntax, `0,2-3`), each of which must be in `online`;
/// sorted, each once. The error is the one line to show.
pub fn parse_cpus(list: &str, online: &[i32]) -> Result<Vec<i32>, String> {
    let online_text = || {
        let v: Vec<String> = online.iter().map(i32::to_string).collect();
        v.join(",")
    };
    let mut cpus = Vec::new();
    if list.trim().is_empty() {
        return Err("-C: empty CPU list (expected e.g. 0,2-3)".into());
    }
    for range in host::cpu_list_ranges(list) {
        let (lo, hi) = range
            .filter(|(lo, hi)| lo <= hi)
            .ok_or_else(|| format!("-C {list}: not a CPU list (expected e.g. 0,2-3)"))?;
        for cpu in lo..=hi {
            let cpu = i32::try_from(cpu).unwrap_or(i32::MAX);
            if !online.contains(&cpu) {
                return Err(format!(
                    "-C {list}: CPU {cpu} is not online (online: {})",
                    online_text()
                ));
            }
            cpus.push(cpu);
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Whether events on every process of a CPU may be opened: the kernel allows them with
/// `kernel.perf_event_paranoid` at 0 or below, or with CAP_PERFMON (CAP_SYS_ADMIN counts
/// too). `paranoid` is the sysctl's value (`None`: unreadable, taken as the strictest),
/// `caps` the effective capability set. The error is the one line to show.
pub fn check_permission(paranoid: Option<i32>, caps: u64) -> Result<(), String> {
    let has = |cap: u32| caps & (1 << cap) != 0;
    if has(CAP_PERFMON) || has(CAP_SYS_ADMIN) || paranoid.is_some_and(|p| p <= 0) {
        return Ok(());
    }
    let value = paranoid.map_or("unreadable".into(), |p| p.to_string());
    Err(format!(
        "-a/-C: recording every process needs kernel.perf_event_paranoid <= 0 (it is {value}) or CAP_PERFMON (or CAP_SYS_ADMIN): run as root, `sysctl kernel.perf_event_paranoid=0`, or `setcap cap_perfmon+ep` on cpiflame"
    ))
}

/// This process's effective capabilities (`CapEff` of `/proc/self/status`); none when
/// unreadable.
pub fn effective_caps() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_as_perf_writes_them() {
        let online = [0, 1, 2, 3];
        assert_eq!(parse_cpus("0", &online).unwrap(), [0]);
        assert_eq!(parse_cpus("0,2-3", &online).unwrap(), [0, 2, 3]);
        assert_eq!(parse_cpus("3,1,1", &online).unwrap(), [1, 3]);
        let e = parse_cpus("0,7", &online).unwrap_err();
        assert_eq!(e, "-C 0,7: CPU 7 is not online (online: 0,1,2,3)");
        for bad in ["x", "1-", "3-1", "-1", ""] {
            let e = parse_cpus(bad, &online).unwrap_err();
            assert!(e.starts_with("-C"), "{bad}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    /// The kernel's rule (`perf_allow_cpu`): paranoid > 0 needs CAP_PERFMON or
    /// CAP_SYS_ADMIN.
    #[test]
    fn permission_needs_paranoid_0_or_a_capability() {
        let perfmon = 1u64 << CAP_PERFMON;
        let sys_admin = 1u64 << CAP_SYS_ADMIN;
        let other = 1u64 << 12;
        for (paranoid, caps, ok) in [
            (Some(-1), 0, true),
            (Some(0), 0, true),
            (Some(1), 0, false),
            (Some(2), other, false),
            (Some(4), perfmon, true),
            (Some(2), sys_admin, true),
            (None, 0, false),
            (None, perfmon, true),
        ] {
            let got = check_permission(paranoid, caps);
            assert_eq!(got.is_ok(), ok, "{paranoid:?} {caps:x}: {got:?}");
            if let Err(line) = got {
                assert!(line.contains("kernel.perf_event_paranoid"), "{line}");
                assert!(line.contains("CAP_PERFMON"), "{line}");
                assert!(!line.contains('\n'), "{line}");
            }
        }
        let e = check_permission(Some(2), 0).unwrap_err();
        assert!(e.contains("(it is 2)"), "{e}");
    }
}
