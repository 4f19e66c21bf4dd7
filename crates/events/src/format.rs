//! PMU `format/` descriptions: where each term of a `pmu/term=value,.../` spec goes in
//! `perf_event_attr.config`, `config1` or `config2`.
//!
//! The kernel publishes one file per term under
//! `/sys/bus/event_source/devices/<pmu>/format/`, each holding a text like `config:0-7` or
//! `config:0-7,32-35` (AMD's event select, whose bits 8-11 live in config bits 32-35). A value
//! is laid into the set bits of that mask from the lowest up, so `event=0x1d6` on AMD gives
//! config `0x1_0000_00d6`.
//!
//! Built-in layouts for when no sysfs text is at hand (tests, files from another machine):
//! - Intel (arch/x86/events/intel/core.c): event 0-7, umask 8-15, edge 18, pc 19, any 21,
//!   inv 23, cmask 24-31 (read from the kernel source).
//! - AMD (arch/x86/events/amd/core.c): event 0-7,32-35, umask 8-15, edge 18, inv 23,
//!   cmask 24-31 (read from the kernel source).
//! - x86 when the vendor is unknown: the union of both, with AMD's wide event field (derived:
//!   Intel event codes fit in 8 bits, so the wide field encodes them identically).
//! - ARM PMUv3 (drivers/perf/arm_pmuv3.c): event 0-15, long config1:0, rdpmc config1:1 (read
//!   from the kernel source).

use std::collections::BTreeMap;
use std::fmt;

/// Which `perf_event_attr` word a format field lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConfigWord {
    Config,
    Config1,
    Config2,
    /// Newer kernels have `config3` (e.g. ARM SPE); specs here cannot carry it.
    Config3,
}

impl ConfigWord {
    fn from_name(name: &str) -> Option<ConfigWord> {
        match name {
            "config" => Some(ConfigWord::Config),
            "config1" => Some(ConfigWord::Config1),
            "config2" => Some(ConfigWord::Config2),
            "config3" => Some(ConfigWord::Config3),
            _ => None,
        }
    }

    /// The name as sysfs spells it.
    pub fn name(self) -> &'static str {
        match self {
            ConfigWord::Config => "config",
            ConfigWord::Config1 => "config1",
            ConfigWord::Config2 => "config2",
            ConfigWord::Config3 => "config3",
        }
    }
}

/// One term's place: a word and the bits of it, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatField {
    pub word: ConfigWord,
    pub mask: u64,
}

/// A `format/` text that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// The term (file name), when known.
    pub term: String,
    /// The text as read.
    pub text: String,
    pub reason: &'static str,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.term.is_empty() {
            write!(f, "bad PMU format '{}': {}", self.text.trim(), self.reason)
        } else {
            write!(
                f,
                "bad PMU format for term '{}': '{}': {}",
                self.term,
                self.text.trim(),
                self.reason
            )
        }
    }
}

impl std::error::Error for FormatError {}

impl FormatField {
    /// Parses one sysfs format text: `config:0-7`, `config1:0`, `config:0-7,32-35`.
    pub fn parse(text: &str) -> Result<FormatField, FormatError> {
        let bad = |reason| FormatError {
            term: String::new(),
            text: text.to_string(),
            reason,
        };
        let t = text.trim();
        let (word, bits) = t.split_once(':').ok_or_else(|| bad("no ':'"))?;
        let word = ConfigWord::from_name(word.trim())
            .ok_or_else(|| bad("word is not config, config1, config2 or config3"))?;
        let mut mask = 0u64;
        for range in bits.split(',') {
            let range = range.trim();
            let (lo, hi) = match range.split_once('-') {
                Some((lo, hi)) => (lo.trim(), hi.trim()),
                None => (range, range),
            };
            let lo: u32 = lo.parse().map_err(|_| bad("bit is not a number"))?;
            let hi: u32 = hi.parse().map_err(|_| bad("bit is not a number"))?;
            if lo > hi || hi > 63 {
                return Err(bad("bit range out of order or above 63"));
            }
            let width = hi - lo + 1;
            let ones = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            mask |= ones << lo;
        }
        if mask == 0 {
            return Err(bad("no bits"));
        }
        Ok(FormatField { word, mask })
    }

    /// How many bits a value may have.
    pub fn width(&self) -> u32 {
        self.mask.count_ones()
    }

    /// `value` laid into the field's bits (lowest value bit into the lowest mask bit), or
    /// `None` when it has more bits than the field.
    pub fn encode(&self, value: u64) -> Option<u64> {
        let width = self.width();
        if width < 64 && value >> width != 0 {
            return None;
        }
        let mut out = 0u64;
        let mut v = value;
        let mut m = self.mask;
        while m != 0 {
            let bit = m & m.wrapping_neg();
            if v & 1 != 0 {
                out |= bit;
            }
            v >>= 1;
            m &= m - 1;
        }
        Some(out)
    }
}

/// A PMU's terms and where they go, and its event aliases (sysfs `events/`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PmuFormat {
    fields: BTreeMap<String, FormatField>,
    /// Event name → its terms (`slots` → `event=0x00,umask=0x4`).
    aliases: BTreeMap<String, String>,
}

impl PmuFormat {
    /// From `(term, text)` pairs, e.g. the files of a sysfs `format/` directory.
    pub fn parse<'a, I>(entries: I) -> Result<PmuFormat, FormatError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut fields = BTreeMap::new();
        for (term, text) in entries {
            let field = FormatField::parse(text).map_err(|mut e| {
                e.term = term.to_string();
                e
            })?;
            fields.insert(term.to_string(), field);
        }
        Ok(PmuFormat {
            fields,
            aliases: BTreeMap::new(),
        })
    }

    /// The same layout with `aliases`: (event name, terms) pairs, e.g. the files of a sysfs
    /// `events/` directory (`slots` → `event=0x00,umask=0x4`).
    pub fn with_aliases<'a, I>(mut self, aliases: I) -> PmuFormat
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        self.aliases.extend(
            aliases
                .into_iter()
                .map(|(name, terms)| (name.to_string(), terms.trim().to_string())),
        );
        self
    }

    /// The terms of the event alias `name`, if this PMU has it.
    pub fn alias(&self, name: &str) -> Option<&str> {
        self.aliases.get(name).map(String::as_str)
    }

    /// The event aliases' names, sorted.
    pub fn alias_names(&self) -> impl Iterator<Item = &str> {
        self.aliases.keys().map(String::as_str)
    }

    fn from_static(entries: &[(&str, &str)]) -> PmuFormat {
        PmuFormat::parse(entries.iter().copied()).expect("built-in formats parse")
    }

    /// Where `term` goes, if this PMU has it.
    pub fn get(&self, term: &str) -> Option<&FormatField> {
        self.fields.get(term)
    }

    /// The terms, sorted.
    pub fn terms(&self) -> impl Iterator<Item = &str> {
        self.fields.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Intel core PMUs (`cpu` on Intel, `cpu_core`, `cpu_atom`).
    pub fn intel() -> PmuFormat {
        PmuFormat::from_static(&[
            ("event", "config:0-7"),
            ("umask", "config:8-15"),
            ("edge", "config:18"),
            ("pc", "config:19"),
            ("any", "config:21"),
            ("inv", "config:23"),
            ("cmask", "config:24-31"),
        ])
    }

    /// AMD core PMU (`cpu` on AMD).
    pub fn amd() -> PmuFormat {
        PmuFormat::from_static(&[
            ("event", "config:0-7,32-35"),
            ("umask", "config:8-15"),
            ("edge", "config:18"),
            ("inv", "config:23"),
            ("cmask", "config:24-31"),
        ])
    }

    /// x86 `cpu` of unknown vendor: Intel's terms with AMD's wide event field (derived).
    pub fn x86() -> PmuFormat {
        let mut f = PmuFormat::intel();
        f.fields.insert(
            "event".to_string(),
            FormatField::parse("config:0-7,32-35").expect("static"),
        );
        f
    }

    /// ARM PMUv3 (`armv8_pmuv3_0`, `armv8_cortex_a72`, `armv8_neoverse_n1`, ...).
    pub fn armv8() -> PmuFormat {
        PmuFormat::from_static(&[
            ("event", "config:0-15"),
            ("long", "config1:0"),
            ("rdpmc", "config1:1"),
        ])
    }

    /// The built-in layout used for `pmu` when no sysfs format is given: ARM PMUv3 for
    /// `armv8_*` PMUs, Intel for `cpu_core`/`cpu_atom`, otherwise the x86 union.
    pub fn default_for(pmu: &str) -> PmuFormat {
        if pmu.starts_with("armv8") || pmu.starts_with("armv9") {
            PmuFormat::armv8()
        } else if pmu == "cpu_core" || pmu == "cpu_atom" {
            PmuFormat::intel()
        } else {
            PmuFormat::x86()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_format_texts() {
        let f = FormatField::parse("config:0-7\n").unwrap();
        assert_eq!((f.word, f.mask, f.width()), (ConfigWord::Config, 0xff, 8));
        let f = FormatField::parse("config:0-7,32-35").unwrap();
        assert_eq!(f.mask, 0xf_0000_00ff);
        let f = FormatField::parse("config1:0").unwrap();
        assert_eq!((f.word, f.mask), (ConfigWord::Config1, 1));
        let f = FormatField::parse("config:8-15,40-47").unwrap();
        assert_eq!(f.mask, 0xff00_0000_ff00);
        let f = FormatField::parse("config2:0-63").unwrap();
        assert_eq!(f.mask, u64::MAX);
        for bad in [
            "",
            "config",
            "cfg:0-7",
            "config:7-0",
            "config:64",
            "config:a-b",
        ] {
            assert!(FormatField::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn encodes_into_split_fields() {
        let amd_event = FormatField::parse("config:0-7,32-35").unwrap();
        assert_eq!(amd_event.encode(0xd6), Some(0xd6));
        assert_eq!(amd_event.encode(0x1d6), Some(0x1_0000_00d6));
        assert_eq!(amd_event.encode(0xfff), Some(0xf_0000_00ff));
        assert_eq!(amd_event.encode(0x1000), None);
        let cmask = FormatField::parse("config:24-31").unwrap();
        assert_eq!(cmask.encode(4), Some(0x0400_0000));
        assert_eq!(cmask.encode(256), None);
        let all = FormatField::parse("config1:0-63").unwrap();
        assert_eq!(all.encode(u64::MAX), Some(u64::MAX));
    }

    #[test]
    fn format_errors_name_the_term() {
        let err = PmuFormat::parse([("event", "config:0-7"), ("umask", "bogus")]).unwrap_err();
        assert_eq!(err.term, "umask");
        assert!(err.to_string().contains("'umask'"), "{err}");
    }

    #[test]
    fn built_in_layouts() {
        assert_eq!(PmuFormat::intel().get("any").unwrap().mask, 1 << 21);
        assert!(PmuFormat::amd().get("any").is_none());
        assert_eq!(PmuFormat::x86().get("event").unwrap().mask, 0xf_0000_00ff);
        assert_eq!(PmuFormat::default_for("armv8_pmuv3_0"), PmuFormat::armv8());
        assert_eq!(PmuFormat::default_for("cpu_core"), PmuFormat::intel());
        assert_eq!(PmuFormat::default_for("cpu"), PmuFormat::x86());
    }
}
