//! Synthetic recordings (this machine has no PMU): stall, cycles and instructions samples at
//! known addresses of a function named by a perf map, checked with exact arithmetic.

use std::path::Path;

use cpiflame_perf_data::abi::{misc, sample};
use cpiflame_perf_data::synth::{test_features, write_perf_map, Recording};
use cpiflame_perf_data::write::{attr_flags, EventAttr, Mmap2, SampleFields};
use cpiflame_pipeline::{LoadOptions, Roles};
use cpiflame_testkit::Dir;

use super::*;

const CODE: u64 = 0x7f00_0000_0000;
const PERIOD: u64 = 1000;

/// A pid no process is likely to have (above the integration tests' range, below
/// pid_max), so the perf map is this test's alone; `salt` < 16 per test.
fn pid(salt: u32) -> i32 {
    (4_160_000 + (std::process::id() % 2_000) * 16 + salt) as i32
}

/// Events in file order: (type, config, name).
const EVENTS: [(u32, u64, &str); 3] = [
    (4, 0x0400_04a3, "cycle_activity.stalls_total"),
    (0, 0, "cycles"),
    (0, 1, "instructions"),
];

/// Writes a recording of `hot` (at CODE, 0x100 bytes) and `cold` (after it): per leaf
/// address, how many samples of each event (in `EVENTS` order). `precise` sets every
/// attr's precise_ip to 2.
fn write(dir: &Path, pid: i32, leaves: &[(u64, [u64; 3])], precise: bool) -> PathBuf {
    let attrs: Vec<EventAttr> = EVENTS
        .iter()
        .enumerate()
        .map(|(i, &(type_, config, name))| EventAttr {
            type_,
            config,
            sample_period_or_freq: PERIOD,
            sample_type: sample::IDENTIFIER
                | sample::IP
                | sample::TID
                | sample::TIME
                | sample::ID
                | sample::PERIOD,
            flags: attr_flags::SAMPLE_ID_ALL
                | attr_flags::COMM
                | attr_flags::MMAP
                | if precise {
                    2 << attr_flags::PRECISE_IP_SHIFT
                } else {
                    0
                },
            name: Some(name.to_string()),
            ids: vec![100 + i as u64],
            ..EventAttr::default()
        })
        .collect();
    let leaves: Vec<(u64, &[u64])> = leaves.iter().map(|(ip, n)| (*ip, &n[..])).collect();
    write_attrs(dir, pid, attrs, &leaves)
}

/// [`write`] with attrs of the caller's (ids 100 + index): per leaf address, how many
/// samples of each attr, each of period PERIOD.
fn write_attrs(dir: &Path, pid: i32, attrs: Vec<EventAttr>, leaves: &[(u64, &[u64])]) -> PathBuf {
    let mut rec = Recording::create(dir.join("synthetic.data"), attrs);
    rec.comm(pid, pid, "annotated", 1);
    rec.mmap(
        &Mmap2 {
            pid,
            tid: pid,
            addr: CODE,
            len: 0x1000,
            prot: 5,
            flags: 2,
            filename: "//anon".into(),
            misc: misc::USER,
            ..Mmap2::default()
        },
        2,
    );
    let mut time = 10;
    for &(ip, counts) in leaves {
        for (event, &n) in counts.iter().enumerate() {
            for _ in 0..n {
                time += 1;
                rec.sample(
                    event,
                    &SampleFields {
                        ip,
                        pid,
                        tid: pid,
                        time,
                        id: 100 + event as u64,
                        period: PERIOD,
                        // An address in the upper half is the kernel's.
                        misc: if ip >> 63 == 1 {
                            misc::KERNEL
                        } else {
                            misc::USER
                        },
                        ..SampleFields::default()
                    },
                );
            }
        }
    }
    let mut features = test_features();
    features.arch = Some("x86_64".into());
    let path = rec.finish(&features);
    write_perf_map(pid, &[(CODE, 0x100, "hot"), (CODE + 0x100, 0x100, "cold")]);
    path
}

fn options(file: PathBuf) -> LoadOptions {
    LoadOptions {
        roles: Roles {
            stalls: Some("cycle_activity.stalls_total".into()),
            cycles: Some("cycles".into()),
            instructions: Some("instructions".into()),
        },
        kernel: true,
        ..LoadOptions {
            file,
            ..LoadOptions::default()
        }
    }
}

fn remove_map(pid: i32) {
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
}

/// Per instruction: share = its cycles period / the function's; stall share = stall period
/// / cycles period of the samples whose leaf it is; CPI = cycles / instructions.
#[test]
fn stall_share_and_cpi_per_instruction_are_exact() {
    let dir = Dir::new("annotate-exact");
    let pid = pid(0);
    // hot+0x10: 3 stalls, 4 cycles, 2 instructions; hot+0x14: 1, 4, 8; cold+0x8: 0, 2, 2.
    let leaves = [
        (CODE + 0x10, [3, 4, 2]),
        (CODE + 0x14, [1, 4, 8]),
        (CODE + 0x108, [0, 2, 2]),
    ];
    let file = write(dir.root(), pid, &leaves, false);
    let mut warnings = Vec::new();
    let what = AnnotateOptions::new(None, 3, None, SourcePaths::default());
    let functions = annotate_file(&options(file), &what, &mut warnings);
    remove_map(pid);
    let functions = functions.unwrap();
    // Both functions, hottest first by cycles period.
    let names: Vec<&str> = functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["hot", "cold"]);
    let hot = &functions[0];
    assert_eq!((hot.samples, hot.period), (8, 8 * PERIOD));
    assert_eq!(hot.event, "cycles");
    assert!(hot.skids && hot.has_stalls && hot.has_cpi);
    let addresses: Vec<u64> = hot.instructions.iter().map(|i| i.address).collect();
    assert_eq!(addresses, [CODE + 0x10, CODE + 0x14]);
    let first = &hot.instructions[0];
    assert_eq!(hot.share(&first.weights), Some(50.0));
    assert_eq!(hot.stall_share(&first.weights), Some(75.0));
    assert_eq!(hot.cpi(&first.weights), Some(2.0));
    let second = &hot.instructions[1];
    assert_eq!(hot.stall_share(&second.weights), Some(25.0));
    assert_eq!(hot.cpi(&second.weights), Some(0.5));
    // No code bytes (anonymous memory) and no DWARF: addresses only, no lines.
    assert!(hot.instructions.iter().all(|i| i.text.is_none()));
    assert!(hot.lines.is_empty());

    let json = to_json(&functions[..1]);
    let i0 = &json[0]["instructions"][0];
    assert_eq!(json[0]["function"], "hot");
    assert_eq!(json[0]["samples"], 8);
    assert_eq!(i0["address"], format!("{:x}", CODE + 0x10));
    assert_eq!(i0["samples"], 4);
    assert_eq!(i0["share"], 0.5);
    assert_eq!(i0["stall_share"], 0.75);
    assert_eq!(i0["cpi"], 2.0);
    assert!(i0["text"].is_null() && i0["file"].is_null() && i0["line"].is_null());

    let mut text = Vec::new();
    write_text(&functions[..1], &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains(&skid_note("cycles")), "{text}");
    // Equal shares: the lower address is marked hottest.
    let marked: Vec<&str> = text.lines().filter(|l| l.starts_with('>')).collect();
    assert_eq!(marked.len(), 1, "{text}");
    assert!(marked[0].contains(&format!("{:x}:", CODE + 0x10)), "{text}");
    assert!(
        marked[0].contains(" 50.00   75.00    2.00"),
        "{}",
        marked[0]
    );
}

/// SYMBOL picks one function; `--event` weighs by another column; a precise event gets no
/// skid note; an unknown name is an error naming it.
#[test]
fn symbol_event_and_precise() {
    let dir = Dir::new("annotate-symbol");
    let pid = pid(1);
    let leaves = [(CODE + 0x10, [3, 4, 2]), (CODE + 0x108, [0, 2, 6])];
    let file = write(dir.root(), pid, &leaves, true);
    let ask = |symbol: &str, event: Option<&str>| {
        let what = AnnotateOptions::new(
            Some(symbol.into()),
            3,
            event.map(str::to_string),
            SourcePaths::default(),
        );
        annotate_file(&options(file.clone()), &what, &mut Vec::new())
    };
    let cold = ask("cold", Some("instructions"));
    let missing = ask("nowhere", None);
    remove_map(pid);
    let cold = cold.unwrap();
    assert_eq!(cold.len(), 1);
    assert_eq!((cold[0].name.as_str(), cold[0].samples), ("cold", 6));
    assert_eq!(cold[0].event, "instructions");
    assert!(!cold[0].skids);
    let err = missing.unwrap_err().to_string();
    assert!(
        err.contains("`nowhere`") && err.contains("synthetic.data"),
        "{err}"
    );
}

#[test]
fn disassembly_is_att_with_addresses_from_the_start() {
    // push %rbp; mov %rsp,%rbp; ret
    let got = disassemble(0x1000, &[0x55, 0x48, 0x89, 0xe5, 0xc3]);
    assert_eq!(
        got,
        [
            (0x1000, "push %rbp".to_string()),
            (0x1001, "mov %rsp,%rbp".to_string()),
            (0x1004, "ret".to_string()),
        ]
    );
}

/// A sample whose leaf is in the kernel is its kernel function's (addresses only: the
/// kernel's code is not in the recording); `--no-kernel` leaves it out.
#[test]
fn kernel_leaves_are_kept_or_left_out() {
    let dir = Dir::new("annotate-kernel");
    let pid = pid(2);
    let kernel_ip = 0xffff_ffff_8100_0150;
    let leaves = [(CODE + 0x10, [0, 3, 0]), (kernel_ip, [0, 2, 0])];
    let file = write(dir.root(), pid, &leaves, false);
    let what = AnnotateOptions::new(None, 5, None, SourcePaths::default());
    let with = annotate_file(&options(file.clone()), &what, &mut Vec::new());
    let without = LoadOptions {
        kernel: false,
        ..options(file)
    };
    let without = annotate_file(&without, &what, &mut Vec::new());
    remove_map(pid);
    let with = with.unwrap();
    let kernel: Vec<&Function> = with.iter().filter(|f| f.module.starts_with('[')).collect();
    assert_eq!(kernel.len(), 1, "{with:?}");
    assert_eq!(kernel[0].samples, 2);
    let addresses: Vec<(u64, bool)> = kernel[0]
        .instructions
        .iter()
        .map(|i| (i.address, i.text.is_none()))
        .collect();
    assert_eq!(addresses, [(kernel_ip, true)]);
    let without = without.unwrap();
    let names: Vec<&str> = without.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["hot"]);
}

#[test]
fn cold_parts_are_gcc_s_names_of_them() {
    for name in [
        "work.cold",
        "_Z4workm.cold",
        "work.cold.12",
        "work.isra.0.cold",
    ] {
        assert!(is_cold_part(name), "{name}");
    }
    for name in ["work", "work.constprop.0", "coldwork", "work_cold", "cold"] {
        assert!(!is_cold_part(name), "{name}");
    }
}

/// Branch targets are absolute (`adrp`'s from its page); a word that is no instruction is
/// `.inst`, as objdump writes it. The expected text is objdump's (`-D -b binary -m aarch64
/// --adjust-vma=0x400778`), its comments dropped.
#[test]
fn aarch64_pc_relative_targets_are_absolute() {
    let words: [u32; 5] = [0x54fff801, 0x900000e6, 0x9400004f, 0, 0xffff_ffff];
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let got = disassemble_aarch64(0x400778, &bytes);
    let texts: Vec<&str> = got.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        texts,
        [
            "b.ne 0x400678",
            "adrp x6, 0x41c000",
            "bl 0x4008bc",
            "udf #0x0",
            ".inst 0xffffffff"
        ]
    );
}

/// objdump's text of one instruction, or ours, as tokens: objdump's `// ...` comments and
/// `<symbol+offset>` labels dropped; numbers as values (objdump writes memory offsets in
/// decimal, `#-16`, yaxpeax-arm in hex, `#-0x10`; floating-point immediates `#1.5` against
/// `#1.500000000000000000e+00`; branch targets `4001ec` against `0x4001ec`).
fn aarch64_tokens(text: &str) -> Vec<String> {
    let text = text.split("//").next().unwrap_or(text);
    let mut text = text.to_string();
    while let (Some(a), Some(b)) = (text.find('<'), text.find('>')) {
        if b < a {
            break;
        }
        text.replace_range(a..=b, "");
    }
    let mut tokens = Vec::new();
    for (k, raw) in text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .enumerate()
    {
        // Brackets and `!` apart, so `[sp,` `#-16]!` compare by value.
        let mut rest = raw;
        let mut tail = Vec::new();
        while let Some(t) = rest.strip_prefix('[') {
            tokens.push("[".to_string());
            rest = t;
        }
        while let Some(t) = rest.strip_suffix('!').or_else(|| rest.strip_suffix(']')) {
            tail.push(rest[t.len()..].to_string());
            rest = t;
        }
        let number = rest.strip_prefix('#').unwrap_or(rest);
        let value = if k == 0 {
            None
        } else if let Some(hex) = number
            .strip_prefix("0x")
            .or_else(|| number.strip_prefix("-0x"))
        {
            u64::from_str_radix(hex, 16).ok().map(|v| {
                let v = if number.starts_with('-') {
                    v.wrapping_neg()
                } else {
                    v
                };
                format!("{v:#x}")
            })
        } else if !rest.starts_with('#') && rest.chars().all(|c| c.is_ascii_hexdigit()) {
            // objdump's bare branch target.
            u64::from_str_radix(rest, 16)
                .ok()
                .map(|v| format!("{v:#x}"))
        } else if let Ok(v) = number.parse::<i64>() {
            Some(format!("{:#x}", v as u64))
        } else {
            number.parse::<f64>().ok().map(|v| format!("{v:e}"))
        };
        tokens.push(value.unwrap_or_else(|| rest.to_string()));
        tokens.extend(tail.into_iter().rev());
    }
    tokens
}

/// A function cross-compiled for AArch64 (`fixtures/aarch64/kernel.c`), sampled in a
/// synthetic recording whose HEADER_ARCH is `aarch64`: every instruction of `kernel` with the
/// text aarch64-linux-gnu-objdump -d gives it (compared as [`aarch64_tokens`]).
#[test]
fn aarch64_text_matches_objdump() {
    use std::process::Command;
    let tools = ["aarch64-linux-gnu-gcc", "aarch64-linux-gnu-objdump"];
    if let Some(missing) = tools.iter().find(|t| {
        Command::new(t)
            .arg("--version")
            .output()
            .map_or(true, |o| !o.status.success())
    }) {
        cpiflame_testkit::unavailable(format!(
            "{missing} is not installed (Debian gcc-aarch64-linux-gnu; scripts/test.sh installs it)"
        ));
        return;
    }
    let dir = Dir::new("annotate-aarch64");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/aarch64/kernel.c");
    let binary = dir.path("kernel");
    let built = Command::new(tools[0])
        .args(["-O2", "-g", "-nostdlib", "-static", "-Wl,-e,start", "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let dump = Command::new(tools[1])
        .args(["-d", "--no-show-raw-insn"])
        .arg(&binary)
        .output()
        .unwrap();
    assert!(dump.status.success());
    // `  400160:\tmov\tx8, x0` lines of <kernel>.
    let dump = String::from_utf8_lossy(&dump.stdout);
    let body = dump
        .split("<kernel>:\n")
        .nth(1)
        .expect("objdump shows kernel")
        .split("\n\n")
        .next()
        .unwrap();
    let objdump: Vec<(u64, String)> = body
        .lines()
        .filter_map(|l| {
            let (address, text) = l.trim_start().split_once(":\t")?;
            Some((u64::from_str_radix(address, 16).ok()?, text.to_string()))
        })
        .collect();
    assert!(objdump.len() > 20, "{body}");

    // The static executable's text is at 0x400000 (file offset 0); mapped at BASE.
    const BASE: u64 = 0x5555_0000_0000;
    const VADDR: u64 = 0x40_0000;
    let pid = pid(3);
    let attr = EventAttr {
        type_: 1,
        config: 0,
        sample_period_or_freq: PERIOD,
        sample_type: sample::IDENTIFIER
            | sample::IP
            | sample::TID
            | sample::TIME
            | sample::ID
            | sample::PERIOD,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM | attr_flags::MMAP,
        name: Some("cpu-clock".into()),
        ids: vec![100],
        ..EventAttr::default()
    };
    let mut rec = Recording::create(dir.path("aarch64.data"), vec![attr]);
    rec.comm(pid, pid, "kernel", 1);
    rec.mmap(
        &Mmap2 {
            pid,
            tid: pid,
            addr: BASE,
            len: 0x1000,
            prot: 5,
            flags: 2,
            filename: binary.to_string_lossy().into_owned(),
            misc: misc::USER,
            ..Mmap2::default()
        },
        2,
    );
    // Samples on the first, a middle and the last instruction.
    let sampled = [
        objdump[0].0,
        objdump[objdump.len() / 2].0,
        objdump[objdump.len() - 1].0,
    ];
    for (k, &svma) in sampled.iter().enumerate() {
        rec.sample(
            0,
            &SampleFields {
                ip: BASE + svma - VADDR,
                pid,
                tid: pid,
                time: 10 + k as u64,
                id: 100,
                period: PERIOD,
                misc: misc::USER,
                ..SampleFields::default()
            },
        );
    }
    let mut features = test_features();
    features.arch = Some("aarch64".into());
    let file = rec.finish(&features);
    let what = AnnotateOptions::new(Some("kernel".into()), 1, None, SourcePaths::default());
    let load = LoadOptions {
        file,
        ..LoadOptions::default()
    };
    let functions = annotate_file(&load, &what, &mut Vec::new()).unwrap();
    let f = &functions[0];
    assert_eq!(f.samples, 3);
    let ours: Vec<(u64, String)> = f
        .instructions
        .iter()
        .map(|i| (i.address, i.text.clone().expect("disassembled")))
        .collect();
    assert_eq!(
        ours.iter().map(|(a, _)| *a).collect::<Vec<_>>(),
        objdump.iter().map(|(a, _)| *a).collect::<Vec<_>>(),
        "instructions differ from objdump's"
    );
    let mut verbatim = 0;
    for ((address, text), (_, theirs)) in ours.iter().zip(&objdump) {
        assert_eq!(
            aarch64_tokens(text),
            aarch64_tokens(theirs),
            "{address:x}: cpiflame `{text}`, objdump `{theirs}`"
        );
        verbatim += usize::from(*text == theirs.replace('\t', " "));
    }
    // Most instructions need no normalising at all.
    assert!(verbatim * 2 > ours.len(), "{verbatim} of {}", ours.len());
    // The lines are the file's DWARF lines.
    assert!(f.lines.iter().any(|l| l.file.ends_with("kernel.c")));
}

/// A hybrid recording whose instructions were sampled on the P-cores only: widths add both
/// core types' cycles, CPI divides the P-cores' cycles by their instructions
/// (`Loaded::ratio_cycles`), as the graph does.
#[test]
fn hybrid_cpi_divides_the_cycles_of_the_core_types_with_instructions() {
    let dir = Dir::new("annotate-hybrid");
    let pid = pid(4);
    // (PMU, its type, generic config): cycles on both core types, instructions on cpu_core.
    let events = [
        ("cpu_core", 4u64, 0u64),
        ("cpu_atom", 7, 0),
        ("cpu_core", 4, 1),
    ];
    let attrs: Vec<EventAttr> = events
        .iter()
        .enumerate()
        .map(|(i, &(pmu, pmu_type, config))| EventAttr {
            type_: 0,
            config: (pmu_type << 32) | config,
            sample_period_or_freq: PERIOD,
            sample_type: sample::IDENTIFIER
                | sample::IP
                | sample::TID
                | sample::TIME
                | sample::ID
                | sample::PERIOD,
            flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM | attr_flags::MMAP,
            name: Some(format!(
                "{pmu}/{}/",
                ["cycles", "instructions"][config as usize]
            )),
            ids: vec![100 + i as u64],
            ..EventAttr::default()
        })
        .collect();
    // hot+0x10: 1 P-core and 3 E-core cycles samples, 2 P-core instructions samples.
    let file = write_attrs(dir.root(), pid, attrs, &[(CODE + 0x10, &[1, 3, 2])]);
    let what = AnnotateOptions::new(Some("hot".into()), 1, None, SourcePaths::default());
    let load = LoadOptions {
        file,
        ..LoadOptions::default()
    };
    let functions = annotate_file(&load, &what, &mut Vec::new());
    remove_map(pid);
    let functions = functions.unwrap();
    let f = &functions[0];
    assert_eq!(f.event, "cycles (cpu_atom+cpu_core)");
    assert_eq!((f.samples, f.period), (4, 4 * PERIOD));
    assert!(f.has_cpi);
    let i = &f.instructions[0];
    assert_eq!(i.weights.cycles, PERIOD);
    assert_eq!(f.cpi(&i.weights), Some(0.5));
}
