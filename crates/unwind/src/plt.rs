//! Names for the stubs of an ELF file's procedure linkage table, `name@plt` as perf names
//! them: no symbol table covers them, yet a call into a shared library passes through one,
//! and an LBR call stack shows it (the call's target is the stub, which jumps on).
//!
//! Which function each stub jumps to is said by the PLT's relocations (`.rela.plt` or
//! `.rel.plt`): the n-th relocation, in the order of the GOT slots they fill, belongs to the
//! n-th stub. The stubs are in `.plt.sec` when the file has one (x86 with IBT: `.plt` then
//! holds only the lazy-binding trampolines), else in `.plt` after its header.
//!
//! x86-64's `.plt.got` holds stubs for functions whose GOT slot is also used as data (their
//! address is taken; libc's `free` and `malloc`): each jumps through a slot that a
//! `GLOB_DAT` relocation of `.rela.dyn` fills, and the stub is named by that relocation's
//! symbol, as objdump labels it.
//!
//! Works from the file's bytes; never panics or allocates more than the file's own tables
//! hold, whatever the bytes say: a stub table is at most one entry per relocation that fits
//! in the stub section.

use object::elf::{EM_386, EM_AARCH64, EM_X86_64, SHT_NOBITS};
use object::read::elf::{FileHeader, Rel, Rela, SectionHeader, Sym};
use object::Endianness;

use crate::demangle::demangle;

/// One stub: its stated address range and its name (`puts@plt`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PltStub {
    pub start: u64,
    pub end: u64,
    pub name: Box<str>,
}

/// The stated address ranges of a file's stub sections (`.plt`, `.plt.sec`) that have bytes in
/// the file (a separate debug file's are `NOBITS`): only addresses in these are looked up in
/// the stub table, which is built on first use.
pub(crate) fn plt_ranges(file: &object::File<'_>) -> Vec<std::ops::Range<u64>> {
    use object::{Object, ObjectSection};
    [".plt", ".plt.sec", ".plt.got"]
        .iter()
        .filter_map(|name| file.section_by_name(name))
        .filter(|s| s.kind() != object::SectionKind::UninitializedData && s.size() > 0)
        .map(|s| s.address()..s.address().saturating_add(s.size()))
        .collect()
}

/// The stubs of the ELF file `data`, sorted by address; empty when it has no PLT or its
/// tables are not what they should be.
pub(crate) fn plt_stubs(data: &[u8]) -> Vec<PltStub> {
    use object::elf::{FileHeader32, FileHeader64};
    use object::FileKind;
    let mut all = match FileKind::parse(data) {
        Ok(FileKind::Elf32) => stubs::<FileHeader32<Endianness>>(data).unwrap_or_default(),
        Ok(FileKind::Elf64) => {
            let mut all = stubs::<FileHeader64<Endianness>>(data).unwrap_or_default();
            all.extend(got_stubs::<FileHeader64<Endianness>>(data).unwrap_or_default());
            all
        }
        _ => Vec::new(),
    };
    all.sort_by_key(|s| s.start);
    all
}

/// x86-64's `.plt.got` stubs: each entry's `jmp *disp32(%rip)` (`ff 25`, after an `endbr64`
/// with IBT) names the GOT slot, and the `.rela.dyn` relocation of that slot its symbol.
fn got_stubs<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Option<Vec<PltStub>> {
    let header = Elf::parse(data).ok()?;
    let endian = header.endian().ok()?;
    if header.e_machine(endian) != EM_X86_64 {
        return None;
    }
    let sections = header.sections(endian, data).ok()?;
    let (_, got_plt) = sections.section_by_name(endian, b".plt.got")?;
    let bytes = got_plt.data(endian, data).ok()?;
    let (relas, link) = sections
        .section_by_name(endian, b".rela.dyn")
        .and_then(|(_, s)| s.rela(endian, data).ok().flatten())?;
    let symbols = sections.symbol_table_by_index(endian, data, link).ok()?;
    let slots: std::collections::HashMap<u64, u32> = relas
        .iter()
        .map(|r| (r.r_offset(endian).into(), r.r_sym(endian, false)))
        .collect();
    let entry = match got_plt.sh_entsize(endian).into() {
        0 => 8,
        n => n.min(64) as usize,
    };
    let start: u64 = got_plt.sh_addr(endian).into();
    let mut stubs = Vec::new();
    for (i, stub) in bytes.chunks_exact(entry).enumerate() {
        let at = start.checked_add((i * entry) as u64)?;
        let Some(p) = stub.windows(6).position(|w| w[0] == 0xff && w[1] == 0x25) else {
            continue;
        };
        let disp = i32::from_le_bytes(stub[p + 2..p + 6].try_into().ok()?);
        let slot = at
            .checked_add(p as u64 + 6)?
            .checked_add_signed(i64::from(disp))?;
        let Some(&index) = slots.get(&slot) else {
            continue;
        };
        let name = symbols
            .symbol(object::SymbolIndex(index as usize))
            .ok()
            .and_then(|s| s.name(endian, symbols.strings()).ok())
            .filter(|n| !n.is_empty());
        if let Some(name) = name {
            stubs.push(PltStub {
                start: at,
                end: at + entry as u64,
                name: format!("{}@plt", demangle(&String::from_utf8_lossy(name))).into(),
            });
        }
    }
    Some(stubs)
}

fn stubs<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Option<Vec<PltStub>> {
    let header = Elf::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, data).ok()?;
    let machine = header.e_machine(endian);
    if !matches!(machine, EM_X86_64 | EM_386 | EM_AARCH64) {
        return None;
    }
    let is_mips64el = header.is_mips64el(endian);
    let plt = sections.section_by_name(endian, b".plt").map(|(_, s)| s);
    let plt_sec = sections
        .section_by_name(endian, b".plt.sec")
        .map(|(_, s)| s);
    let has_bytes = |s: &&Elf::SectionHeader| s.sh_type(endian) != SHT_NOBITS;
    let plt = plt.filter(has_bytes)?;
    let (relocations, link) = match sections.section_by_name(endian, b".rela.plt") {
        Some((_, s)) => {
            let (relas, link) = s.rela(endian, data).ok()??;
            let list: Vec<(u64, u32)> = relas
                .iter()
                .map(|r| (r.r_offset(endian).into(), r.r_sym(endian, is_mips64el)))
                .collect();
            (list, link)
        }
        None => {
            let (_, s) = sections.section_by_name(endian, b".rel.plt")?;
            let (rels, link) = s.rel(endian, data).ok()??;
            let list: Vec<(u64, u32)> = rels
                .iter()
                .map(|r| (r.r_offset(endian).into(), r.r_sym(endian)))
                .collect();
            (list, link)
        }
    };
    let symbols = sections.symbol_table_by_index(endian, data, link).ok()?;
    // The stubs follow the GOT slots' order; IFUNC relocations are not listed in it.
    let mut relocations = relocations;
    relocations.sort_by_key(|&(offset, _)| offset);

    let entry_of = |s: &Elf::SectionHeader| match s.sh_entsize(endian).into() {
        0 => 16,
        n => n,
    };
    let (section, entry, mut at) = match plt_sec.filter(has_bytes) {
        Some(sec) if matches!(machine, EM_X86_64 | EM_386) => {
            (sec, entry_of(sec), sec.sh_addr(endian).into())
        }
        _ => {
            let entry = entry_of(plt);
            let header = if machine == EM_AARCH64 { 32 } else { entry };
            let start: u64 = plt.sh_addr(endian).into();
            let size: u64 = plt.sh_size(endian).into();
            // A PLT as long as its relocations need has no header (non-lazy binding).
            let without_header = (relocations.len() as u64).checked_mul(entry) == Some(size);
            let first = if without_header {
                start
            } else {
                start.checked_add(header)?
            };
            (plt, entry, first)
        }
    };
    let start: u64 = section.sh_addr(endian).into();
    let end = start.checked_add(section.sh_size(endian).into())?;
    let strings = symbols.strings();
    let mut stubs = Vec::new();
    for (_, index) in relocations {
        let Some(next) = at.checked_add(entry).filter(|&n| n <= end) else {
            break;
        };
        let name = symbols
            .symbol(object::SymbolIndex(index as usize))
            .ok()
            .and_then(|s| s.name(endian, strings).ok())
            .filter(|n| !n.is_empty());
        if let Some(name) = name {
            stubs.push(PltStub {
                start: at,
                end: next,
                name: format!("{}@plt", demangle(&String::from_utf8_lossy(name))).into(),
            });
        }
        at = next;
    }
    Some(stubs)
}

/// The stub of `stubs` (sorted by address) that holds stated address `svma`.
pub(crate) fn stub_at(stubs: &[PltStub], svma: u64) -> Option<&PltStub> {
    let i = stubs.partition_point(|s| s.start <= svma).checked_sub(1)?;
    stubs.get(i).filter(|s| svma < s.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_not_elf_have_no_stubs() {
        assert!(plt_stubs(b"").is_empty());
        assert!(plt_stubs(b"\x7fELF\x02\x01\x01garbage").is_empty());
    }

    #[test]
    fn a_stub_holds_its_own_bytes_only() {
        let stub = |start, name: &str| PltStub {
            start,
            end: start + 16,
            name: name.into(),
        };
        let stubs = [stub(0x1030, "a@plt"), stub(0x1050, "b@plt")];
        assert_eq!(stub_at(&stubs, 0x102f), None);
        assert_eq!(stub_at(&stubs, 0x1030).map(|s| &*s.name), Some("a@plt"));
        assert_eq!(stub_at(&stubs, 0x103f).map(|s| &*s.name), Some("a@plt"));
        assert_eq!(stub_at(&stubs, 0x1040), None);
        assert_eq!(stub_at(&stubs, 0x1055).map(|s| &*s.name), Some("b@plt"));
    }
}
