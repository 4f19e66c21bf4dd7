//! Naming parses a file's DWARF one compile unit at a time (the unit `.debug_aranges` says
//! covers the address). These tests hold it to what addr2line gives over the whole file, a
//! context this test builds itself from the file's sections (so independent of the crate's
//! code path), for thousands of addresses of the system libc's debug file (4000 units) and
//! for every address of a small C program of three units built here; and, for the program,
//! to binutils' `addr2line -f -i`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use cpiflame_unwind::{DwarfFrame, Image};
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

type Reference = addr2line::Context<gimli::EndianRcSlice<gimli::RunTimeEndian>>;

/// One DWARF frame: raw function name, source file, line.
type Frame = DwarfFrame;

type Sections = gimli::Dwarf<gimli::EndianRcSlice<gimli::RunTimeEndian>>;

/// All of the file's DWARF, every section as the file has it (decompressed).
fn dwarf_sections(bytes: &[u8]) -> Sections {
    let file = object::File::parse(bytes).expect("an ELF file");
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    gimli::Dwarf::load(|id| -> Result<_, gimli::Error> {
        let data = file
            .section_by_name(id.name())
            .map(|s| s.uncompressed_data().expect("section data").into_owned())
            .unwrap_or_default();
        Ok(gimli::EndianRcSlice::new(Rc::from(data), endian))
    })
    .expect("DWARF sections")
}

/// addr2line over all of the file's DWARF.
fn whole_file_context(bytes: &[u8]) -> Reference {
    addr2line::Context::from_dwarf(dwarf_sections(bytes)).expect("an addr2line context")
}

/// The frames at `address` with a function name, as the whole-file context gives them.
fn reference_frames(ctx: &Reference, address: u64) -> Vec<Frame> {
    let mut frames = Vec::new();
    if let Ok(mut iter) = ctx.find_frames(address).skip_all_loads() {
        while let Ok(Some(frame)) = iter.next() {
            let Some(Ok(name)) = frame.function.as_ref().map(|f| f.raw_name()) else {
                continue;
            };
            let location = frame.location.as_ref();
            frames.push(DwarfFrame {
                raw_name: name.into_owned(),
                file: location.and_then(|l| l.file).map(str::to_string),
                line: location.and_then(|l| l.line),
            });
        }
    }
    frames
}

/// Function symbols of `bytes` (address, size, name).
fn functions(bytes: &[u8]) -> Vec<(u64, u64, String)> {
    let file = object::File::parse(bytes).unwrap();
    let mut functions: Vec<_> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.is_definition())
        .map(|s| (s.address(), s.size(), s.name().unwrap_or("").to_string()))
        .collect();
    functions.sort();
    functions.dedup_by_key(|f| f.0);
    functions
}

/// Compares the image's lazy naming with the whole-file context at `addresses`; returns how
/// many were named and how many had inlined frames, so callers can check the test bit.
fn compare(image: &Image, reference: &Reference, addresses: &[u64]) -> (usize, usize) {
    let (mut named, mut inlined) = (0, 0);
    for &address in addresses {
        let expected = reference_frames(reference, address);
        let got = image.dwarf_frames_at(address);
        assert_eq!(got, expected, "frames at {address:#x}");
        named += usize::from(!expected.is_empty());
        inlined += usize::from(expected.len() > 1);
    }
    (named, inlined)
}

/// The path of the C library this test process runs with.
fn system_libc() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            Path::new(p)
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libc.so"))
        })
        .map(PathBuf::from)
}

#[test]
fn libc_debug_file_named_unit_by_unit_as_the_whole_file_names_it() {
    let Some(libc) = system_libc() else {
        return cpiflame_testkit::unavailable("no libc.so mapped into the test process");
    };
    let image = Image::open(&libc).expect("libc opens");
    let Some(build_id) = image.build_id.as_deref() else {
        return cpiflame_testkit::unavailable("the system libc has no build id");
    };
    let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    let debug = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &hex[..2],
        &hex[2..]
    ));
    if !debug.exists() {
        return cpiflame_testkit::unavailable(format!(
            "{} absent: the libc debug file (Debian: libc6-dbg)",
            debug.display()
        ));
    }
    let bytes = std::fs::read(&debug).unwrap();
    let reference = whole_file_context(&bytes);
    let image = Image::open(&debug).expect("the debug file opens");
    assert!(image.has_dwarf, "{} has DWARF", debug.display());
    // Each function's start, a few places inside it, its last byte and the byte after it.
    let mut addresses = Vec::new();
    for (start, size, _) in functions(&bytes) {
        addresses.extend([start, start + 1, start + size / 3, start + size / 2]);
        addresses.extend([start + size - 1, start + size]);
    }
    // Every 16th byte of the code sections, PLT stubs included, named or not (the debug
    // file has their headers but not their bytes: libc's own say which they are).
    let code = std::fs::read(&libc).unwrap();
    for section in object::File::parse(&*code).unwrap().sections() {
        if section.kind() == object::SectionKind::Text {
            addresses.extend((section.address()..section.address() + section.size()).step_by(16));
        }
    }
    addresses.sort_unstable();
    addresses.dedup();
    assert!(addresses.len() > 10_000, "{} addresses", addresses.len());
    let (named, inlined) = compare(&image, &reference, &addresses);
    assert!(
        named > addresses.len() / 2 && inlined > 1000,
        "{named} of {} addresses named, {inlined} with inlined frames",
        addresses.len()
    );
}

const UNIT_MAIN: &str = r#"
long mix_b(long x);
long mix_c(long x);
int main(int argc, char **argv) {
    (void)argv;
    long s = 0;
    for (long i = 0; i < argc * 1000; i++)
        s += mix_b(i) + mix_c(i);
    return (int)(s & 1);
}
"#;

const UNIT_B: &str = r#"
static inline __attribute__((always_inline)) long square_b(long x) {
    return x * x + 3;
}
__attribute__((noinline)) long mix_b(long x) {
    long s = 0;
    for (long i = 0; i < x; i++)
        s += square_b(i ^ x);
    return s;
}
"#;

const UNIT_C: &str = r#"
static inline __attribute__((always_inline)) long shift_c(long x) {
    return (x << 3) ^ (x >> 2);
}
__attribute__((noinline)) long mix_c(long x) {
    return shift_c(x) * shift_c(x + 1);
}
"#;

/// binutils' frames at `address`: (function, file name, line), innermost first.
fn binutils_frames(program: &Path, address: u64) -> Vec<(String, String, Option<u32>)> {
    let out = Command::new("addr2line")
        .args(["-f", "-i", "-e"])
        .arg(program)
        .arg(format!("{address:#x}"))
        .output()
        .expect("addr2line runs");
    assert!(out.status.success(), "addr2line: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    lines
        .chunks(2)
        .map(|pair| {
            // `path:line` or `path:line (discriminator N)`; `??:?` when unknown.
            let place = pair[1].split(" (").next().unwrap();
            let (file, line) = place.rsplit_once(':').unwrap();
            (
                pair[0].to_string(),
                base_name(file),
                line.parse().ok().filter(|&l| l != 0),
            )
        })
        .collect()
}

fn base_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// Builds the three-unit program with `flags` in `dir` (named `name`); `None` (having said
/// why) when cc cannot.
fn build(dir: &Path, name: &str, flags: &[&str]) -> Option<PathBuf> {
    for (file, text) in [("main.c", UNIT_MAIN), ("b.c", UNIT_B), ("c.c", UNIT_C)] {
        std::fs::write(dir.join(file), text).unwrap();
    }
    let built = Command::new("cc")
        .current_dir(dir)
        .args(flags)
        .args(["-o", name, "main.c", "b.c", "c.c"])
        .output();
    match built {
        Ok(out) if out.status.success() => Some(dir.join(name)),
        other => {
            cpiflame_testkit::unavailable(format!(
                "cc {flags:?} cannot build the program: {other:?}"
            ));
            None
        }
    }
}

/// Whether any DIE of the file holds an offset into `.debug_info` (DW_FORM_ref_addr): a
/// unit that refers into another, which the lazy path must leave to the whole file.
fn refers_across_units(dwarf: &Sections) -> bool {
    let mut units = dwarf.units();
    while let Some(header) = units.next().unwrap() {
        let unit = dwarf.unit(header).unwrap();
        let mut entries = unit.entries();
        while let Some(entry) = entries.next_dfs().unwrap() {
            if entry
                .attrs()
                .iter()
                .any(|a| matches!(a.raw_value(), gimli::AttributeValue::DebugInfoRef(_)))
            {
                return true;
            }
        }
    }
    false
}

/// Every address of the program's code (and a little past it) named as the whole-file
/// context names it; and with `binutils`, at the start of each function and at the first
/// inlined frame of mix_b and mix_c, as binutils' `addr2line -f -i` names it.
fn check_program(program: &Path, binutils: bool) {
    let bytes = std::fs::read(program).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let reference = whole_file_context(&bytes);
    let image = Image::open(program).expect("the program opens");
    let text = file.section_by_name(".text").expect(".text");
    let addresses: Vec<u64> = (0..text.address() + text.size() + 64).collect();
    let (named, inlined) = compare(&image, &reference, &addresses);
    assert!(named > 0 && inlined > 0, "{named} named, {inlined} inlined");
    if !binutils {
        return;
    }

    let functions = functions(&bytes);
    let mut probes = Vec::new();
    for wanted in ["main", "mix_b", "mix_c"] {
        let &(start, size, _) = functions
            .iter()
            .find(|f| f.2 == wanted)
            .unwrap_or_else(|| panic!("{wanted} in the symbol table"));
        probes.push(start);
        if wanted != "main" {
            let inner = (start..start + size)
                .find(|&a| reference_frames(&reference, a).len() > 1)
                .unwrap_or_else(|| panic!("an inlined frame in {wanted}"));
            probes.push(inner);
        }
    }
    for address in probes {
        let ours: Vec<_> = image
            .dwarf_frames_at(address)
            .into_iter()
            .map(|f| (f.raw_name, base_name(&f.file.unwrap_or_default()), f.line))
            .collect();
        assert_eq!(
            ours,
            binutils_frames(program, address),
            "frames at {address:#x} of {}",
            program.display()
        );
    }
}

/// Three variants of the program: compressed debug sections (the lazy path on a
/// decompressed `.debug_info`); the same file with its `.debug_aranges` renamed away
/// (whole-file context only); and an LTO build, whose units refer into each other (the
/// lazy path declines those units).
#[test]
fn program_of_three_units_named_as_the_whole_file_and_binutils_name_it() {
    let dir = std::env::temp_dir().join(format!("cpiflame-dwarf-units-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // -gz and the linker flag: the debug sections are zlib-compressed in the output.
    let flags = ["-g", "-O2", "-gz", "-Wl,--compress-debug-sections=zlib"];
    let Some(program) = build(&dir, "units", &flags) else {
        return;
    };
    let bytes = std::fs::read(&program).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let info = file.section_by_name(".debug_info").expect(".debug_info");
    assert_ne!(
        info.compressed_file_range().unwrap().format,
        object::CompressionFormat::None,
        ".debug_info is compressed"
    );
    assert!(
        file.section_by_name(".debug_aranges").is_some(),
        "GCC writes .debug_aranges, which the lazy path reads"
    );
    check_program(&program, true);

    // One byte of the section's name changed: gimli finds no `.debug_aranges`.
    let name = b".debug_aranges\0";
    let at = bytes
        .windows(name.len())
        .position(|w| w == name)
        .expect("the section name in .shstrtab");
    let mut renamed = bytes.clone();
    renamed[at + name.len() - 2] = b'z';
    let no_aranges = dir.join("units-no-aranges");
    std::fs::write(&no_aranges, &renamed).unwrap();
    let file = object::File::parse(&*renamed).unwrap();
    assert!(file.section_by_name(".debug_aranges").is_none());
    check_program(&no_aranges, true);

    let Some(lto) = build(&dir, "units-lto", &["-g", "-O2", "-flto"]) else {
        return;
    };
    assert!(
        refers_across_units(&dwarf_sections(&std::fs::read(&lto).unwrap())),
        "GCC's LTO output refers across units (DW_FORM_ref_addr)"
    );
    // Not against binutils: for LTO output it names the file of a unit's line table
    // `<artificial>` (the unit's DW_AT_name), where addr2line (either context) gives `b.c`.
    check_program(&lto, false);
    let _ = std::fs::remove_dir_all(&dir);
}
