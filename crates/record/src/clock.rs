//! The clock of the samples' times (`record -k CLOCK`): perf's clock names, and the instant
//! read on both that clock and the wall clock that the file's CLOCK_DATA feature carries.
//!
//! `record` samples with CLOCK_MONOTONIC by default, as `perf record -k mono` does: JIT dumps
//! (`jit-PID.dump`) time their code loads with CLOCK_MONOTONIC, so loads and samples order on
//! one clock. Every event of a recording uses the same clock, so times compare between them
//! as they did on the kernel's perf clock.
//!
//! It must never change a clock or read anything but clocks.

use cpiflame_perf_data::ClockData;

/// CLOCK_MONOTONIC, the default.
pub const MONOTONIC: i32 = libc::CLOCK_MONOTONIC;

/// perf's names (`tools/perf/util/clockid.c`: its table and its short names for the lazy),
/// and the clock each is.
const NAMES: [(&str, i32); 9] = [
    ("monotonic", libc::CLOCK_MONOTONIC),
    ("monotonic_raw", libc::CLOCK_MONOTONIC_RAW),
    ("realtime", libc::CLOCK_REALTIME),
    ("boottime", libc::CLOCK_BOOTTIME),
    ("tai", libc::CLOCK_TAI),
    ("mono", libc::CLOCK_MONOTONIC),
    ("raw", libc::CLOCK_MONOTONIC_RAW),
    ("real", libc::CLOCK_REALTIME),
    ("boot", libc::CLOCK_BOOTTIME),
];

/// `-k CLOCK`'s value: one of perf's names (case aside, with or without `CLOCK_`:
/// `mono`, `CLOCK_MONOTONIC`), the number of one of those clocks, or `perf` for the kernel's
/// own perf clock (no `attr.clockid`, what perf records without `-k`); `None` for `perf`.
pub fn parse(text: &str) -> Result<Option<i32>, String> {
    let name = text.trim();
    if name.eq_ignore_ascii_case("perf") {
        return Ok(None);
    }
    let bare = match name.get(..6) {
        Some(prefix) if prefix.eq_ignore_ascii_case("clock_") => &name[6..],
        _ => name,
    };
    NAMES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(bare))
        .map(|&(_, id)| id)
        .or_else(|| {
            let id = name.parse::<i32>().ok()?;
            NAMES.iter().any(|&(_, c)| c == id).then_some(id)
        })
        .map(Some)
        .ok_or_else(|| {
            format!(
                "-k {text}: expected monotonic (mono), monotonic_raw (raw), realtime (real), \
                 boottime (boot), tai, or perf (the kernel's perf clock)"
            )
        })
}

/// perf's name of a clock (`perf report --header-only` prints it).
pub fn name(clockid: Option<i32>) -> &'static str {
    match clockid {
        None => "perf",
        Some(id) => NAMES
            .iter()
            .find(|&&(_, c)| c == id)
            .map_or("?", |(n, _)| n),
    }
}

/// Whether the kernel lets every event use the clock: CLOCK_MONOTONIC and
/// CLOCK_MONOTONIC_RAW can be read in an NMI, so hardware events take them; the others only
/// software events (the kernel's `perf_event_set_clock` refuses them with EINVAL).
pub fn nmi_safe(clockid: Option<i32>) -> bool {
    matches!(
        clockid,
        None | Some(libc::CLOCK_MONOTONIC) | Some(libc::CLOCK_MONOTONIC_RAW)
    )
}

/// What an event that would not open with a clock that is not NMI-safe adds to its error.
pub(crate) fn refused_line(clockid: Option<i32>) -> Option<String> {
    (!nmi_safe(clockid)).then(|| {
        format!(
            "-k {}: hardware events cannot time samples on it (not readable in an NMI); \
             use -k monotonic or monotonic_raw",
            name(clockid)
        )
    })
}

/// The file's CLOCKID and CLOCK_DATA: the clock's resolution in nanoseconds, and the wall
/// clock and `clockid` read at one instant, as perf record reads them when recording starts
/// (`record__init_clock`). `None` for the perf clock, as perf writes neither without `-k`.
pub fn reference(clockid: Option<i32>) -> Option<(Option<u64>, ClockData)> {
    let id = clockid?;
    let read = |clock| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec.
        (unsafe { libc::clock_gettime(clock, &mut ts) } == 0).then(|| ns(&ts))?
    };
    let wall_clock_ns = read(libc::CLOCK_REALTIME)?;
    let clockid_time_ns = read(id)?;
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes one timespec.
    let res_ns = (unsafe { libc::clock_getres(id, &mut res) } == 0)
        .then(|| ns(&res))
        .flatten()
        .filter(|&n| n > 0);
    Some((
        res_ns,
        ClockData {
            clockid: id as u32,
            wall_clock_ns,
            clockid_time_ns,
        },
    ))
}

fn ns(ts: &libc::timespec) -> Option<u64> {
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfs_names_short_names_prefix_and_numbers() {
        for (text, want) in [
            ("mono", Some(1)),
            ("monotonic", Some(1)),
            ("CLOCK_MONOTONIC", Some(1)),
            ("clock_monotonic_raw", Some(4)),
            ("raw", Some(4)),
            ("realtime", Some(0)),
            ("Real", Some(0)),
            ("boottime", Some(7)),
            ("boot", Some(7)),
            ("tai", Some(11)),
            ("1", Some(1)),
            ("0", Some(0)),
            ("perf", None),
            ("PERF", None),
        ] {
            assert_eq!(parse(text), Ok(want), "{text}");
        }
        for bad in ["", "x", "clock_", "3", "-1", "monotonic,raw", "CLOCK_perf"] {
            let e = parse(bad).unwrap_err();
            assert!(e.starts_with(&format!("-k {bad}: expected")), "{e}");
        }
        assert_eq!(name(Some(1)), "monotonic");
        assert_eq!(name(Some(4)), "monotonic_raw");
        assert_eq!(name(None), "perf");
    }

    #[test]
    fn only_monotonic_clocks_are_nmi_safe() {
        assert!(nmi_safe(Some(1)) && nmi_safe(Some(4)) && nmi_safe(None));
        for id in [0, 7, 11] {
            assert!(!nmi_safe(Some(id)));
            assert!(refused_line(Some(id)).unwrap().contains("use -k monotonic"));
        }
    }

    /// The instant read on CLOCK_MONOTONIC lies between two reads around it, and the wall
    /// clock's is now; the perf clock has none.
    #[test]
    fn the_reference_instant_is_read_on_both_clocks() {
        let now = |clock| {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            unsafe { libc::clock_gettime(clock, &mut ts) };
            ns(&ts).unwrap()
        };
        let before = (now(libc::CLOCK_MONOTONIC), now(libc::CLOCK_REALTIME));
        let (res, data) = reference(Some(MONOTONIC)).unwrap();
        let after = (now(libc::CLOCK_MONOTONIC), now(libc::CLOCK_REALTIME));
        assert_eq!(data.clockid, 1);
        assert!(
            (before.0..=after.0).contains(&data.clockid_time_ns),
            "{data:?}"
        );
        assert!(
            (before.1..=after.1).contains(&data.wall_clock_ns),
            "{data:?}"
        );
        assert!(res.is_some_and(|r| r <= 1_000_000), "{res:?}");
        assert_eq!(reference(None), None);
    }
}
