//! Kernel symbols: from a kallsyms text the user gives (`--kallsyms`, e.g. copied from the
//! machine that recorded the file), from the copy perf's build-id cache keeps of the recording
//! kernel's (when it provably matches the recording), or from `/proc/kallsyms` when the file
//! was recorded on this machine (checked by the kernel's build id, or by host name and
//! release).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::shared::SharedBytes;
use crate::source::{HostSource, Source};

/// Text symbols of the running kernel and its modules, sorted by address. Names are read
/// where they lie in a mapped file, or kept in one string, and modules once each:
/// /proc/kallsyms has over a hundred thousand symbols, and a string allocation per symbol
/// cost more memory than the text itself.
pub struct Kallsyms {
    /// Address, where the name starts in `names`, and the module (index into `modules` plus
    /// one; 0 for the kernel image).
    symbols: Vec<KernelSymbol>,
    names: Names,
    modules: Vec<Box<str>>,
    /// Module name -> its index in `modules` plus one, while parsing (a file given with
    /// `--kallsyms` may name any number of modules).
    module_ids: HashMap<Box<str>, u32>,
    /// The address of `_text`, where the kernel image's code starts (KASLR moves it).
    text: Option<u64>,
}

/// 16 bytes: the name's end is found when it is read (a name ends at a tab, space or line
/// end, in the file as in the copy).
#[derive(Clone, Copy)]
struct KernelSymbol {
    addr: u64,
    name: u32,
    module: u32,
}

/// Where the names lie: the mapped kallsyms file itself, or a copy of the names of a text
/// that was streamed (/proc/kallsyms), one per line.
enum Names {
    Mapped(SharedBytes),
    Copied(String),
}

impl Names {
    fn bytes(&self) -> &[u8] {
        match self {
            Names::Mapped(bytes) => bytes,
            Names::Copied(text) => text.as_bytes(),
        }
    }

    /// The name starting at `at`.
    fn at(&self, at: u32) -> &str {
        let rest = self.bytes().get(at as usize..).unwrap_or_default();
        let end = rest
            .iter()
            .position(|b| matches!(b, b'\t' | b'\n' | b' ' | b'\r'))
            .unwrap_or(rest.len());
        // Checked to be UTF-8 when the line was added.
        std::str::from_utf8(&rest[..end]).unwrap_or_default()
    }
}

impl Kallsyms {
    /// Parses `path` (normally `/proc/kallsyms`). `None` when unreadable or when addresses are
    /// hidden (all zero, `kernel.kptr_restrict`).
    pub fn load(path: &Path) -> Option<Kallsyms> {
        Self::load_from(&HostSource, path)
    }

    /// Reads kernel symbols at `path` from `source`, as [`Kallsyms::load`] does from the host.
    pub fn load_from(source: &dyn Source, path: &Path) -> Option<Kallsyms> {
        let mut k = Kallsyms::empty();
        match source.map(path) {
            // A regular file (a copy in perf's build-id cache): parsed where it lies, its
            // names read from there when a frame is named.
            Ok(bytes) if !bytes.is_empty() && u32::try_from(bytes.len()).is_ok() => {
                let base = bytes.as_ptr() as usize;
                bytes
                    .split(|&b| b == b'\n')
                    .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
                    .filter_map(|line| std::str::from_utf8(line).ok())
                    .for_each(|line| k.add_line(line, Some(base)));
                k.names = Names::Mapped(bytes);
            }
            // /proc/kallsyms has no size to map: generated as it is read.
            _ => source
                .for_each_line(path, &mut |line| k.add_line(line, None))
                .ok()?,
        }
        let k = k.finish()?;
        if let Names::Mapped(bytes) = &k.names {
            // Parsed: only the lines of the names hit are read again.
            bytes.release_pages(0..bytes.len());
        }
        Some(k)
    }

    /// Parses kallsyms text: `address type name [module]` per line.
    pub fn parse(text: &str) -> Option<Kallsyms> {
        let mut k = Kallsyms::empty();
        text.lines().for_each(|line| k.add_line(line, None));
        k.finish()
    }

    fn empty() -> Kallsyms {
        Kallsyms {
            symbols: Vec::new(),
            names: Names::Copied(String::new()),
            modules: Vec::new(),
            module_ids: HashMap::new(),
            text: None,
        }
    }

    /// Adds the symbol of one kallsyms line when it is a text symbol with an address. `mapped`
    /// is the address of the mapped file the line lies in; without it the name is copied.
    fn add_line(&mut self, line: &str, mapped: Option<usize>) {
        // Fields are separated by one space, the module by a tab: ASCII, split as bytes.
        let mut words = line.split([' ', '\t']).filter(|w| !w.is_empty());
        let (Some(addr), Some(kind), Some(name)) = (words.next(), words.next(), words.next())
        else {
            return;
        };
        if !matches!(kind, "t" | "T" | "w" | "W") {
            return;
        }
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            return;
        };
        if addr == 0 {
            return;
        }
        if name == "_text" {
            self.text = Some(addr);
        }
        let module = match words.next() {
            None => 0,
            Some(m) => {
                let m = m.trim_start_matches('[').trim_end_matches(']');
                // Module symbols come grouped by module: the last one is nearly always it.
                match self.modules.last() {
                    Some(last) if &**last == m => self.modules.len(),
                    _ => match self.module_ids.get(m) {
                        Some(&id) => id as usize,
                        None => {
                            self.modules.push(m.into());
                            self.module_ids.insert(m.into(), self.modules.len() as u32);
                            self.modules.len()
                        }
                    },
                }
            }
        };
        let at = match (mapped, &mut self.names) {
            (Some(base), _) => (name.as_ptr() as usize).checked_sub(base),
            (None, Names::Copied(names)) => {
                let at = names.len();
                names.push_str(name);
                names.push('\n');
                Some(at)
            }
            (None, Names::Mapped(_)) => None,
        };
        let Some(name) = at.and_then(|at| u32::try_from(at).ok()) else {
            return;
        };
        self.symbols.push(KernelSymbol {
            addr,
            name,
            module: module as u32,
        });
    }

    /// Sorts what was added; `None` when nothing was (unreadable, or addresses hidden).
    fn finish(mut self) -> Option<Kallsyms> {
        if self.symbols.is_empty() {
            return None;
        }
        // Of several names at one address, the one listed last, as perf shows it: perf reads
        // kallsyms without sizes, gives each symbol the room up to the next one, so that only
        // the last name at an address has any, and then keeps the alias with a size
        // (`__x64_sys_sync`, not `__do_sys_sync` or `__ia32_sys_sync`). Where the names lie
        // (`name`) is the order of listing.
        if self.symbols.is_sorted_by_key(|s| s.addr) {
            // The kernel lists its symbols by address: no sort of a hundred thousand symbols.
            self.symbols.dedup_by(|later, kept| {
                let alias = later.addr == kept.addr;
                if alias {
                    *kept = *later;
                }
                alias
            });
        } else {
            self.symbols
                .sort_unstable_by_key(|s| (s.addr, std::cmp::Reverse(s.name)));
            self.symbols.dedup_by_key(|s| s.addr);
        }
        self.symbols.shrink_to_fit();
        if let Names::Copied(names) = &mut self.names {
            names.shrink_to_fit();
        }
        self.module_ids = HashMap::new();
        Some(self)
    }

    /// The address of `_text`: the kernel image's code, where perf's kernel map starts.
    pub fn text(&self) -> Option<u64> {
        self.text
    }

    /// Whether these symbols place every loaded module where `/proc/modules` text
    /// (`name size refs deps state address`) says it is: no module missing, none extra, and
    /// each module's functions inside its memory (hidden addresses: not shown to be).
    fn modules_match(&self, proc_modules: &str) -> bool {
        let mut spans: HashMap<&str, (u64, u64)> = HashMap::new();
        for s in &self.symbols {
            let module = s
                .module
                .checked_sub(1)
                .and_then(|m| self.modules.get(m as usize))
                .map(|m| &**m);
            // Trampolines and BPF programs (`[__builtin__ftrace]`, `[bpf]`) are listed as
            // modules that /proc/modules does not have.
            let real = |m: &&str| !m.starts_with("__builtin__") && *m != "bpf";
            if let Some(m) = module.filter(real) {
                let span = spans.entry(m).or_insert((s.addr, s.addr));
                *span = (span.0.min(s.addr), span.1.max(s.addr));
            }
        }
        let mut seen = 0;
        for line in proc_modules.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let (Some(name), Some(size), Some(base)) = (words.first(), words.get(1), words.get(5))
            else {
                continue;
            };
            let Some(&(low, high)) = spans.get(name) else {
                return false;
            };
            seen += 1;
            let base = u64::from_str_radix(base.trim_start_matches("0x"), 16).unwrap_or(0);
            let size: u64 = size.parse().unwrap_or(0);
            // Addresses read as zero without privilege: where a module lies cannot be checked
            // (another boot may have loaded the same modules in another order).
            if base == 0 || low < base || high >= base.saturating_add(size) {
                return false;
            }
        }
        seen == spans.len()
    }

    /// Name and module (`None` for the kernel image) of the function at `addr`.
    pub fn lookup(&self, addr: u64) -> Option<(&str, Option<&str>)> {
        let i = self.symbols.partition_point(|s| s.addr <= addr);
        let s = self.symbols.get(i.checked_sub(1)?)?;
        let name = self.names.at(s.name);
        let module = s
            .module
            .checked_sub(1)
            .and_then(|m| self.modules.get(m as usize));
        Some((name, module.map(|m| &**m)))
    }
}

/// Where a recording's kernel symbols may come from, tried in this order.
#[derive(Clone, Debug, Default)]
pub struct KernelSymbolFiles {
    /// `--kallsyms FILE`: used as it is; the user vouches for it.
    pub given: Option<PathBuf>,
    /// The copy of the recording kernel's kallsyms in perf's build-id cache
    /// (`~/.debug/[kernel.kallsyms]/BUILD_ID/kallsyms`, written by `perf record` and
    /// `cpiflame record`). A regular file reads in milliseconds where generating
    /// /proc/kallsyms costs the kernel tens; it is used only when its `_text` is where the
    /// recording's kernel map starts (the same boot's KASLR slide) and, for a recording made
    /// here, when it places the loaded modules where `/proc/modules` does.
    pub cached: Option<PathBuf>,
    /// The running kernel's (`/proc/kallsyms`): only for a file recorded on this machine.
    pub running: Option<PathBuf>,
}

impl KernelSymbolFiles {
    /// Whether any source may name kernel frames.
    pub fn any(&self) -> bool {
        self.given.is_some() || self.cached.is_some() || self.running.is_some()
    }

    /// The kernel symbols for a recording whose kernel map starts at one of `kernel_starts`.
    pub fn load(&self, source: &dyn Source, kernel_starts: &[u64]) -> Option<Kallsyms> {
        if let Some(given) = &self.given {
            return Kallsyms::load_from(source, given);
        }
        if let Some(cached) = &self.cached {
            let usable = |k: &Kallsyms| {
                k.text().is_some_and(|t| kernel_starts.contains(&t))
                    && (self.running.is_none()
                        || k.modules_match(
                            &source
                                .read_text(Path::new("/proc/modules"))
                                .unwrap_or_default(),
                        ))
            };
            if let Some(k) = Kallsyms::load_from(source, cached).filter(usable) {
                return Some(k);
            }
        }
        Kallsyms::load_from(source, self.running.as_ref()?)
    }
}

/// Finds the NT_GNU_BUILD_ID note in a sequence of native-endian ELF notes.
pub fn gnu_build_id_note(mut notes: &[u8]) -> Option<Vec<u8>> {
    let align4 = |n: usize| n.checked_add(3).map(|v| v & !3);
    while notes.len() >= 12 {
        let word = |i: usize| {
            u32::from_ne_bytes([notes[i], notes[i + 1], notes[i + 2], notes[i + 3]]) as usize
        };
        let (namesz, descsz, kind) = (word(0), word(4), word(8));
        let name_end = 12usize.checked_add(align4(namesz)?)?;
        let desc_end = name_end.checked_add(align4(descsz)?)?;
        if desc_end > notes.len() {
            return None;
        }
        if kind == 3 && notes.get(12..12 + namesz)? == b"GNU\0" {
            return Some(notes[name_end..name_end + descsz].to_vec());
        }
        notes = &notes[desc_end..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_up_nearest_lower_text_symbol() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\nffffffff81000100 t helper\nffffffff81000200 D data_sym\nffffffffc0000000 t mod_fn\t[ext4]\n",
        )
        .unwrap();
        assert_eq!(k.lookup(0xffffffff81000150), Some(("helper", None)));
        assert_eq!(k.lookup(0xffffffff81000250), Some(("helper", None)));
        assert_eq!(k.lookup(0xffffffffc0000010), Some(("mod_fn", Some("ext4"))));
        assert_eq!(k.lookup(0x1000), None);
        assert!(Kallsyms::parse("0000000000000000 T _stext\n").is_none());
    }

    #[test]
    fn of_aliases_at_one_address_the_last_listed_names_it_as_perf_shows() {
        // Listed by address, as the kernel lists them, and shuffled (a hand-made file).
        let listed = "ffffffff81000000 T _text\nffffffff81000100 t __do_sys_x\nffffffff81000100 T __ia32_sys_x\nffffffff81000100 T __x64_sys_x\nffffffff81000200 t next\n";
        let shuffled = "ffffffff81000200 t next\nffffffff81000100 t __do_sys_x\nffffffff81000000 T _text\nffffffff81000100 T __ia32_sys_x\nffffffff81000100 T __x64_sys_x\n";
        for text in [listed, shuffled] {
            let k = Kallsyms::parse(text).unwrap();
            assert_eq!(
                k.lookup(0xffffffff81000150),
                Some(("__x64_sys_x", None)),
                "{text}"
            );
            assert_eq!(k.lookup(0xffffffff81000050), Some(("_text", None)));
            assert_eq!(k.lookup(0xffffffff81000250), Some(("next", None)));
            assert_eq!(k.text(), Some(0xffffffff81000000));
            assert_eq!(k.symbols.len(), 3);
        }
    }

    #[test]
    fn a_mapped_copy_with_crlf_line_ends_reads_as_one_with_lf() {
        let path =
            std::env::temp_dir().join(format!("cpiflame-kallsyms-crlf-{}", std::process::id()));
        std::fs::write(
            &path,
            "ffffffff81000000 T _text\r\nffffffff81000100 t helper\r\nffffffffc0000000 t mod_fn\t[ext4]\r\n",
        )
        .unwrap();
        let k = Kallsyms::load(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(k.names, Names::Mapped(_)));
        assert_eq!(k.text(), Some(0xffffffff81000000));
        assert_eq!(k.lookup(0xffffffff81000150), Some(("helper", None)));
        assert_eq!(k.lookup(0xffffffffc0000010), Some(("mod_fn", Some("ext4"))));
    }

    #[test]
    fn modules_named_again_after_others_keep_their_names() {
        let k = Kallsyms::parse(
            "ffffffffc0000000 t a [ext4]\n\
             ffffffffc0001000 t b [xfs]\n\
             ffffffffc0002000 t c [ext4]\n\
             ffffffffc0003000 t d [xfs]\n",
        )
        .unwrap();
        assert_eq!(k.lookup(0xffffffffc0000010), Some(("a", Some("ext4"))));
        assert_eq!(k.lookup(0xffffffffc0001010), Some(("b", Some("xfs"))));
        assert_eq!(k.lookup(0xffffffffc0002010), Some(("c", Some("ext4"))));
        assert_eq!(k.lookup(0xffffffffc0003010), Some(("d", Some("xfs"))));
        assert_eq!(k.modules.len(), 2);
    }

    #[test]
    fn finds_gnu_build_id_among_notes() {
        let mut notes = Vec::new();
        // A Xen note first, then the GNU build id.
        for (name, kind, desc) in [
            (&b"Xen\0"[..], 1u32, &[1u8, 2, 3, 4][..]),
            (b"GNU\0", 3, &[0xab; 20]),
        ] {
            notes.extend_from_slice(&(name.len() as u32).to_ne_bytes());
            notes.extend_from_slice(&(desc.len() as u32).to_ne_bytes());
            notes.extend_from_slice(&kind.to_ne_bytes());
            notes.extend_from_slice(name);
            notes.extend_from_slice(desc);
        }
        assert_eq!(gnu_build_id_note(&notes), Some(vec![0xab; 20]));
        assert_eq!(gnu_build_id_note(&notes[..20]), None);
    }
}
