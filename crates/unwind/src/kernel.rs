//! Kernel symbols: from a kallsyms text the user gives (`--kallsyms`, e.g. copied from the
//! machine that recorded the file), from the copy perf's build-id cache keeps of the recording
//! kernel's (when it provably matches the recording), or from `/proc/kallsyms` when the file
//! was recorded on this machine (checked by the kernel's build id, or by host name and
//! release).

use std::collections::HashMap;
use std::ops::Range;
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
    module_ids: HashMap<Box<[u8]>, u32>,
    /// The address of `_text`, where the kernel image's code starts (KASLR moves it).
    text: Option<u64>,
    /// Names read from a mapped copy since its pages were last released.
    names_read: std::cell::Cell<u32>,
}

/// Names read from a mapped kallsyms copy between releases of its pages: each read maps in
/// the 64 KiB around the name, and a profile's few hundred kernel functions would otherwise
/// keep megabytes of the copy resident.
const NAMES_BETWEEN_RELEASES: u32 = 16;

/// How much of a mapped kallsyms copy is parsed before its pages are released.
const RELEASE_STEP: usize = 256 << 10;

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
    Copied(Vec<u8>),
}

impl Names {
    fn bytes(&self) -> &[u8] {
        match self {
            Names::Mapped(bytes) => bytes,
            Names::Copied(text) => text,
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
                // A mebibyte at a time (whole lines), its pages released behind: the copy
                // (5 MiB) is read once, while at startup debug info is being decompressed
                // next to it, and its pages would add to the peak.
                let mut at = 0;
                while at < bytes.len() {
                    let end = match bytes[(at + RELEASE_STEP).min(bytes.len())..]
                        .iter()
                        .position(|&b| b == b'\n')
                    {
                        Some(n) => (at + RELEASE_STEP).min(bytes.len()) + n + 1,
                        None => bytes.len(),
                    };
                    k.add_mapped_lines(&bytes, at..end);
                    bytes.release_pages(at..end);
                    at = end;
                }
                k.names = Names::Mapped(bytes);
            }
            // /proc/kallsyms has no size to map: generated as it is read.
            _ => source
                .for_each_line(path, &mut |line| k.add_line_fast(line, None))
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
        text.lines().for_each(|line| k.add_line_fast(line, None));
        k.finish()
    }

    fn empty() -> Kallsyms {
        Kallsyms {
            symbols: Vec::new(),
            names: Names::Copied(Vec::new()),
            modules: Vec::new(),
            module_ids: HashMap::new(),
            text: None,
            names_read: std::cell::Cell::new(0),
        }
    }

    /// Adds the symbols of a mapped kallsyms file: lines end at `\n` (one `\r` before it is
    /// dropped) and read as [`Kallsyms::add_line`] reads them, skipped when not UTF-8. Lines
    /// in the kernel's own layout are read in one pass over their bytes, without finding the
    /// line end, checking UTF-8 and splitting into words one after the other.
    #[cfg(test)]
    fn add_mapped(&mut self, bytes: &[u8]) {
        self.add_mapped_lines(bytes, 0..bytes.len());
    }

    /// Adds the symbols of the lines in `lines` of a mapped kallsyms file `bytes` (a range
    /// that starts at a line's start and ends after a line end or at the end): lines end at
    /// `\n` (one `\r` before it is dropped) and read as [`Kallsyms::add_line`] reads them,
    /// skipped when not UTF-8.
    fn add_mapped_lines(&mut self, bytes: &[u8], lines: Range<usize>) {
        let base = bytes.as_ptr() as usize;
        let mut rest = &bytes[lines];
        while !rest.is_empty() {
            let next = match fast_line(rest) {
                Some((fields, next)) => {
                    self.add_fast(rest, fields, Some(base));
                    next
                }
                None => {
                    let end = rest.iter().position(|&b| b == b'\n');
                    let line = &rest[..end.unwrap_or(rest.len())];
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    if let Ok(line) = std::str::from_utf8(line) {
                        self.add_line(line, Some(base));
                    }
                    end.map_or(rest.len(), |end| end + 1)
                }
            };
            rest = &rest[next..];
        }
    }

    /// [`Kallsyms::add_line`], the kernel's layout read without splitting the line into words.
    fn add_line_fast(&mut self, line: &str, mapped: Option<usize>) {
        match fast_line(line.as_bytes()) {
            Some((fields, _)) => self.add_fast(line.as_bytes(), fields, mapped),
            None => self.add_line(line, mapped),
        }
    }

    /// Adds what [`fast_line`] read of the line at the start of `rest`.
    fn add_fast(&mut self, rest: &[u8], fields: Fast, mapped: Option<usize>) {
        if let Fast::Symbol { addr, name, module } = fields {
            let module = module.map(|m| &rest[m]);
            self.add_symbol(addr, &rest[name], module, mapped);
        }
    }

    /// Adds the symbol of one kallsyms line when it is a text symbol with an address. `mapped`
    /// is the address of the mapped file the line lies in; without it the name is copied.
    fn add_line(&mut self, line: &str, mapped: Option<usize>) {
        if let Line::Text { addr, name, module } = Line::of(line) {
            self.add_symbol(addr, name.as_bytes(), module.map(str::as_bytes), mapped);
        }
    }

    /// Checks that the kallsyms text at `path` (`--kallsyms`) names a kernel function, read
    /// up to its first one: a missing, unreadable or garbage file, or a copy whose addresses
    /// were hidden, would otherwise leave every kernel frame unnamed without a word.
    pub fn check(path: &Path) -> Result<(), KallsymsError> {
        use std::io::BufRead;
        let mut text = std::io::BufReader::new(std::fs::File::open(path)?);
        let mut line = Vec::new();
        let mut hidden = false;
        loop {
            line.clear();
            if text.read_until(b'\n', &mut line)? == 0 {
                return Err(match hidden {
                    true => KallsymsError::Hidden,
                    false => KallsymsError::NoFunctions,
                });
            }
            let Ok(line) = std::str::from_utf8(&line) else {
                continue;
            };
            match Line::of(line.trim_end_matches(['\n', '\r'])) {
                Line::Text { .. } => return Ok(()),
                Line::Hidden => hidden = true,
                Line::Other => {}
            }
        }
    }

    /// Adds the text symbol `name` at `addr` (not zero); `module` is the line's fourth word.
    /// Both are words of a line that is UTF-8.
    fn add_symbol(&mut self, addr: u64, name: &[u8], module: Option<&[u8]>, mapped: Option<usize>) {
        if name == b"_text" {
            self.text = Some(addr);
        }
        let module = match module {
            None => 0,
            Some(mut m) => {
                while let [b'[', inner @ ..] = m {
                    m = inner;
                }
                while let [inner @ .., b']'] = m {
                    m = inner;
                }
                // Module symbols come grouped by module: the last one is nearly always it.
                match self.modules.last() {
                    Some(last) if last.as_bytes() == m => self.modules.len(),
                    _ => match self.module_ids.get(m) {
                        Some(&id) => id as usize,
                        None => {
                            // UTF-8: a word of a UTF-8 line, cut at ASCII brackets.
                            self.modules.push(String::from_utf8_lossy(m).into());
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
                names.extend_from_slice(name);
                names.push(b'\n');
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
        if let Names::Mapped(bytes) = &self.names {
            let read = self.names_read.get() + 1;
            if read >= NAMES_BETWEEN_RELEASES {
                bytes.release_pages(0..bytes.len());
                self.names_read.set(0);
            } else {
                self.names_read.set(read);
            }
        }
        let name = self.names.at(s.name);
        let module = s
            .module
            .checked_sub(1)
            .and_then(|m| self.modules.get(m as usize));
        Some((name, module.map(|m| &**m)))
    }
}

/// What a kallsyms line in the kernel's own layout holds, as [`Kallsyms::add_line`] reads it.
#[derive(Debug)]
enum Fast {
    /// Not a text symbol with an address.
    Skip,
    /// A text symbol: its address (not zero), and where its name and its module (the word
    /// after the name) lie.
    Symbol {
        addr: u64,
        name: Range<usize>,
        module: Option<Range<usize>>,
    },
}

/// Hex digits' values; `NOT_HEX` for other bytes.
const HEX: [u8; 256] = {
    let mut t = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};
const NOT_HEX: u8 = 0xff;

/// Bytes that end a word in the kernel's layout (separators, line ends), and non-ASCII bytes,
/// whose line is left to the general reading (it must be UTF-8).
const WORD_END: [bool; 256] = {
    let mut t = [false; 256];
    t[b' ' as usize] = true;
    t[b'\t' as usize] = true;
    t[b'\n' as usize] = true;
    t[b'\r' as usize] = true;
    let mut i = 0x80;
    while i < 256 {
        t[i] = true;
        i += 1;
    }
    t
};

/// Where the word starting at `from` ends: at the first byte of [`WORD_END`] or the end.
fn word_end(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let mut at = from;
    // Eight bytes at a time while none is below `!` (separators, line ends) or above ASCII:
    // the top bit of a byte of `x - 0x21...` is set for a byte below 0x21 (or right after
    // one, by its borrow), that of `x` for a byte above 0x7f.
    while let Some(eight) = bytes
        .get(at..at + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
    {
        let x = u64::from_le_bytes(eight);
        let found = (x.wrapping_sub(ONES * 0x21) | x) & (ONES * 0x80);
        if found != 0 {
            // The first byte found is one of those (a borrow only follows one): a word end
            // unless it is another control character.
            at += found.trailing_zeros() as usize / 8;
            if WORD_END[bytes[at] as usize] {
                return at;
            }
            break;
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| WORD_END[b as usize])
        .map_or(bytes.len(), |n| at + n)
}

/// The value of eight hex digits read as a little-endian word (the first digit in the low
/// byte); `None` unless all eight are hex digits.
fn hex8(x: u64) -> Option<u64> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const TOP: u64 = ONES * 0x80;
    if x & TOP != 0 {
        return None;
    }
    // With every byte ASCII, adding to each cannot carry into the next: the top bit of a
    // byte of `x + (0x80 - lo)` says that it is at least `lo`.
    let at_least = |x: u64, lo: u64| x + ONES * (0x80 - lo);
    let digit = at_least(x, 0x30) & !at_least(x, 0x3a);
    let lower = x | (ONES * 0x20);
    let letter = at_least(lower, 0x61) & !at_least(lower, 0x67);
    if (digit | letter) & TOP != TOP {
        return None;
    }
    // '0'-'9' keep their low nibble; letters ('A' or 'a' is 0x41 or 0x61) add 9 to theirs.
    let nibbles = (x & (ONES * 0xf)) + 9 * ((x >> 6) & ONES);
    // The first digit the most significant: two nibbles to a byte, then bytes together.
    let v = nibbles.swap_bytes();
    let v = (v | v >> 4) & 0x00ff_00ff_00ff_00ff;
    let v = (v | v >> 8) & 0x0000_ffff_0000_ffff;
    Some((v | v >> 16) & 0xffff_ffff)
}

/// The value of the hex digits `rest` starts with and their number, read up to 17 digits.
fn address(rest: &[u8]) -> (u64, usize) {
    // 64-bit kernels print 16 digits: read without a branch per digit.
    let eight = |at: usize| {
        let bytes = rest.get(at..at + 8)?;
        hex8(u64::from_le_bytes(<[u8; 8]>::try_from(bytes).ok()?))
    };
    if let (Some(high), Some(low)) = (eight(0), eight(8)) {
        if rest.get(16).is_none_or(|&b| HEX[b as usize] == NOT_HEX) {
            return (high << 32 | low, 16);
        }
    }
    let mut addr = 0u64;
    let mut i = 0;
    // At most 16 digits: no overflow; longer addresses (leading zeros) are left over.
    while let Some(&b) = rest.get(i).filter(|_| i <= 16) {
        let digit = HEX[b as usize];
        if digit == NOT_HEX {
            break;
        }
        addr = addr << 4 | u64::from(digit);
        i += 1;
    }
    (addr, i)
}

/// Reads the line at the start of `rest` when it is laid out as the kernel writes it: 1 to
/// Why a kallsyms text given with `--kallsyms` cannot name kernel frames.
#[derive(Debug, thiserror::Error)]
pub enum KallsymsError {
    /// It cannot be opened or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// No line is a text symbol (`ADDRESS t NAME [MODULE]`, type t, T, w or W).
    #[error("no kernel function in it (no `ADDRESS T NAME` line, as /proc/kallsyms has)")]
    NoFunctions,
    /// Its text symbols are all at address 0: copied while `kernel.kptr_restrict` hid them.
    #[error("every kernel function is at address 0 (copied while kernel.kptr_restrict hid the addresses: copy /proc/kallsyms as root)")]
    Hidden,
}

/// One line of kallsyms text, as [`Kallsyms::add_line`] reads it.
enum Line<'a> {
    /// A text symbol with an address: its address, name and module word.
    Text {
        addr: u64,
        name: &'a str,
        module: Option<&'a str>,
    },
    /// A text symbol at address 0 (addresses hidden).
    Hidden,
    /// Anything else (data symbols, other text).
    Other,
}

impl<'a> Line<'a> {
    fn of(line: &'a str) -> Line<'a> {
        // Fields are separated by one space, the module by a tab: ASCII, split as bytes.
        let mut words = line.split([' ', '\t']).filter(|w| !w.is_empty());
        let (Some(addr), Some(kind), Some(name)) = (words.next(), words.next(), words.next())
        else {
            return Line::Other;
        };
        if !matches!(kind, "t" | "T" | "w" | "W") {
            return Line::Other;
        }
        match u64::from_str_radix(addr, 16) {
            Ok(0) => Line::Hidden,
            Ok(addr) => Line::Text {
                addr,
                name,
                module: words.next(),
            },
            Err(_) => Line::Other,
        }
    }
}

/// 16 hex digits, one space, a one-byte type, one space, then for a text symbol an ASCII
/// name and optionally one space or tab and one last ASCII word; the line ends at `\n`,
/// `\r\n` or the end of `rest`. Returns what [`Kallsyms::add_line`] would read of it and where
/// the next line starts; `None` for any other layout (leading, repeated or trailing
/// separators, more words, longer addresses, other bytes), left to the general reading.
fn fast_line(rest: &[u8]) -> Option<(Fast, usize)> {
    let (addr, i) = address(rest);
    if i == 0 || i > 16 || rest.get(i) != Some(&b' ') {
        return None;
    }
    let kind = *rest.get(i + 1)?;
    if WORD_END[kind as usize] || rest.get(i + 2) != Some(&b' ') {
        return None;
    }
    if !matches!(kind, b't' | b'T' | b'w' | b'W') {
        // Not read further, UTF-8 or not: skipped either way.
        let next = rest[i + 2..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(rest.len(), |n| i + 2 + n + 1);
        return Some((Fast::Skip, next));
    }
    // The end of the word starting at `from` and whether the line ends there (and where the
    // next one starts); `None` for a byte left to the general reading.
    let word = |from: usize| -> Option<(usize, Option<usize>)> {
        let end = word_end(rest, from);
        match rest.get(end) {
            None => Some((end, Some(end))),
            Some(b'\n') => Some((end, Some(end + 1))),
            Some(b'\r') if rest.get(end + 1) == Some(&b'\n') => Some((end, Some(end + 2))),
            Some(b' ' | b'\t') => Some((end, None)),
            Some(_) => None,
        }
    };
    let start = i + 3;
    let (end, line_end) = word(start)?;
    if end == start {
        return None;
    }
    let (module, next) = match line_end {
        Some(next) => (None, next),
        None => {
            let m = end + 1;
            let (m_end, line_end) = word(m)?;
            if m_end == m {
                return None;
            }
            (Some(m..m_end), line_end?)
        }
    };
    if addr == 0 {
        return Some((Fast::Skip, next));
    }
    let fields = Fast::Symbol {
        addr,
        name: start..end,
        module,
    };
    Some((fields, next))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::HostSource;

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

    /// Kallsyms text with every layout the general reading accepts or skips, and what it
    /// holds, written out by hand: `(address, name, module)` by address.
    const EDGE_CASES: &str = "ffffffff81000000 T _text\n\
        ffffffff81000010 t plain\n\
        ffffffff81000020 T upper_type\n\
        FFFFFFFF81000030 t upper_hex\n\
        ffffffff81000040 W weak_upper\n\
        ffffffff81000050 w weak_lower\n\
        ffffffff81000060 D data_skipped\n\
        ffffffff81000070 r rodata_skipped\n\
        0000000000000000 T zero_skipped\n\
        81000080 t short_address\n\
        ffffffff81000090  t  double_spaced\n\
        ffffffff810000a0\tt\ttabbed\n\
        \x20 ffffffff810000b0 t leading_spaces\n\
        ffffffff810000c0 t trailing_space \n\
        ffffffff810000d0 t crlf_line\r\n\
        ffffffff810000e8 t na\u{ef}ve\n\
        ffffffff810000f0 t \n\
        ffffffff81000100 t\n\
        ffffffff81000110\n\
        \n\
        ffffffffc0000000 t bpf_prog_6deef7357e7b4530_sd_fw_ingress\t[bpf]\n\
        ffffffffc0001000 t ftrace_trampoline\t[__builtin__ftrace]\n\
        ffffffffc0002000 t ext4_fn\t[ext4]\n\
        ffffffffc0003000 t ext4_spaced [ext4]\n\
        ffffffffc0004000 t xfs_fn\t[xfs]\textra_word\n\
        ffffffffc0005000 t ext4_again\t[[ext4]]\n\
        ffffffffc0006000 T unbracketed\tmodname\n\
        ffffffffc0006800 t trailing_tab\t[xfs]\t\n\
        ffffffffffffffff0 t overflow_skipped\n\
        0ffffffff81000120 t seventeen_digits\n\
        +ffffffff81000130 t plus_sign\n\
        ffffffff8100g140 t not_hex_skipped\n\
        ffffffff81000150 tt long_type_skipped\n\
        ffffffff81000160 t cr_inside\rrest\n\
        ffffffffc0007000 t last_line\t[last]";

    const EDGE_SYMBOLS: &[(u64, &str, Option<&str>)] = &[
        (0x81000080, "short_address", None),
        (0xffffffff81000000, "_text", None),
        (0xffffffff81000010, "plain", None),
        (0xffffffff81000020, "upper_type", None),
        (0xffffffff81000030, "upper_hex", None),
        (0xffffffff81000040, "weak_upper", None),
        (0xffffffff81000050, "weak_lower", None),
        (0xffffffff81000090, "double_spaced", None),
        (0xffffffff810000a0, "tabbed", None),
        (0xffffffff810000b0, "leading_spaces", None),
        (0xffffffff810000c0, "trailing_space", None),
        (0xffffffff810000d0, "crlf_line", None),
        (0xffffffff810000e8, "na\u{ef}ve", None),
        (0xffffffff81000120, "seventeen_digits", None),
        (0xffffffff81000130, "plus_sign", None),
        // A name is read up to a carriage return.
        (0xffffffff81000160, "cr_inside", None),
        (
            0xffffffffc0000000,
            "bpf_prog_6deef7357e7b4530_sd_fw_ingress",
            Some("bpf"),
        ),
        (
            0xffffffffc0001000,
            "ftrace_trampoline",
            Some("__builtin__ftrace"),
        ),
        (0xffffffffc0002000, "ext4_fn", Some("ext4")),
        (0xffffffffc0003000, "ext4_spaced", Some("ext4")),
        (0xffffffffc0004000, "xfs_fn", Some("xfs")),
        (0xffffffffc0005000, "ext4_again", Some("ext4")),
        (0xffffffffc0006000, "unbracketed", Some("modname")),
        (0xffffffffc0006800, "trailing_tab", Some("xfs")),
        (0xffffffffc0007000, "last_line", Some("last")),
    ];

    fn listed(k: &Kallsyms) -> Vec<(u64, &str, Option<&str>)> {
        k.symbols
            .iter()
            .map(|s| {
                let (name, module) = k.lookup(s.addr).unwrap();
                (s.addr, name, module)
            })
            .collect()
    }

    fn check_edge_cases(k: &Kallsyms) {
        assert_eq!(listed(k), EDGE_SYMBOLS);
        let modules: Vec<&str> = k.modules.iter().map(|m| &**m).collect();
        let expected = ["bpf", "__builtin__ftrace", "ext4", "xfs", "modname", "last"];
        assert_eq!(modules, expected);
        assert_eq!(k.text(), Some(0xffffffff81000000));
    }

    #[test]
    fn reads_every_layout_as_the_general_split_does_in_text_and_in_a_mapped_file() {
        let k = Kallsyms::parse(EDGE_CASES).unwrap();
        assert!(matches!(k.names, Names::Copied(_)));
        check_edge_cases(&k);

        // The mapped file may hold lines that are not UTF-8: skipped whole, whatever field
        // the byte is in; and its last line may end with a carriage return.
        let mut file = b"ffffffff810000e0 t bad_\xff_name\n\
            ffffffffc0008000 t good_name\t[\xfe]\n\
            ffffffff810000e4 \xc3 odd_type\n"
            .to_vec();
        file.extend_from_slice(EDGE_CASES.as_bytes());
        file.extend_from_slice(b"\r");
        let path =
            std::env::temp_dir().join(format!("cpiflame-kallsyms-edges-{}", std::process::id()));
        std::fs::write(&path, &file).unwrap();
        let k = Kallsyms::load_from(&HostSource, &path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(k.names, Names::Mapped(_)));
        check_edge_cases(&k);
    }

    /// A copy of several mebibytes is parsed a mebibyte at a time, whole lines, pages
    /// released behind: every symbol is the one `parse` finds in the same text, names and
    /// modules included, with CRLF lines, odd lines and modules on both sides of the steps.
    #[test]
    fn large_copy_parsed_in_steps_as_a_whole() {
        let mut text = String::new();
        let mut i = 0u64;
        while text.len() < 3 * RELEASE_STEP + 1000 {
            let addr = 0xffff_ffff_8100_0000 + i * 16;
            let end = if i % 7 == 0 { "\r\n" } else { "\n" };
            match i % 5 {
                0 => text.push_str(&format!("{addr:016x} T sym_{i}{end}")),
                1 => text.push_str(&format!("{addr:016x} t sym_{i}\t[mod_{}]{end}", i % 3)),
                2 => text.push_str(&format!("{addr:x}  t  spaced_{i}{end}")),
                3 => text.push_str(&format!("{addr:016x} d data_{i}{end}")),
                _ => text.push_str(&format!("{addr:016x} W weak_{i}{end}")),
            }
            i += 1;
        }
        let path =
            std::env::temp_dir().join(format!("cpiflame-kallsyms-steps-{}", std::process::id()));
        std::fs::write(&path, &text).unwrap();
        let mapped = Kallsyms::load_from(&HostSource, &path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let whole = Kallsyms::parse(&text).unwrap();
        assert!(matches!(mapped.names, Names::Mapped(_)));
        assert_eq!(mapped.symbols.len(), whole.symbols.len());
        // Four of five lines are text symbols with an address (data symbols are not).
        assert_eq!(
            mapped.symbols.len() as u64,
            i - i / 5 - u64::from(i % 5 > 3)
        );
        let addrs = |k: &Kallsyms| k.symbols.iter().map(|s| s.addr).collect::<Vec<_>>();
        assert_eq!(addrs(&mapped), addrs(&whole), "a line cut at a step");
        for s in &whole.symbols {
            assert_eq!(mapped.lookup(s.addr), whole.lookup(s.addr), "{:#x}", s.addr);
        }
    }

    /// What was added, before sorting: the symbols (address, name, module) in order, the
    /// names, the modules and `_text`.
    type Added = (Vec<(u64, u32, u32)>, Vec<u8>, Vec<Box<str>>, Option<u64>);

    fn added(k: Kallsyms) -> Added {
        let names = match k.names {
            Names::Copied(names) => names,
            Names::Mapped(_) => Vec::new(),
        };
        let symbols = k.symbols.iter().map(|s| (s.addr, s.name, s.module));
        (symbols.collect(), names, k.modules, k.text)
    }

    /// `bytes` read as a mapped file and line by line, fast and by the general split.
    fn read_both_ways(bytes: &[u8]) -> [(Added, Added); 2] {
        let base = bytes.as_ptr() as usize;
        let mut fast = Kallsyms::empty();
        fast.add_mapped(bytes);
        let mut general = Kallsyms::empty();
        let lines = || {
            bytes
                .split(|&b| b == b'\n')
                .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
                .filter_map(|line| std::str::from_utf8(line).ok())
        };
        lines().for_each(|line| general.add_line(line, Some(base)));
        let mapped = (added(fast), added(general));
        let (mut fast, mut general) = (Kallsyms::empty(), Kallsyms::empty());
        lines().for_each(|line| fast.add_line_fast(line, None));
        lines().for_each(|line| general.add_line(line, None));
        [mapped, (added(fast), added(general))]
    }

    #[test]
    fn this_machines_kallsyms_reads_the_same_fast_and_by_the_general_split() {
        let bytes = std::fs::read("/proc/kallsyms").unwrap();
        for (fast, general) in read_both_ways(&bytes) {
            if general.0.is_empty() {
                cpiflame_testkit::unavailable("/proc/kallsyms shows no addresses");
                return;
            }
            assert!(fast == general);
        }
    }

    #[test]
    fn random_lines_read_the_same_fast_and_by_the_general_split() {
        // Lines made of the bytes that matter to either reading, from a fixed seed.
        let pieces: [&[u8]; 24] = [
            b"ffffffff81000000",
            b"0",
            b"A",
            b"f",
            b"g",
            b"+",
            b" ",
            b" ",
            b"\t",
            b"\r",
            b"\n",
            b"t",
            b"T",
            b"W",
            b"d",
            b"name",
            b"_text",
            b"[",
            b"]",
            b"[mod]",
            b"\xc3\xa9",
            b"\xff",
            b"\x01",
            b"\x7f",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2000 {
            let mut text = Vec::new();
            for _ in 0..40 {
                // Mostly well-formed lines with one to three random pieces spliced in.
                let mut line = match next() % 4 {
                    0 => b"ffffffff81000010 t f\n".to_vec(),
                    1 => b"ffffffffc0000000 T g\t[m]\n".to_vec(),
                    _ => Vec::new(),
                };
                for _ in 0..1 + next() % 3 {
                    let cut = (next() as usize) % (line.len() + 1);
                    let piece = pieces[(next() % 24) as usize];
                    line.splice(cut..cut, piece.iter().copied());
                }
                text.extend_from_slice(&line);
            }
            for (fast, general) in read_both_ways(&text) {
                assert!(fast == general, "{}", String::from_utf8_lossy(&text));
            }
        }
    }

    #[test]
    fn addresses_read_as_from_str_radix_reads_them() {
        // Every byte in every place of a 16-digit address, and shorter and longer ones.
        let digits = b"0123456789abcdEF";
        for len in [1, 8, 15, 16, 17] {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut text: Vec<u8> = digits.iter().cycle().take(len).copied().collect();
                    text[at] = b;
                    text.extend_from_slice(b" t");
                    let (addr, n) = address(&text);
                    let digit_count = text.iter().take_while(|b| b.is_ascii_hexdigit()).count();
                    let expected = std::str::from_utf8(&text[..digit_count])
                        .ok()
                        .and_then(|d| u64::from_str_radix(d, 16).ok());
                    assert_eq!(n, digit_count.min(17), "{text:?}");
                    if n <= 16 && n > 0 {
                        assert_eq!(Some(addr), expected, "{text:?}");
                    }
                }
            }
        }
    }
}
