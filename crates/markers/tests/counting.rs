//! Real counting with software events (this machine has no hardware PMU): page faults,
//! task-clock and context switches of the calling thread, around real regions.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use cpiflame_markers::{Error, Markers, Options, ReadPath, Reading, SOFTWARE_EVENTS};

/// The software events, or None (test skipped, reason printed; a failure under CI=true)
/// where perf_event_open of software events does not work.
fn software(opts: Options) -> Option<Markers> {
    match Markers::with_options(SOFTWARE_EVENTS, opts) {
        Ok(m) => Some(m),
        Err(e) => {
            cpiflame_testkit::unavailable(format!("software events do not open here: {e}"));
            None
        }
    }
}

/// `n` fresh anonymous pages, without transparent huge pages (one fault per page).
struct Pages {
    ptr: *mut u8,
    len: usize,
    page: usize,
}

impl Pages {
    fn new(n: usize) -> Pages {
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = n * page;
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(ptr, libc::MAP_FAILED, "mmap of {n} pages");
        unsafe { libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE) };
        Pages {
            ptr: ptr as *mut u8,
            len,
            page,
        }
    }

    /// Writes one byte in every page: one page fault each.
    fn touch(&self) {
        for off in (0..self.len).step_by(self.page) {
            unsafe { std::ptr::write_volatile(self.ptr.add(off), 1) };
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

fn idx(m: &Markers, event: &str) -> usize {
    m.events().iter().position(|e| e == event).unwrap()
}

#[test]
fn counts_are_monotonic_and_regions_add_up() {
    let Some(mut m) = software(Options::default()) else {
        return;
    };
    assert_eq!(m.read_path(), ReadPath::GroupRead);
    let tc = idx(&m, "task-clock");
    let step = m.register("step");
    let before = m.read_now().unwrap();
    let mut prev: Vec<Reading> = before.clone();
    for _ in 0..50 {
        m.start(step);
        spin(Duration::from_micros(200));
        m.stop(step);
        let now = m.read_now().unwrap();
        for (a, b) in prev.iter().zip(&now) {
            assert!(b.value >= a.value, "{a:?} -> {b:?}");
            assert!(b.time_enabled >= a.time_enabled && b.time_running >= a.time_running);
        }
        assert!(now[tc].value > prev[tc].value, "task-clock advances");
        prev = now;
    }
    let after = m.read_now().unwrap();
    let s = m.region_stats("step").unwrap();
    assert_eq!(s.samples(), 50);
    let t = s.metric("task-clock").unwrap().summary();
    let in_regions = t.mean().unwrap() * t.count() as f64;
    let total = (after[tc].value - before[tc].value) as f64;
    assert!(
        in_regions <= total && in_regions >= 0.6 * total,
        "task-clock in regions {in_regions} of {total} ns"
    );
    let ns = s.metric("ns").unwrap().summary();
    assert!(ns.min().unwrap() >= 200_000.0);
}

#[test]
fn page_faults_of_fresh_pages() {
    let Some(mut m) = software(Options::default()) else {
        return;
    };
    const N: usize = 256;
    let id = m.register("touch");
    for _ in 0..5 {
        let pages = Pages::new(N);
        m.start(id);
        pages.touch();
        m.stop(id);
    }
    let pf = m
        .region_stats("touch")
        .unwrap()
        .metric("page-faults")
        .unwrap();
    let s = pf.summary();
    eprintln!(
        "page-faults per region touching {N} pages: min {:?} max {:?}",
        s.min(),
        s.max()
    );
    assert_eq!(s.count(), 5);
    assert!(s.min().unwrap() >= N as f64);
    assert!(s.max().unwrap() <= N as f64 + 16.0, "close to N");
    assert_eq!(pf.not_counted(), 0);
    assert_eq!(pf.scaled(), 0, "software events are never multiplexed");
}

/// Every member counts from the first region on: a group whose members joined a leader
/// that was already counting missed them until the next context switch (Linux 6.18).
#[test]
fn fresh_groups_count_every_member_at_once() {
    for _ in 0..20 {
        let Some(mut m) = software(Options::default()) else {
            return;
        };
        let pages = Pages::new(32);
        m.start("touch");
        pages.touch();
        m.stop("touch");
        let pf = m
            .region_stats("touch")
            .unwrap()
            .metric("page-faults")
            .unwrap();
        assert!(pf.summary().min().unwrap() >= 32.0, "{:?}", pf.summary());
    }
}

#[test]
fn per_event_reads_when_not_grouped() {
    let Some(mut m) = software(Options {
        group: false,
        ..Options::default()
    }) else {
        return;
    };
    assert_eq!(m.read_path(), ReadPath::PerEventRead);
    let pages = Pages::new(64);
    m.start("touch");
    pages.touch();
    m.stop("touch");
    let s = m.region_stats("touch").unwrap();
    let pf = s.metric("page-faults").unwrap().summary();
    assert!(pf.min().unwrap() >= 64.0 && pf.max().unwrap() <= 80.0);
}

#[test]
fn task_clock_of_a_spin_is_within_the_wall_clock() {
    let Some(mut m) = software(Options::default()) else {
        return;
    };
    // One region per repetition: each has exactly one sample, so min = max = the value.
    let mut mostly_on_cpu = 0;
    for i in 0..10 {
        let name = format!("spin{i}");
        m.start(name.as_str());
        spin(Duration::from_millis(2));
        m.stop(name.as_str());
        let s = m.region_stats(&name).unwrap();
        let ns = s.metric("ns").unwrap().summary().max().unwrap();
        let task = s.metric("task-clock").unwrap().summary().max().unwrap();
        eprintln!("spin {i}: wall {ns} ns, task-clock {task} ns");
        assert!((2e6..2e8).contains(&ns), "wall {ns}");
        // The counters are read just outside the clock reads: a few µs more at most.
        assert!(task <= ns + 100_000.0, "task-clock {task} > wall {ns}");
        if task >= 0.8 * ns {
            mostly_on_cpu += 1;
        }
    }
    // Tests run in parallel on few CPUs: allow some preempted spins.
    assert!(
        mostly_on_cpu >= 5,
        "only {mostly_on_cpu} of 10 spins ran 80% on CPU"
    );
}

#[test]
fn counts_belong_to_their_thread() {
    if software(Options::default()).is_none() {
        return;
    }
    const N: usize = 1000;
    let barrier = Arc::new(Barrier::new(2));
    let spawn = |faults: bool| {
        let barrier = Arc::clone(&barrier);
        std::thread::spawn(move || {
            let mut m = Markers::new(SOFTWARE_EVENTS).unwrap();
            let id = m.register("work");
            let pages = Pages::new(N);
            barrier.wait();
            m.start(id);
            if faults {
                pages.touch();
            } else {
                spin(Duration::from_millis(3));
            }
            m.stop(id);
            m.stats().clone()
        })
    };
    let (a, b) = (spawn(true), spawn(false));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    let faults = |s: &cpiflame_markers::Stats| {
        s.region("work")
            .unwrap()
            .metric("page-faults")
            .unwrap()
            .summary()
            .max()
            .unwrap()
    };
    eprintln!(
        "page faults: faulting thread {}, other {}",
        faults(&a),
        faults(&b)
    );
    assert!(faults(&a) >= N as f64 && faults(&a) <= N as f64 + 50.0);
    assert!(
        faults(&b) <= 20.0,
        "the other thread's faults are not counted here"
    );
    // Per-thread statistics add up.
    let mut all = a.clone();
    all.merge(&b).unwrap();
    let w = all.region("work").unwrap();
    assert_eq!(w.samples(), 2);
    assert_eq!(
        w.metric("page-faults").unwrap().summary().max(),
        Some(faults(&a))
    );
}

#[test]
fn laps_measure_back_to_back_regions_with_one_read_each() {
    let Some(mut m) = software(Options::default()) else {
        return;
    };
    let id = m.register("lap");
    let sizes = [8usize, 16, 32, 64];
    let pages: Vec<Pages> = sizes.iter().map(|&n| Pages::new(n)).collect();
    for p in &pages {
        m.lap(id);
        p.touch();
    }
    m.stop(id);
    let s = m.region_stats("lap").unwrap();
    assert_eq!(s.samples(), 4);
    let pf = s.metric("page-faults").unwrap();
    // A lap's window also holds the previous region's bookkeeping (its statistics may grow
    // the heap by a page now and then), so allow a fault or two over the pages touched.
    let within = |v: Option<f64>, want: f64| v.is_some_and(|v| v >= want && v <= want + 2.0);
    assert!(within(pf.summary().min(), 8.0), "{:?}", pf.summary().min());
    assert!(within(pf.summary().max(), 64.0), "{:?}", pf.summary().max());
    assert!(
        within(pf.summary().mean(), 30.0),
        "{:?}",
        pf.summary().mean()
    );
    assert_eq!(s.unmatched_stops(), 0);
}

#[test]
fn guards_names_and_misuse() {
    let Some(mut m) = software(Options::default()) else {
        return;
    };
    {
        let mut outer = m.region("outer");
        for _ in 0..3 {
            let _inner = outer.region("inner");
        }
    }
    m.stop("outer"); // not started: ignored, counted
    let r = m.register("restarted");
    m.start(r);
    m.start(r);
    m.stop(r);
    let s = m.stats();
    assert_eq!(s.region("outer").unwrap().samples(), 1);
    assert_eq!(s.region("outer").unwrap().unmatched_stops(), 1);
    assert_eq!(s.region("inner").unwrap().samples(), 3);
    assert_eq!(s.region("restarted").unwrap().restarts(), 1);
    assert_eq!(s.region("restarted").unwrap().samples(), 1);
    let outer_ns = s.region("outer").unwrap().metric("ns").unwrap().summary();
    let inner_ns = s.region("inner").unwrap().metric("ns").unwrap().summary();
    assert!(outer_ns.max().unwrap() >= inner_ns.max().unwrap() * 3.0);

    let report = m.report();
    let text = report.to_string();
    assert!(text.contains("region outer: 1 samples"), "{text}");
    assert!(text.contains("1 stops without a start"));
    let json = report.to_json();
    assert_eq!(json["regions"][1]["name"], "inner");
    assert_eq!(json["regions"][1]["samples"], 3);
    assert_eq!(json["read_path"], "group-read");

    m.reset();
    assert_eq!(m.stats().region("inner").unwrap().samples(), 0);
}

/// Whichever this machine is: without a PMU, asking for hardware events is one
/// `NoHardware` error naming them and pointing at software events; with one, hardware
/// events open (alone and mixed with software events) and are never reported missing.
#[test]
fn hardware_events_without_a_pmu_say_so() {
    use cpiflame_perf_data::abi::attr_type;
    use cpiflame_perf_data::write::EventAttr;
    let cycles = EventAttr {
        type_: attr_type::HARDWARE,
        config: 0,
        ..EventAttr::default()
    };
    match cpiflame_counters::sys::open(&cycles, 0, -1, None) {
        Ok(_) => {
            // This machine has hardware counters: the other side of the same behaviour.
            let mut m = Markers::new(&["cycles"]).expect("cycles opens where the raw open did");
            assert_eq!(m.events(), ["cycles"]);
            m.start("r");
            m.stop("r");
            assert_eq!(m.stats().region("r").unwrap().samples(), 1);
            Markers::new(&["task-clock", "cycles"]).expect("mixed with a software event");
            if let Err(err) = Markers::with_default_events() {
                assert!(
                    !matches!(err, Error::NoHardware { .. }),
                    "a PMU is here (cycles opens), yet: {err}"
                );
            }
        }
        // What the library takes for "no such event" (ENOENT here; ENODEV, EOPNOTSUPP).
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP)
            ) =>
        {
            let err = Markers::with_default_events().unwrap_err();
            let msg = err.to_string();
            eprintln!("{msg}");
            match &err {
                Error::NoHardware { events, .. } => {
                    assert_eq!(
                        events,
                        &["instructions", "cycles", "branches", "branch-misses"]
                    )
                }
                other => panic!("expected NoHardware, got {other:?}"),
            }
            assert!(msg.contains("task-clock"), "{msg}");
            // Mixed with software events: still named.
            let err = Markers::new(&["task-clock", "cycles"]).unwrap_err();
            assert!(err.to_string().contains("cycles"), "{err}");
        }
        Err(e) => cpiflame_testkit::unavailable(format!("cycles: {e}")),
    }
}

#[test]
fn bad_specs_are_named() {
    let err = Markers::new(&["task-clok"]).unwrap_err();
    assert!(matches!(err, Error::Spec(_)));
    let msg = err.to_string();
    assert!(
        msg.contains("task-clok") && msg.contains("task-clock"),
        "{msg}"
    );
    let empty: [&str; 0] = [];
    assert!(matches!(Markers::new(&empty), Err(Error::NoEvents)));
}
