//! Arbitrary bytes into every reader of cpiflame.
//!
//! The cargo-fuzz targets in `fuzz/` are one call each into this crate, and the regression
//! tests replay every input they ever crashed on (`fuzz/regressions/TARGET/`) through the
//! same functions on stable Rust, so a fixed crash stays fixed in the normal test suite.
//!
//! Each entry point must return, whatever its input, without panicking, hanging, or
//! allocating more than the input could justify. Where a reader accepts its input, the entry
//! point also checks what must then hold (a folded profile written back reads the same; a
//! trimmed sample still parses, with the same registers). Those checks panic on purpose: a
//! broken invariant is a finding like a crash.

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::OnceLock;

use cpiflame_events::{
    detect_roles, parse_cpuinfo, parse_events_with, Arch, EventRef, Formats, PmuFormat,
};
use cpiflame_perf_data::{
    parse_sample_record, parse_side_band, trim_user_stack, Endian, EventAttr, InputKind, PerfData,
};
use cpiflame_pipeline::{collapse_all, CollapseOptions, WallPlan};
use cpiflame_profile::{
    looks_like_perf_script, read_folded, read_perf_script_timed, read_perf_script_with,
    write_folded, write_folded_pair, Count, PerfScriptOptions, Profile,
};
use cpiflame_unwind::{Image, Options as ResolveOptions, Resolver, SharedBytes};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::Unwinder;

/// A whole perf.data file: header, attrs, feature sections, every record in time order,
/// unwinding and naming of every sample, then the folded profile written back and read again.
///
/// The file is read as one from another machine, with a symfs that does not exist: no binary,
/// debug file or kernel symbol table of the machine running the fuzzer is opened, so runs are
/// fast and repeatable. (Corrupt binaries are `elf_image`'s part.)
pub fn perf_data(bytes: &[u8]) {
    let _ = InputKind::detect(bytes);
    let Ok(file) = PerfData::from_bytes("fuzz.data", bytes) else {
        return;
    };
    for record in file.records_in_file_order() {
        if record.is_err() {
            break;
        }
    }
    // As a file from another machine, without build ids: no binary of this one is opened.
    let meta = cpiflame_perf_data::Meta {
        hostname: Some("cpiflame-fuzz.invalid".into()),
        os_release: Some("0.0.0-fuzz".into()),
        build_ids: Vec::new(),
        ..file.meta.clone()
    };
    let mut resolver = Resolver::new(
        &meta,
        ResolveOptions {
            symfs: Some(PathBuf::from("/nonexistent/cpiflame-fuzz/symfs")),
            buildid_cache: None,
            dwarf_cache: None,
            kallsyms: Some(PathBuf::from("/nonexistent/cpiflame-fuzz/kallsyms")),
            assume_local: false,
            unwind_only: false,
            single_threaded: false,
            recording_now: false,
            // No JIT dump or map is looked for outside the recording's own paths, which name
            // no file here (another host).
            jit_dirs: Vec::new(),
        },
    );
    // Root frames by cgroup where the samples carry cgroup ids (the CGROUP records' paths
    // looked up), else by thread: every root frame but comm-PID through the walk.
    let group_by = match cpiflame_pipeline::GroupBy::choose(
        Some(cpiflame_pipeline::GroupBy::Cgroup),
        false,
        false,
        &file,
    ) {
        Ok(g) => g,
        Err(_) => cpiflame_pipeline::GroupBy::Thread,
    };
    let options = CollapseOptions {
        group_by,
        pid: true,
        tid: false,
        kernel: true,
        lines: true,
        timed: true,
    };
    // The wall-time walk over every record, with every event's samples as on-CPU weight.
    let on_cpu = vec![true; file.attrs.len()];
    let wall = match WallPlan::of(&file, &on_cpu) {
        Ok(wall) => wall,
        Err(_) => return,
    };
    let Ok(cpiflame_pipeline::Collapsed {
        profile,
        stats,
        lines,
        timed,
    }) = collapse_all(&file, &mut resolver, options, wall.as_ref(), None)
    else {
        return;
    };
    // The source lines split the profile's stacks (those with a line somewhere): their sums
    // are at most the stacks' counts, and every line is in the table.
    let mut split: std::collections::HashMap<&[u32], Vec<Count>> = Default::default();
    let lines = lines.as_ref().expect("lines were asked for");
    for s in &lines.stacks {
        assert_eq!(s.frames.len(), s.lines.len(), "one line per frame");
        assert!(s
            .lines
            .iter()
            .all(|&l| l == cpiflame_profile::lines::NO_LINE || lines.line(l).is_some()));
        let sum = split
            .entry(&s.frames)
            .or_insert_with(|| vec![Count::default(); s.counts.len()]);
        for (a, &b) in sum.iter_mut().zip(&s.counts) {
            a.add(b);
        }
    }
    for stack in &profile.stacks {
        if let Some(sum) = split.remove(stack.frames.as_slice()) {
            for (part, whole) in sum.iter().zip(&stack.counts) {
                assert!(
                    part.samples <= whole.samples && part.period <= whole.period,
                    "lined stacks add up to more than their stack"
                );
            }
        }
    }
    assert!(split.is_empty(), "lined stacks of no stack of the profile");
    // Every sample's weights kept with its time add up, per stack, to the stack's counts in
    // the events' columns (the wall-time ones add time without a sample, too).
    let timed = timed.expect("times were asked for");
    let mut by_stack: std::collections::HashMap<&[u32], Vec<u64>> = Default::default();
    for s in &timed.timed.samples {
        let sums = by_stack
            .entry(&timed.stacks[s.stack as usize])
            .or_insert_with(|| vec![0; profile.events.len()]);
        sums[s.column as usize] = sums[s.column as usize].saturating_add(s.period);
    }
    for stack in &profile.stacks {
        let sums = by_stack.remove(stack.frames.as_slice()).unwrap_or_default();
        for (column, count) in stack.counts.iter().enumerate() {
            let timed = sums.get(column).copied().unwrap_or(0);
            if column < file.attrs.len() {
                assert_eq!(timed, count.period, "timed weights of column {column}");
            } else {
                assert!(timed <= count.period, "timed wall time over the stack's");
            }
        }
    }
    assert!(
        by_stack.values().all(|v| v.iter().all(|&p| p == 0)),
        "timed weights of a stack not in the profile"
    );
    if let Some(wall) = &wall {
        assert_eq!(
            profile.events.len(),
            file.attrs.len() + 3,
            "three wall-time columns after the events'"
        );
        // Off-CPU intervals closed by switches land on stacks in full (offcpu-time periods
        // count too, so the stats are at least the runnable part).
        let runnable = profile.total(file.attrs.len() + 1).period;
        assert!(
            runnable <= wall.stats.runnable_ns,
            "runnable time in the profile that the walk did not see: {runnable} > {}",
            wall.stats.runnable_ns
        );
    }
    // A sample carrying a group's values (PERF_SAMPLE_READ) counts once in the column of
    // every counter that moved in it, its own event's included, instead of once in its own.
    let reads = file
        .attrs
        .iter()
        .any(|a| a.sample_type & cpiflame_perf_data::abi::sample::READ != 0);
    let all: u64 = stats.samples.iter().sum();
    for (event, &samples) in stats.samples.iter().enumerate() {
        let counted = profile.total(event).samples;
        if reads {
            assert!(
                counted <= all,
                "event {event} counted in more samples than there are"
            );
        } else {
            assert_eq!(
                counted, samples,
                "every sample of event {event} is in the profile"
            );
        }
    }
    round_trip(&profile);
}

/// The tracing data of a tracepoint recording (the HEADER_TRACING_DATA feature section, or
/// PERF_RECORD_HEADER_TRACING_DATA's payload in a pipe), as the reader takes event names from
/// it. Each event it returns cost at least the 8 bytes of its format file's size, and has an
/// id and a name.
pub fn tracing_data(bytes: &[u8]) {
    let events = match cpiflame_perf_data::tracing::parse_tracing_data(bytes) {
        Ok(events) => events,
        Err(e) => {
            assert!(
                e.offset <= bytes.len() as u64,
                "error offset {} past {} bytes",
                e.offset,
                bytes.len()
            );
            return;
        }
    };
    assert!(
        events.len() <= bytes.len() / 8,
        "more events than bytes hold"
    );
    for event in &events {
        // Reading any field of any record never panics, whatever the format claims.
        for field in &event.fields {
            let _ = event.int(bytes, &field.name);
        }
        assert!(!event.name.is_empty(), "an event without a name");
        assert_eq!(
            event.full_name(),
            format!("{}:{}", event.system, event.name)
        );
    }
}

/// One record body as the kernel would hand it over, read with an attr taken from the
/// input's first bytes: PERF_RECORD_SAMPLE with any sample_type/read_format/register mask,
/// and every side-band record type.
///
/// Layout: sample_type u64, read_format u64, sample_regs_user u64, one byte (bit 0 big
/// endian, bit 1 sample_id_all), record type u32, then the record (header included).
pub fn sample_record(bytes: &[u8]) {
    if bytes.len() < 29 {
        return;
    }
    let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
    let endian = if bytes[24] & 1 != 0 {
        Endian::Big
    } else {
        Endian::Little
    };
    let attr = EventAttr {
        sample_type: word(0),
        read_format: word(1),
        sample_regs_user: word(2),
        sample_stack_user: 8192,
        flags: if bytes[24] & 2 != 0 {
            cpiflame_perf_data::attr_flags::SAMPLE_ID_ALL
        } else {
            0
        },
        ..EventAttr::default()
    };
    let rtype = u32::from_le_bytes(bytes[25..29].try_into().unwrap());
    let record = &bytes[29..];

    if let Ok(sample) = parse_sample_record(record, 0, &attr, endian) {
        let mut trimmed = Vec::new();
        if trim_user_stack(record, &attr, endian, &mut trimmed) {
            assert!(
                trimmed.len() <= record.len(),
                "trimming never grows a sample"
            );
            let again = parse_sample_record(&trimmed, 0, &attr, endian)
                .expect("a trimmed sample still parses");
            assert_eq!(again.ip, sample.ip);
            assert_eq!(again.tid, sample.tid);
            assert_eq!(again.period, sample.period);
            assert_eq!(
                again.user_regs.map(|r| r.values.iter().collect::<Vec<_>>()),
                sample
                    .user_regs
                    .map(|r| r.values.iter().collect::<Vec<_>>())
            );
        }
    }
    if record.len() >= 8 {
        let misc = u16::from_le_bytes([record[4], record[5]]);
        let _ = parse_side_band(rtype, misc, &record[8..], endian);
    }
}

/// An `-e` argument, then the same text as a /proc/cpuinfo: events parsed against the
/// formats of Intel, AMD and ARM PMUs, resolved to attr configs and given roles.
pub fn event_specs(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for line in text.lines().take(64) {
        let Ok(specs) = parse_events_with(line, formats()) else {
            continue;
        };
        let configs: Vec<_> = specs.iter().map(|s| s.kind.resolve(4)).collect();
        let refs: Vec<EventRef<'_>> = specs
            .iter()
            .zip(&configs)
            .map(|(s, c)| EventRef {
                type_: c.type_,
                config: c.config,
                name: &s.name,
            })
            .collect();
        let _ = detect_roles(&refs, Arch::X86_64);
        let _ = detect_roles(&refs, Arch::Aarch64);
    }
    let _ = parse_cpuinfo(&text);
}

fn formats() -> &'static Formats {
    static FORMATS: OnceLock<Formats> = OnceLock::new();
    FORMATS.get_or_init(|| {
        [
            ("cpu", PmuFormat::intel()),
            ("cpu_core", PmuFormat::intel()),
            ("amd_core", PmuFormat::amd()),
            ("armv8_pmuv3_0", PmuFormat::armv8()),
        ]
        .into_iter()
        .map(|(name, format)| (name.to_string(), format))
        .collect()
    })
}

/// A folded file (one or two counts a line); when it reads, it renders, and written back
/// (both forms) it reads the same. Deciding the input's kind must not panic.
pub fn folded(bytes: &[u8]) {
    let _ = InputKind::detect(bytes);
    let Ok(profile) = read_folded(Cursor::new(bytes), "fuzz.folded") else {
        return;
    };
    if profile.events.is_empty() || profile.total(0).period == 0 {
        return;
    }
    let stalls = (profile.events.len() >= 2).then_some(1);
    let options = cpiflame_render::Options::default();
    let mut svg = Vec::new();
    // Errors are allowed (a profile can be empty after all); panics are not.
    let columns = cpiflame_profile::Columns::new(0, stalls);
    let _ = cpiflame_render::render_cpi(&profile, &columns, &options, &mut svg);
    round_trip(&profile);
}

/// `perf script` text, read with each root and kernel option: the sniffing functions (the
/// input's kind, and its `perf script` heuristic alone) must not panic; when the text reads, every sample is counted once in its column whichever the
/// options, `--no-kernel` leaves no kernel frame, each column's folded text (both forms)
/// reads back with the same sample total, and the profile renders.
pub fn perf_script(bytes: &[u8]) {
    let _ = InputKind::detect(bytes);
    let _ = looks_like_perf_script(bytes);
    let plain = PerfScriptOptions::default();
    let Ok(script) = read_perf_script_with(Cursor::new(bytes), "fuzz.perf", plain) else {
        return;
    };
    let profile = &script.profile;
    assert_eq!(script.header.len(), profile.events.len());
    // The wall-time plan of the text's switch, wakeup and task lines (the first event's
    // samples spreading on-CPU time): made and applied without a panic.
    let names: Vec<String> = profile.events.iter().map(|e| e.name.clone()).collect();
    let on_cpu: Vec<bool> = (0..names.len()).map(|c| c == 0).collect();
    if let Some(plan) = WallPlan::of_script(&script.thread_events, &names, &on_cpu, None, false) {
        let mut walled = profile.clone();
        plan.add_to_script(
            &script.thread_events,
            &script.outside_stacks,
            &mut walled,
            None,
        );
        assert_eq!(walled.events.len(), names.len() + 3);
    }
    // The same with the samples' times kept (what viewers and timelines read): every wall
    // nanosecond in the totals is a timed sample's, on a stack and thread of the tables.
    if let Ok(mut timed_script) =
        read_perf_script_timed(Cursor::new(bytes), "fuzz.perf", plain, &|_| true)
    {
        if let Some(plan) =
            WallPlan::of_script(&timed_script.thread_events, &names, &on_cpu, None, true)
        {
            let mut walled = timed_script.profile.clone();
            plan.add_to_script(
                &timed_script.thread_events,
                &timed_script.outside_stacks,
                &mut walled,
                timed_script.timed.as_mut(),
            );
            let timed = timed_script.timed.expect("timed read");
            for column in names.len()..names.len() + 3 {
                let in_table: u64 = timed
                    .samples
                    .iter()
                    .filter(|s| s.column as usize == column)
                    .map(|s| s.period)
                    .fold(0, u64::saturating_add);
                assert_eq!(in_table, walled.total(column).period, "column {column}");
            }
            for s in &timed.samples {
                assert!((s.stack as usize) < walled.stacks.len());
                assert!((s.thread as usize) < timed.threads.len());
            }
            assert!(timed.samples.windows(2).all(|w| w[0].time <= w[1].time));
        }
    }
    for options in [
        PerfScriptOptions {
            pid: true,
            tid: false,
            kernel: false,
        },
        PerfScriptOptions {
            pid: false,
            tid: true,
            kernel: true,
        },
    ] {
        let other = read_perf_script_with(Cursor::new(bytes), "fuzz.perf", options)
            .expect("the same text reads with other options");
        assert_eq!(other.profile.events, profile.events);
        for e in 0..profile.events.len() {
            assert_eq!(other.profile.total(e), profile.total(e), "event {e}");
        }
        if !options.kernel {
            let kernel = other
                .profile
                .stacks
                .iter()
                .flat_map(|s| &s.frames)
                .any(|&f| other.profile.frame(f).kind == cpiflame_profile::FrameKind::Kernel);
            assert!(!kernel, "--no-kernel leaves no kernel frame");
        }
    }
    // Every column's folded text, in the two-count form (the column twice) and alone, reads
    // back with the same sample totals, whatever the names: a process named `#...` (perf pads
    // comms, so `   #x 1 1.0: e:` is a sample), a symbol ending in ` 8192` (perf prints what
    // the binary holds) are renamed so that no reader takes them for a comment or a count.
    for e in 0..profile.events.len() {
        let samples = profile.total(e).samples;
        if samples == 0 {
            continue;
        }
        let mut text = Vec::new();
        write_folded_pair(profile, e, e, &mut text).expect("writing to memory");
        let again = read_back(&text, 2);
        assert_eq!(again.total(0).samples, samples);
        assert_eq!(again.total(1).samples, samples);
        let mut one = Vec::new();
        write_folded(profile, e, &mut one).expect("writing to memory");
        let again = read_back(&one, 1);
        assert_eq!(again.total(0).samples, samples);
    }
    if let Some(cycles) = (0..profile.events.len()).find(|&e| profile.total(e).samples > 0) {
        let stalls = (0..profile.events.len()).find(|&e| e != cycles);
        let mut svg = Vec::new();
        let _ = cpiflame_render::render_cpi(
            profile,
            &cpiflame_profile::Columns::new(cycles, stalls),
            &cpiflame_render::Options::default(),
            &mut svg,
        );
    }
}

/// Writes the first two columns of `profile` as folded text (the two-count form), and the
/// first alone (the one-count form), reads each back, and checks that writing what was read
/// gives the same lines with the same counts: whatever the frames' names, every line the
/// writer makes reads back as the same frames (see `cpiflame_profile::folded_name`). Lines
/// are compared summed by stack, as names the writer renames alike read back as one frame.
fn round_trip(profile: &Profile) {
    if profile.events.len() >= 2 && profile.total(0).samples + profile.total(1).samples > 0 {
        let mut text = Vec::new();
        write_folded_pair(profile, 0, 1, &mut text).expect("writing to memory");
        let again = read_back(&text, 2);
        let mut text2 = Vec::new();
        write_folded_pair(&again, 0, 1, &mut text2).expect("writing to memory");
        same_lines(&text, &text2, 2);
        assert_eq!(again.total(0).samples, profile.total(0).samples);
        assert_eq!(again.total(1).samples, profile.total(1).samples);
    }

    if profile.total(0).samples > 0 {
        let mut one = Vec::new();
        write_folded(profile, 0, &mut one).expect("writing to memory");
        let again = read_back(&one, 1);
        let mut one2 = Vec::new();
        write_folded(&again, 0, &mut one2).expect("writing to memory");
        same_lines(&one, &one2, 1);
        assert_eq!(again.total(0).samples, profile.total(0).samples);
    }
}

/// Reads folded text the writer made; it must read, with `columns` counts a line.
fn read_back(text: &[u8], columns: usize) -> Profile {
    let again = read_folded(Cursor::new(text), "round trip").unwrap_or_else(|e| {
        panic!(
            "folded output does not read back: {e}\n{}",
            String::from_utf8_lossy(text)
        )
    });
    assert_eq!(
        again.events.len(),
        columns,
        "folded output reads back with another number of counts:\n{}",
        String::from_utf8_lossy(text)
    );
    again
}

/// Whether two folded texts of the writer hold the same stacks with the same counts (lines
/// of the same stack summed).
fn same_lines(first: &[u8], second: &[u8], columns: usize) {
    let summed = |text: &[u8]| {
        let mut lines = std::collections::BTreeMap::<String, Vec<u64>>::new();
        for line in String::from_utf8_lossy(text).lines() {
            // The writer's own output: `stack count...`, the counts after its last spaces.
            let mut parts = line.rsplitn(columns + 1, ' ');
            let mut counts: Vec<u64> = (&mut parts)
                .take(columns)
                .map(|n| n.parse().expect("a count"))
                .collect();
            counts.reverse();
            let stack = parts.next().expect("a stack before the counts").to_string();
            let sum = lines.entry(stack).or_insert_with(|| vec![0; columns]);
            for (s, n) in sum.iter_mut().zip(counts) {
                *s += n;
            }
        }
        lines
    };
    assert_eq!(
        summed(first),
        summed(second),
        "folded output read back and written again differs:\n{}\n---\n{}",
        String::from_utf8_lossy(first),
        String::from_utf8_lossy(second)
    );
}

/// An ELF file as a binary or debug file of a recorded process: parsed, its addresses (of
/// symbols and sections) named through symbols and DWARF, and unwound from through its CFI
/// over a stack made of the input's last bytes.
pub fn elf_image(bytes: &[u8]) {
    let Ok(image) = Image::from_bytes(
        PathBuf::from("fuzz.elf"),
        SharedBytes::owned(bytes.to_vec()),
    ) else {
        return;
    };
    let mut addresses = vec![0u64, 0x1000, 0x40_1000];
    if let Ok(file) = object::File::parse(bytes) {
        use object::{Object, ObjectSection, ObjectSymbol};
        addresses.extend(file.symbols().take(32).map(|s| s.address()));
        addresses.extend(
            file.sections()
                .take(32)
                .map(|s| s.address().wrapping_add(4)),
        );
    }
    for &svma in &addresses {
        let _ = image.frames_at(svma, || None);
    }

    let start = 0x5555_0000_0000u64;
    let len = bytes.len() as u64;
    let base_avma = image.base_avma(start, 0, len);
    let mut unwinder = UnwinderX86_64::new();
    unwinder.add_module(image.framehop_module("fuzz.elf".into(), start..start + len, base_avma));
    let pcs = addresses
        .iter()
        .take(16)
        .map(|&svma| svma.wrapping_add(base_avma));
    unwind_from(&unwinder, pcs, bytes);
}

/// Unwinds from each of `pcs` with `unwinder` over a stack made of the input's last 512
/// bytes (at most 64 frames each): whatever the tables say, the walk must end.
fn unwind_from(
    unwinder: &UnwinderX86_64<SharedBytes>,
    pcs: impl Iterator<Item = u64>,
    bytes: &[u8],
) {
    let mut cache = CacheX86_64::new();
    let stack = &bytes[bytes.len().saturating_sub(512)..];
    let sp = 0x7ffd_0000_0000u64;
    let mut read_stack = |addr: u64| -> Result<u64, ()> {
        let off = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
        let word = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
        Ok(u64::from_le_bytes(word.try_into().map_err(|_| ())?))
    };
    for pc in pcs {
        let mut frames = unwinder.iter_frames(
            pc,
            UnwindRegsX86_64::new(pc, sp, sp + 64),
            &mut cache,
            &mut read_stack,
        );
        for _ in 0..64 {
            match frames.next() {
                Ok(Some(_)) => {}
                _ => break,
            }
        }
    }
}

/// A JIT dump (`jit-PID.dump`): read; each function's lines looked up; each function's
/// unwind table handed to framehop and unwound from over a stack made of the input's last
/// bytes. What must hold: a load's code is as long as it says, a dump cut short names the
/// offset inside the input where it went wrong.
pub fn jitdump(bytes: &[u8]) {
    use cpiflame_unwind::jitdump::{JitChange, JitDump};
    let Ok(dump) = JitDump::parse(bytes) else {
        return;
    };
    if let Some((offset, _)) = &dump.problem {
        assert!(
            *offset < bytes.len() as u64,
            "problem offset {offset} outside the input"
        );
    }
    let mut unwinder = UnwinderX86_64::new();
    for event in &dump.events {
        let JitChange::Load(function) = &event.change else {
            continue;
        };
        assert!(function.code.len() as u64 <= bytes.len() as u64);
        for addr in [function.addr, function.addr.wrapping_add(function.size / 2)] {
            let _ = function.line_at(addr);
        }
        if let Some(module) = function
            .unwind
            .as_ref()
            .and_then(|u| u.framehop_module(&function.name, function.range()))
        {
            unwinder.add_module(module);
        }
    }
    let loads = dump.events.iter().take(16).filter_map(|e| match &e.change {
        JitChange::Load(function) => Some(function.addr.wrapping_add(1)),
        JitChange::Unload(_) => None,
    });
    unwind_from(&unwinder, loads, bytes);
}

/// A symbol-index cache entry (`CPIFLAME_CACHE_DIR/symbols/`) and the file it indexes: the
/// input is a little-endian u32 length, that many bytes of entry, then the file. Read as it
/// is (its CRC usually fails) and with its CRC set to match, so that mutations reach the
/// checks after it; an accepted entry's symbols are all looked up and named. What must hold:
/// no panic, and the same entry is accepted or refused alike by both reads once its CRC
/// matches.
pub fn symbol_cache_entry(bytes: &[u8]) {
    use cpiflame_unwind::check_symbol_cache_entry;
    let Some((len, rest)) = bytes.split_first_chunk::<4>() else {
        return;
    };
    let len = (u32::from_le_bytes(*len) as usize).min(rest.len());
    let (entry, file) = rest.split_at(len);
    let as_is = check_symbol_cache_entry(entry, file, false);
    let fixed = check_symbol_cache_entry(entry, file, true);
    if as_is.is_some() {
        assert_eq!(
            as_is, fixed,
            "an entry whose CRC matched reads the same with it set"
        );
    }
}

/// A marker file (`marker-PID.txt`, samply's convention; `--region` reads them): its lines
/// read as intervals of the region named on the first line that parses (or `pixel`). What
/// must hold: each thread's intervals come out sorted and apart, every interval's bounds are
/// inside it, and a time between two intervals is outside.
pub fn marker_file(bytes: &[u8]) {
    use cpiflame_pipeline::region::{parse_line, RegionSpans};
    let name = bytes
        .split(|&b| b == b'\n')
        .filter_map(|l| std::str::from_utf8(l).ok())
        .find_map(|l| parse_line(l).map(|(_, _, n)| n.to_string()))
        .unwrap_or_else(|| "pixel".to_string());
    let mut spans = RegionSpans::new(&name);
    spans.add_text(1, bytes);
    spans.add_text(1, bytes); // the same file twice merges to the same intervals
    let once = {
        let mut s = RegionSpans::new(&name);
        s.add_text(1, bytes);
        s
    };
    assert_eq!(
        spans.of_thread(1),
        once.of_thread(1),
        "adding a file twice changed it"
    );
    let intervals = spans.of_thread(1);
    assert!(
        intervals.len() <= bytes.len() / 6 + 1,
        "more intervals than lines"
    );
    for (i, &(start, end)) in intervals.iter().enumerate() {
        assert!(start <= end, "interval {i} ends before it starts");
        assert!(spans.contains(Some(1), start) && spans.contains(Some(1), end));
        assert!(
            !spans.contains(Some(2), start),
            "another thread's sample kept"
        );
        if let Some(&(next, _)) = intervals.get(i + 1) {
            assert!(
                end < next,
                "intervals {i} and {} overlap or are out of order",
                i + 1
            );
            if end + 1 < next {
                assert!(
                    !spans.contains(Some(1), end + 1),
                    "a time between intervals kept"
                );
            }
        }
    }
}
