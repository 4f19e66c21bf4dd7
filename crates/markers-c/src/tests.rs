//! The C entry points called from Rust, as a C program calls them (the C programs themselves
//! are in tests/c_abi.rs).

use super::*;

const EVENTS: &CStr = c"task-clock,page-faults,context-switches";

fn last_error() -> String {
    // SAFETY: the library returns a valid NUL-terminated string.
    unsafe { CStr::from_ptr(cpiflame_markers_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// A handle on the software events, or None (skip locally, failure under CI) where they do
/// not open.
fn open() -> Option<Handle> {
    let mut h = 0;
    // SAFETY: valid string and out pointer.
    let code = unsafe { cpiflame_markers_open(EVENTS.as_ptr(), &mut h) };
    if code != OK {
        cpiflame_testkit::unavailable(format!("software events do not open: {}", last_error()));
        return None;
    }
    Some(h)
}

fn report_json(h: Handle) -> serde_json::Value {
    let mut needed = 0;
    // SAFETY: NULL with size 0 asks for the size.
    let code =
        unsafe { cpiflame_markers_report(h, FORMAT_JSON, std::ptr::null_mut(), 0, &mut needed) };
    assert_eq!(code, OK, "{}", last_error());
    let mut buf = vec![0u8; needed];
    // SAFETY: buf holds `needed` bytes.
    let code = unsafe {
        cpiflame_markers_report(h, FORMAT_JSON, buf.as_mut_ptr().cast(), needed, &mut needed)
    };
    assert_eq!(code, OK, "{}", last_error());
    assert_eq!(buf.last(), Some(&0));
    serde_json::from_slice(&buf[..needed - 1]).unwrap()
}

#[test]
fn regions_by_id_and_by_name_count_like_the_rust_api() {
    let Some(h) = open() else { return };
    let mut pixel = u32::MAX;
    // SAFETY: valid strings and pointers throughout.
    unsafe {
        assert_eq!(
            cpiflame_markers_register(h, c"pixel".as_ptr(), &mut pixel),
            OK
        );
        assert_eq!(pixel, 0);
        for _ in 0..10 {
            assert_eq!(cpiflame_markers_start(h, pixel), OK);
            assert_eq!(cpiflame_markers_stop(h, pixel), OK);
        }
        assert_eq!(cpiflame_markers_start_named(h, c"setup".as_ptr()), OK);
        assert_eq!(cpiflame_markers_stop_named(h, c"setup".as_ptr()), OK);
        for _ in 0..5 {
            assert_eq!(cpiflame_markers_lap_named(h, c"row".as_ptr()), OK);
        }
        assert_eq!(cpiflame_markers_stop_named(h, c"row".as_ptr()), OK);
        let mut v = MetricValues::default();
        assert_eq!(
            cpiflame_markers_metric(h, pixel, c"task-clock".as_ptr(), &mut v),
            OK
        );
        assert_eq!((v.samples, v.count), (10, 10));
        assert!(v.total > 0 && v.mean > 0.0 && v.min <= v.max);
    }
    let j = report_json(h);
    let names: Vec<&str> = j["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["pixel", "setup", "row"]);
    assert_eq!(j["regions"][2]["samples"], 5);
    assert_eq!(cpiflame_markers_close(h), OK);
}

#[test]
fn wrong_call_sequences_are_error_codes_with_messages() {
    let Some(h) = open() else { return };
    let mut id = 0;
    // SAFETY: valid strings and pointers, or NULL where the test says so.
    unsafe {
        assert_eq!(cpiflame_markers_register(h, c"x".as_ptr(), &mut id), OK);
        // Stop without a start.
        assert_eq!(cpiflame_markers_stop(h, id), ENOTRUNNING);
        assert!(
            last_error().contains("region 'x': it is not running"),
            "{}",
            last_error()
        );
        assert_eq!(
            cpiflame_markers_stop_named(h, c"never".as_ptr()),
            ENOTRUNNING
        );
        // An id no region has.
        assert_eq!(cpiflame_markers_start(h, 7), EREGION);
        assert!(
            last_error().contains("id 7 is not a region"),
            "{}",
            last_error()
        );
        assert_eq!(cpiflame_markers_stop(h, u32::MAX), EREGION);
        // A start of a running region restarts it, as in Rust: not an error.
        assert_eq!(cpiflame_markers_start(h, id), OK);
        assert_eq!(cpiflame_markers_start(h, id), OK);
        assert_eq!(cpiflame_markers_stop(h, id), OK);
        // NULL pointers and bad text.
        assert_eq!(
            cpiflame_markers_register(h, std::ptr::null(), &mut id),
            EINVAL
        );
        assert_eq!(last_error(), "name is NULL");
        assert_eq!(
            cpiflame_markers_register(h, c"y".as_ptr(), std::ptr::null_mut()),
            EINVAL
        );
        assert_eq!(cpiflame_markers_start_named(h, c"\xff".as_ptr()), EINVAL);
        assert!(last_error().contains("not UTF-8"));
        assert_eq!(cpiflame_markers_write_report(h, 9, 2), EINVAL);
        assert!(last_error().contains("unknown report format 9"));
        // A report that does not fit: cut, NUL-terminated, ESPACE and the size needed.
        let mut small = [1 as c_char; 8];
        let mut needed = 0;
        assert_eq!(
            cpiflame_markers_report(h, FORMAT_TEXT, small.as_mut_ptr(), 8, &mut needed),
            ESPACE
        );
        assert_eq!(small[7], 0);
        assert!(needed > 8);
        // A bad descriptor.
        assert_eq!(cpiflame_markers_write_report(h, FORMAT_TEXT, -1), EIO);
        assert!(
            last_error().contains("file descriptor -1"),
            "{}",
            last_error()
        );
    }
    let j = report_json(h);
    let x = &j["regions"][0];
    assert_eq!(
        (x["unmatched_stops"].as_u64(), x["restarts"].as_u64()),
        (Some(1), Some(1))
    );
    // A closed handle, twice; handle 0; a made-up handle.
    assert_eq!(cpiflame_markers_close(h), OK);
    assert_eq!(cpiflame_markers_start(h, id), EHANDLE);
    assert!(last_error().contains("was closed"), "{}", last_error());
    assert_eq!(cpiflame_markers_close(h), EHANDLE);
    assert_eq!(cpiflame_markers_stop(0, 0), EHANDLE);
    assert_eq!(cpiflame_markers_stop(0xdead_beef_0000_0001, 0), EHANDLE);
    // The codes have names.
    // SAFETY: static strings.
    let name = unsafe { CStr::from_ptr(cpiflame_markers_strerror(ENOTRUNNING)) };
    assert!(name
        .to_str()
        .unwrap()
        .starts_with("CPIFLAME_MARKERS_ENOTRUNNING"));
}

#[test]
fn a_handle_is_used_on_its_own_thread_and_threads_are_collected() {
    let Some(h) = open() else { return };
    let other = std::thread::spawn(move || {
        let code = cpiflame_markers_start(h, 0);
        (code, last_error())
    })
    .join()
    .unwrap();
    assert_eq!(other.0, ETHREAD);
    assert!(other.1.contains("belongs to another thread"), "{}", other.1);
    // Each thread opens its own; collect adds them up by region name.
    let threads: Vec<_> = (0..3)
        .map(|_| {
            std::thread::spawn(|| {
                let Some(h) = open() else { return };
                // SAFETY: valid strings.
                unsafe {
                    for _ in 0..4 {
                        assert_eq!(cpiflame_markers_start_named(h, c"work".as_ptr()), OK);
                        assert_eq!(cpiflame_markers_stop_named(h, c"work".as_ptr()), OK);
                    }
                }
                assert_eq!(cpiflame_markers_collect(h), OK);
                assert_eq!(cpiflame_markers_close(h), OK);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut needed = 0;
    // SAFETY: the size query, then a buffer of that size.
    let text = unsafe {
        assert_eq!(
            cpiflame_markers_collected_report(FORMAT_JSON, std::ptr::null_mut(), 0, &mut needed),
            OK
        );
        let mut buf = vec![0u8; needed];
        assert_eq!(
            cpiflame_markers_collected_report(
                FORMAT_JSON,
                buf.as_mut_ptr().cast(),
                needed,
                &mut needed
            ),
            OK
        );
        buf.truncate(needed - 1);
        buf
    };
    let j: serde_json::Value = serde_json::from_slice(&text).unwrap();
    let work = j["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "work")
        .unwrap();
    // Other tests of this process may collect "work" too; these three threads gave 12.
    assert!(work["samples"].as_u64().unwrap() >= 12, "{work}");
    assert_eq!(cpiflame_markers_close(h), OK);
}

#[test]
fn events_that_do_not_open_are_an_error_code_and_message() {
    let mut h = 0;
    // SAFETY: valid strings and out pointer.
    unsafe {
        assert_eq!(
            cpiflame_markers_open(c"no-such-event".as_ptr(), &mut h),
            EOPEN
        );
        assert!(last_error().contains("no-such-event"), "{}", last_error());
        assert_eq!(cpiflame_markers_open(c"".as_ptr(), &mut h), EOPEN);
        assert_eq!(
            cpiflame_markers_open(EVENTS.as_ptr(), std::ptr::null_mut()),
            EINVAL
        );
    }
    assert_eq!(h, 0);
}

#[test]
fn a_panic_is_a_code_not_an_unwind_across_the_boundary() {
    let code = entry(|| panic!("boom"));
    assert_eq!(code, EPANIC);
    assert!(last_error().contains("boom"), "{}", last_error());
}
