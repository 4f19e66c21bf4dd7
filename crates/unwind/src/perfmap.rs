//! JIT symbol maps (`/tmp/perf-PID.map`): one `START SIZE name` line (hex) per function,
//! written by JIT runtimes for perf.

use std::path::{Path, PathBuf};

use crate::source::{HostSource, Source};

/// A JIT map's functions: start address (in the process), size and name.
pub struct PerfMap {
    entries: Vec<(u64, u64, Box<str>)>,
}

impl PerfMap {
    /// Reads the map at `path` on this host; `None` when it cannot be read.
    pub fn load(path: &Path) -> Option<PerfMap> {
        Self::load_from(&HostSource, path)
    }

    /// Reads the map at `path` from `source`.
    pub fn load_from(source: &dyn Source, path: &Path) -> Option<PerfMap> {
        Some(Self::parse(&source.read_text(path).ok()?))
    }

    /// Where process `pid`'s JIT map is written, by the convention perf reads it by.
    pub fn path_for(pid: i32) -> PathBuf {
        PathBuf::from(format!("/tmp/perf-{pid}.map"))
    }

    /// Parses map text, skipping lines that are not `START SIZE name`.
    pub fn parse(text: &str) -> PerfMap {
        let mut entries: Vec<_> = text
            .lines()
            .filter_map(|line| {
                let mut parts = line.splitn(3, ' ');
                let start = u64::from_str_radix(parts.next()?.trim_start_matches("0x"), 16).ok()?;
                let size = u64::from_str_radix(parts.next()?.trim_start_matches("0x"), 16).ok()?;
                let name = parts.next()?.trim();
                Some((start, size, name.into()))
            })
            .collect();
        entries.sort_by_key(|e| e.0);
        PerfMap { entries }
    }

    /// The name of the function whose range holds `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.entries.partition_point(|e| e.0 <= addr);
        let (start, size, name) = self.entries.get(i.checked_sub(1)?)?;
        (addr < start.saturating_add(*size)).then_some(&**name)
    }
}

#[cfg(test)]
mod tests {
    use super::PerfMap;

    #[test]
    fn parses_and_looks_up_ranges() {
        let m = PerfMap::parse(
            "7f0000001000 40 LazyCompile:~foo app.js:1\n7f0000002000 10 bar\nbad line\n",
        );
        assert_eq!(m.lookup(0x7f0000001000), Some("LazyCompile:~foo app.js:1"));
        assert_eq!(m.lookup(0x7f000000103f), Some("LazyCompile:~foo app.js:1"));
        assert_eq!(m.lookup(0x7f0000001040), None);
        assert_eq!(m.lookup(0x7f0000002005), Some("bar"));
    }
}
