//! A synthetic profile with inlined frames, kernel frames and two processes, built with the
//! crate's builder, encoded (gzip protobuf) and decoded again: every field must come back.

use cpiflame_pprof::{decode, encode, Builder, FrameSpec, LabelValue, MappingSpec};

fn frame(name: &str, file: &str, line: i64) -> FrameSpec {
    FrameSpec {
        name: name.into(),
        filename: file.into(),
        line,
    }
}

#[test]
fn every_field_survives_the_round_trip() {
    let mut b = Builder::new();
    for t in [
        "cycles_sample",
        "cycles_event",
        "stalls_sample",
        "stalls_event",
    ] {
        b.sample_type(t, "count");
    }
    b.default_sample_type("cycles_event");
    b.period("cycles", "count", 2_000_003);
    b.times(1_700_000_000_000_000_000, 3_500_000_000);
    b.comment("perf-command:cpiflame record -- ./app");
    b.comment("host:builder");
    b.comment("cpu:Test CPU @ 1GHz");
    let app = MappingSpec {
        start: 0x5555_0000_1000,
        limit: 0x5555_0000_9000,
        file_offset: 0x1000,
        filename: "/usr/bin/app".into(),
        build_id: "0badc0de".into(),
        named: true,
        lines: true,
    };
    let kernel = MappingSpec {
        start: 0xffff_ffff_8100_0000,
        limit: 0xffff_ffff_8200_0000,
        filename: "[kernel.kallsyms]".into(),
        build_id: "beef".into(),
        named: true,
        ..MappingSpec::default()
    };
    let app_id = b.mapping(&app);
    let kernel_id = b.mapping(&kernel);
    assert_eq!(b.mapping(&app), app_id, "mappings are interned");
    // An address where `helper` was inlined into `compute`: innermost first.
    let inlined = b.location(
        app_id,
        0x5555_0000_1234,
        &[frame("helper", "app.c", 12), frame("compute", "app.c", 40)],
    );
    let main = b.location(app_id, 0x5555_0000_1300, &[frame("main", "app.c", 60)]);
    let syscall = b.location(
        kernel_id,
        0xffff_ffff_8100_1000,
        &[frame("do_syscall_64", "", 0)],
    );
    b.sample(
        vec![inlined, main],
        vec![3, 6_000_009, 1, 2_000_003],
        &[
            ("thread", LabelValue::Str("app".into())),
            ("pid", LabelValue::Num(100)),
            ("tid", LabelValue::Num(101)),
        ],
    );
    b.sample(
        vec![syscall, main],
        vec![1, 2_000_003, 0, 0],
        &[
            ("thread", LabelValue::Str("other".into())),
            ("pid", LabelValue::Num(200)),
            ("tid", LabelValue::Num(200)),
        ],
    );
    let built = b.finish();
    let bytes = encode(&built);
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip");
    let p = decode(&bytes).unwrap();
    assert_eq!(p, built);

    let s = |i: i64| p.string(i).to_string();
    assert_eq!(p.string_table[0], "");
    let types: Vec<(String, String)> = p
        .sample_type
        .iter()
        .map(|t| (s(t.r#type), s(t.unit)))
        .collect();
    assert_eq!(types[1], ("cycles_event".into(), "count".into()));
    assert_eq!(types.len(), 4);
    assert_eq!(s(p.default_sample_type), "cycles_event");
    let period_type = p.period_type.as_ref().unwrap();
    assert_eq!(
        (s(period_type.r#type), p.period),
        ("cycles".into(), 2_000_003)
    );
    assert_eq!(
        (p.time_nanos, p.duration_nanos),
        (1_700_000_000_000_000_000, 3_500_000_000)
    );
    let comments: Vec<String> = p.comment.iter().map(|&c| s(c)).collect();
    assert_eq!(
        comments,
        [
            "perf-command:cpiflame record -- ./app",
            "host:builder",
            "cpu:Test CPU @ 1GHz"
        ]
    );
    // Mappings, ids from 1.
    assert_eq!(p.mapping.len(), 2);
    let m = &p.mapping[0];
    assert_eq!(
        (m.id, m.memory_start, m.memory_limit, m.file_offset),
        (1, 0x5555_0000_1000, 0x5555_0000_9000, 0x1000)
    );
    assert_eq!(
        (s(m.filename), s(m.build_id)),
        ("/usr/bin/app".into(), "0badc0de".into())
    );
    assert!(m.has_functions && m.has_filenames && m.has_line_numbers && m.has_inline_frames);
    let k = &p.mapping[1];
    assert_eq!((k.id, s(k.filename)), (2, "[kernel.kallsyms]".into()));
    assert!(k.has_functions && !k.has_line_numbers);
    // The inlined location: two lines, innermost first, each its function and file.
    let loc = &p.location[(inlined - 1) as usize];
    assert_eq!((loc.mapping_id, loc.address), (1, 0x5555_0000_1234));
    let lines: Vec<(String, String, i64)> = loc
        .line
        .iter()
        .map(|l| {
            let f = &p.function[(l.function_id - 1) as usize];
            assert_eq!(f.id, l.function_id);
            (s(f.name), s(f.filename), l.line)
        })
        .collect();
    assert_eq!(
        lines,
        [
            ("helper".into(), "app.c".into(), 12),
            ("compute".into(), "app.c".into(), 40)
        ]
    );
    assert_eq!(p.location[(syscall - 1) as usize].mapping_id, 2);
    // `main` is one function, shared by both processes' stacks.
    assert_eq!(p.function.len(), 4);
    // Samples: stacks leaf first, values per type, labels of two processes.
    assert_eq!(p.sample.len(), 2);
    assert_eq!(p.sample[0].location_id, [inlined, main]);
    assert_eq!(p.sample[0].value, [3, 6_000_009, 1, 2_000_003]);
    let labels = |i: usize| -> Vec<(String, String, i64)> {
        p.sample[i]
            .label
            .iter()
            .map(|l| (s(l.key), s(l.str), l.num))
            .collect()
    };
    assert_eq!(
        labels(1),
        [
            ("thread".into(), "other".into(), 0),
            ("pid".into(), String::new(), 200),
            ("tid".into(), String::new(), 200)
        ]
    );
    assert_eq!(labels(0)[1], ("pid".into(), String::new(), 100));
}

#[test]
fn decode_refuses_what_is_not_a_profile() {
    assert!(decode(b"\x1f\x8bnot gzip at all").is_err());
    // Field 1 as a varint where a message is expected.
    assert!(decode(&[0x08, 0x01]).is_err());
    // Uncompressed protobuf is read too.
    let mut b = Builder::new();
    b.sample_type("x_sample", "count");
    let p = b.finish();
    use prost::Message;
    assert_eq!(decode(&p.encode_to_vec()).unwrap(), p);
}
