//! Which CPU this is (`/proc/cpuinfo`) and which PMUs the kernel offers
//! (`/sys/bus/event_source/devices`). Parsers are pure functions over text; [`detect`] and
//! [`discover_pmus`](crate::sysfs::discover_pmus) are thin readers on top.
//!
//! Code names: Intel models from the kernel's arch/x86/include/asm/intel-family.h and perf's
//! pmu-events/arch/x86/mapfile.csv (model 0x55 stepping 0-4 Skylake-SP, 5+ Cascade Lake);
//! AMD Zen generations by family/model range from the kernel's arch/x86/kernel/cpu/amd.c
//! (`bsp_init_amd`), which sets X86_FEATURE_ZEN1..ZEN6 and is what the kernel's own PMU code
//! goes by; perf's mapfile.csv is coarser (it calls every 17h model past 2F Zen 2 and every
//! 1Ah model Zen 5). ARM part numbers from arch/arm64/include/asm/cputype.h.

use std::fmt;
use std::io;
use std::path::Path;

use crate::roles::Arch;

/// MIDR implementer codes.
pub const ARM_IMPLEMENTER_ARM: u32 = 0x41;
pub const ARM_IMPLEMENTER_APPLE: u32 = 0x61;

/// CPU vendor; ARM cores carry their MIDR implementer and part number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Vendor {
    Intel,
    Amd,
    Arm {
        implementer: u32,
        part: u32,
    },
    /// Anything else, by its `vendor_id` (or `unknown`).
    Other(String),
}

/// What `/proc/cpuinfo` says about the first CPU (and, on ARM, every distinct core type).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpu {
    pub vendor: Vendor,
    /// x86 `cpu family`; ARM `CPU architecture` (8); 0 when absent.
    pub family: u32,
    /// x86 `model`; ARM `CPU part`.
    pub model: u32,
    /// x86 `stepping`; ARM `CPU revision`; 0 when absent.
    pub stepping: u32,
    /// x86 `model name`, when present.
    pub model_name: Option<String>,
    /// x86: the `hybrid_cpu` flag (P- and E-cores); ARM: more than one core type.
    pub hybrid: bool,
    /// ARM: every distinct (implementer, part), in /proc/cpuinfo order. Empty elsewhere.
    pub arm_parts: Vec<(u32, u32)>,
}

/// A `/proc/cpuinfo` text that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuInfoError {
    /// No `key : value` lines at all.
    Empty,
    Missing {
        key: &'static str,
    },
    BadNumber {
        key: String,
        value: String,
    },
}

impl fmt::Display for CpuInfoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuInfoError::Empty => write!(f, "/proc/cpuinfo: no 'key : value' lines"),
            CpuInfoError::Missing { key } => write!(f, "/proc/cpuinfo: no '{key}' line"),
            CpuInfoError::BadNumber { key, value } => {
                write!(f, "/proc/cpuinfo: '{key}' is not a number: '{value}'")
            }
        }
    }
}

impl std::error::Error for CpuInfoError {}

type Block<'a> = Vec<(&'a str, &'a str)>;

/// Processor blocks (separated by blank lines) of `key : value` lines.
fn blocks(text: &str) -> Vec<Block<'_>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            cur.push((k.trim(), v.trim()));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn get<'a>(block: &Block<'a>, key: &str) -> Option<&'a str> {
    block.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// Decimal, or hex with `0x`.
fn number(text: &str) -> Option<u32> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn required(block: &Block<'_>, key: &'static str) -> Result<u32, CpuInfoError> {
    let value = get(block, key).ok_or(CpuInfoError::Missing { key })?;
    number(value).ok_or_else(|| CpuInfoError::BadNumber {
        key: key.to_string(),
        value: value.to_string(),
    })
}

/// Parses `/proc/cpuinfo` text (x86 or arm64 layout; other architectures give
/// [`Vendor::Other`]).
pub fn parse_cpuinfo(text: &str) -> Result<Cpu, CpuInfoError> {
    let blocks = blocks(text);
    if blocks.is_empty() {
        return Err(CpuInfoError::Empty);
    }
    if let Some(b) = blocks.iter().find(|b| get(b, "vendor_id").is_some()) {
        let vendor_id = get(b, "vendor_id").unwrap_or_default();
        let vendor = match vendor_id {
            "GenuineIntel" => Vendor::Intel,
            "AuthenticAMD" => Vendor::Amd,
            other => Vendor::Other(other.to_string()),
        };
        let x86 = matches!(vendor, Vendor::Intel | Vendor::Amd);
        let (family, model) = if x86 {
            (required(b, "cpu family")?, required(b, "model")?)
        } else {
            let family = get(b, "cpu family").and_then(number).unwrap_or(0);
            (family, get(b, "model").and_then(number).unwrap_or(0))
        };
        let flags = get(b, "flags").unwrap_or_default();
        return Ok(Cpu {
            vendor,
            family,
            model,
            // Some hypervisors print "unknown".
            stepping: get(b, "stepping").and_then(number).unwrap_or(0),
            model_name: get(b, "model name").map(str::to_string),
            hybrid: flags.split_whitespace().any(|f| f == "hybrid_cpu"),
            arm_parts: Vec::new(),
        });
    }
    let arm: Vec<&Block<'_>> = blocks
        .iter()
        .filter(|b| get(b, "CPU implementer").is_some())
        .collect();
    if let Some(first) = arm.first() {
        let mut parts = Vec::new();
        for b in &arm {
            let p = (required(b, "CPU implementer")?, required(b, "CPU part")?);
            if !parts.contains(&p) {
                parts.push(p);
            }
        }
        let (implementer, part) = parts[0];
        return Ok(Cpu {
            vendor: Vendor::Arm { implementer, part },
            family: get(first, "CPU architecture").and_then(number).unwrap_or(0),
            model: part,
            stepping: get(first, "CPU revision").and_then(number).unwrap_or(0),
            model_name: get(first, "model name").map(str::to_string),
            hybrid: parts.len() > 1,
            arm_parts: parts,
        });
    }
    let b = &blocks[0];
    let name = ["uarch", "isa", "cpu model", "cpu"]
        .iter()
        .find_map(|k| get(b, k))
        .unwrap_or("unknown");
    Ok(Cpu {
        vendor: Vendor::Other(name.to_string()),
        family: 0,
        model: 0,
        stepping: 0,
        model_name: None,
        hybrid: false,
        arm_parts: Vec::new(),
    })
}

/// Reads and parses `/proc/cpuinfo`.
pub fn detect() -> io::Result<Cpu> {
    detect_from(Path::new("/proc/cpuinfo"))
}

/// Reads and parses a cpuinfo file.
pub fn detect_from(path: &Path) -> io::Result<Cpu> {
    let text = std::fs::read_to_string(path)?;
    parse_cpuinfo(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// AMD Zen generation (1 to 6) of an AMD family/model, by the ranges of the kernel's
/// `bsp_init_amd` (arch/x86/kernel/cpu/amd.c); `None` for a model the kernel does not place
/// either (it warns "Family 0x%x, model: 0x%x??" there).
pub fn amd_zen(family: u32, model: u32) -> Option<u8> {
    match (family, model) {
        (0x17, 0x00..=0x2f | 0x50..=0x5f) => Some(1),
        (0x17, 0x30..=0x4f | 0x60..=0x7f | 0x90..=0x91 | 0xa0..=0xaf) => Some(2),
        (0x19, 0x00..=0x0f | 0x20..=0x5f) => Some(3),
        (0x19, 0x10..=0x1f | 0x60..=0xaf) => Some(4),
        (0x1a, 0x00..=0x2f | 0x40..=0x4f | 0x60..=0x7f) => Some(5),
        (0x1a, 0x50..=0x5f | 0x80..=0xaf | 0xc0..=0xcf) => Some(6),
        _ => None,
    }
}

/// Intel family 6 code names (intel-family.h).
fn intel_name(model: u32, stepping: u32) -> Option<&'static str> {
    Some(match model {
        0x1a => "Nehalem-EP",
        0x1e => "Nehalem",
        0x1f => "Nehalem-G",
        0x2e => "Nehalem-EX",
        0x25 => "Westmere",
        0x2c => "Westmere-EP",
        0x2f => "Westmere-EX",
        0x2a => "Sandy Bridge",
        0x2d => "Sandy Bridge-EP",
        0x3a => "Ivy Bridge",
        0x3e => "Ivy Bridge-EP",
        0x3c => "Haswell",
        0x45 => "Haswell-L",
        0x46 => "Haswell-G",
        0x3f => "Haswell-X",
        0x3d => "Broadwell",
        0x47 => "Broadwell-G",
        0x4f => "Broadwell-X",
        0x56 => "Broadwell-D",
        0x4e => "Skylake-L",
        0x5e => "Skylake",
        0x55 if stepping < 5 => "Skylake-SP",
        0x55 => "Cascade Lake-SP",
        0x8e => "Kaby Lake-L",
        0x9e => "Kaby Lake",
        0xa5 => "Comet Lake",
        0xa6 => "Comet Lake-L",
        0x7d => "Ice Lake",
        0x7e => "Ice Lake-L",
        0x6a => "Ice Lake-X",
        0x6c => "Ice Lake-D",
        0x8c => "Tiger Lake-L",
        0x8d => "Tiger Lake",
        0xa7 => "Rocket Lake",
        0x8f => "Sapphire Rapids",
        0xcf => "Emerald Rapids",
        0xad => "Granite Rapids",
        0xae => "Granite Rapids-D",
        0x97 => "Alder Lake",
        0x9a => "Alder Lake-L",
        0xb7 => "Raptor Lake",
        0xba => "Raptor Lake-P",
        0xbf => "Raptor Lake-S",
        0xac => "Meteor Lake",
        0xaa => "Meteor Lake-L",
        0xc5 => "Arrow Lake-H",
        0xc6 => "Arrow Lake",
        0xb5 => "Arrow Lake-U",
        0xbd => "Lunar Lake-M",
        0xcc => "Panther Lake-L",
        0xd5 => "Wildcat Lake-L",
        0xbe => "Alder Lake-N (E-cores only)",
        0xaf => "Sierra Forest (E-cores only)",
        0xb6 => "Grand Ridge (E-cores only)",
        _ => return None,
    })
}

/// ARM Ltd part numbers (cputype.h).
pub fn arm_part_name(implementer: u32, part: u32) -> Option<&'static str> {
    if implementer == ARM_IMPLEMENTER_APPLE {
        return Some("Apple");
    }
    if implementer != ARM_IMPLEMENTER_ARM {
        return None;
    }
    Some(match part {
        0xd03 => "Cortex-A53",
        0xd04 => "Cortex-A35",
        0xd05 => "Cortex-A55",
        0xd07 => "Cortex-A57",
        0xd08 => "Cortex-A72",
        0xd09 => "Cortex-A73",
        0xd0a => "Cortex-A75",
        0xd0b => "Cortex-A76",
        0xd0c => "Neoverse N1",
        0xd0d => "Cortex-A77",
        0xd40 => "Neoverse V1",
        0xd41 => "Cortex-A78",
        0xd44 => "Cortex-X1",
        0xd46 => "Cortex-A510",
        0xd47 => "Cortex-A710",
        0xd48 => "Cortex-X2",
        0xd49 => "Neoverse N2",
        0xd4f => "Neoverse V2",
        0xd80 => "Cortex-A520",
        0xd81 => "Cortex-A720",
        0xd82 => "Cortex-X4",
        0xd84 => "Neoverse V3",
        0xd8e => "Neoverse N3",
        _ => return None,
    })
}

impl Cpu {
    /// A short code name: `Skylake-SP`, `Zen 4`, `Neoverse N1`.
    pub fn code_name(&self) -> Option<&'static str> {
        match &self.vendor {
            Vendor::Intel if self.family == 6 => intel_name(self.model, self.stepping),
            // intel-family.h: family 18 (0x12) is Nova Lake, family 19 (0x13) Diamond Rapids.
            Vendor::Intel if self.family == 18 => Some("Nova Lake"),
            Vendor::Intel if self.family == 19 => Some("Diamond Rapids"),
            Vendor::Amd => amd_zen(self.family, self.model).map(|z| match z {
                1 => "Zen 1",
                2 => "Zen 2",
                3 => "Zen 3",
                4 => "Zen 4",
                5 => "Zen 5",
                _ => "Zen 6",
            }),
            Vendor::Arm { implementer, part } => arm_part_name(*implementer, *part),
            _ => None,
        }
    }

    /// The architecture role detection needs.
    pub fn arch(&self) -> Arch {
        match self.vendor {
            Vendor::Intel | Vendor::Amd => Arch::X86_64,
            Vendor::Arm { .. } => Arch::Aarch64,
            Vendor::Other(_) => Arch::Other,
        }
    }
}

impl fmt::Display for Cpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.code_name();
        match &self.vendor {
            // Intel writes families in decimal (6, 19), AMD in hex (17h, 19h, 1Ah).
            Vendor::Intel => write!(f, "Intel family {} model {:#x}", self.family, self.model)?,
            Vendor::Amd => write!(f, "AMD family {:#x} model {:#x}", self.family, self.model)?,
            Vendor::Arm { implementer, part } => {
                write!(f, "ARM implementer {implementer:#x} part {part:#x}")?
            }
            Vendor::Other(v) => return write!(f, "{v} (no stall events known)"),
        }
        match (
            name,
            self.hybrid && !matches!(self.vendor, Vendor::Arm { .. }),
        ) {
            (Some(n), true) => write!(f, " ({n}, hybrid)")?,
            (Some(n), false) => write!(f, " ({n})")?,
            (None, true) => write!(f, " (hybrid)")?,
            (None, false) => {}
        }
        for &(implementer, part) in self.arm_parts.iter().skip(1) {
            write!(f, " + implementer {implementer:#x} part {part:#x}")?;
            if let Some(n) = arm_part_name(implementer, part) {
                write!(f, " ({n})")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Small /proc/cpuinfo samples (two processors each, trimmed to the lines that matter
    //! plus some noise).

    pub const SKYLAKE_SP: &str = "\
processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz
stepping\t: 4
microcode\t: 0x2006e05
cpu MHz\t\t: 2400.000
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts avx512f
bugs\t\t: spectre_v1 spectre_v2
power management:

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz
stepping\t: 4
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic arch_perfmon avx512f
power management:
";

    pub const ZEN4: &str = "\
processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 97
model name\t: AMD Ryzen 9 7950X 16-Core Processor
stepping\t: 2
microcode\t: 0xa601203
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat perfctr_core avx512f
TLB size\t: 3584 4K pages
power management: ts ttp tm hwpstate cpb eff_freq_ro [13] [14]

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 97
model name\t: AMD Ryzen 9 7950X 16-Core Processor
stepping\t: 2
";

    pub const NEOVERSE_N1: &str = "\
processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1

processor\t: 1
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1
";

    pub const ALDER_LAKE: &str = "\
processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 151
model name\t: 12th Gen Intel(R) Core(TM) i9-12900K
stepping\t: 2
microcode\t: 0x2c
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni hybrid_cpu serialize arch_lbr ibt flush_l1d arch_capabilities
power management:

processor\t: 16
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 151
model name\t: 12th Gen Intel(R) Core(TM) i9-12900K
stepping\t: 2
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep arch_perfmon hybrid_cpu
";

    /// big.LITTLE: two Cortex-A55 and one Cortex-A76.
    pub const BIG_LITTLE: &str = "\
processor\t: 0
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x2
CPU part\t: 0xd05
CPU revision\t: 0

processor\t: 1
CPU implementer\t: 0x41
CPU architecture: 8
CPU part\t: 0xd05
CPU revision\t: 0

processor\t: 2
CPU implementer\t: 0x41
CPU architecture: 8
CPU part\t: 0xd0b
CPU revision\t: 1
";
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use crate::sysfs::discover_pmus;

    #[test]
    fn intel_skylake_sp() {
        let cpu = parse_cpuinfo(SKYLAKE_SP).unwrap();
        assert_eq!(cpu.vendor, Vendor::Intel);
        assert_eq!((cpu.family, cpu.model, cpu.stepping), (6, 0x55, 4));
        assert!(!cpu.hybrid);
        assert_eq!(
            cpu.model_name.as_deref(),
            Some("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz")
        );
        assert_eq!(cpu.to_string(), "Intel family 6 model 0x55 (Skylake-SP)");
        assert_eq!(cpu.arch(), Arch::X86_64);
        // Stepping 5 and later of model 0x55 is Cascade Lake.
        let clx = parse_cpuinfo(&SKYLAKE_SP.replace("stepping\t: 4", "stepping\t: 7")).unwrap();
        assert_eq!(clx.code_name(), Some("Cascade Lake-SP"));
    }

    #[test]
    fn amd_zen4() {
        let cpu = parse_cpuinfo(ZEN4).unwrap();
        assert_eq!(cpu.vendor, Vendor::Amd);
        assert_eq!((cpu.family, cpu.model, cpu.stepping), (0x19, 0x61, 2));
        assert_eq!(cpu.to_string(), "AMD family 0x19 model 0x61 (Zen 4)");
    }

    #[test]
    fn amd_generations_by_range() {
        assert_eq!(amd_zen(0x17, 0x01), Some(1));
        assert_eq!(amd_zen(0x17, 0x18), Some(1));
        assert_eq!(amd_zen(0x17, 0x31), Some(2));
        assert_eq!(amd_zen(0x17, 0x71), Some(2));
        assert_eq!(amd_zen(0x19, 0x01), Some(3));
        assert_eq!(amd_zen(0x19, 0x21), Some(3));
        assert_eq!(amd_zen(0x19, 0x50), Some(3));
        // Genoa (11h) is Zen 4 although its model is below Vermeer's (21h).
        assert_eq!(amd_zen(0x19, 0x11), Some(4));
        assert_eq!(amd_zen(0x19, 0x61), Some(4));
        assert_eq!(amd_zen(0x19, 0xa0), Some(4));
        assert_eq!(amd_zen(0x1a, 0x02), Some(5));
        // The kernel's bsp_init_amd: 17h 50-5F is Zen 1; 1Ah 50-5F, 80-AF, C0-CF Zen 6.
        assert_eq!(amd_zen(0x17, 0x50), Some(1));
        assert_eq!(amd_zen(0x17, 0x90), Some(2));
        assert_eq!(amd_zen(0x1a, 0x4f), Some(5));
        assert_eq!(amd_zen(0x1a, 0x60), Some(5));
        for model in [0x50, 0x5f, 0x80, 0xaf, 0xc0, 0xcf] {
            assert_eq!(amd_zen(0x1a, model), Some(6), "{model:#x}");
        }
        for (family, model) in [(0x17, 0x80), (0x19, 0xb0), (0x1a, 0x30), (0x1a, 0xd0)] {
            assert_eq!(amd_zen(family, model), None, "{family:#x}/{model:#x}");
        }
        assert_eq!(amd_zen(0x15, 0x02), None);
    }

    #[test]
    fn arm_neoverse_n1() {
        let cpu = parse_cpuinfo(NEOVERSE_N1).unwrap();
        assert_eq!(
            cpu.vendor,
            Vendor::Arm {
                implementer: 0x41,
                part: 0xd0c
            }
        );
        assert_eq!((cpu.family, cpu.model, cpu.stepping), (8, 0xd0c, 1));
        assert_eq!(cpu.arm_parts, vec![(0x41, 0xd0c)]);
        assert!(!cpu.hybrid);
        assert_eq!(
            cpu.to_string(),
            "ARM implementer 0x41 part 0xd0c (Neoverse N1)"
        );
        assert_eq!(cpu.arch(), Arch::Aarch64);
    }

    #[test]
    fn arm_big_little() {
        let cpu = parse_cpuinfo(BIG_LITTLE).unwrap();
        assert_eq!(cpu.arm_parts, vec![(0x41, 0xd05), (0x41, 0xd0b)]);
        assert!(cpu.hybrid);
        assert_eq!(
            cpu.to_string(),
            "ARM implementer 0x41 part 0xd05 (Cortex-A55) + implementer 0x41 part 0xd0b (Cortex-A76)"
        );
    }

    #[test]
    fn hybrid_alder_lake() {
        let cpu = parse_cpuinfo(ALDER_LAKE).unwrap();
        assert_eq!(cpu.vendor, Vendor::Intel);
        assert_eq!((cpu.family, cpu.model), (6, 0x97));
        assert!(cpu.hybrid);
        assert_eq!(
            cpu.to_string(),
            "Intel family 6 model 0x97 (Alder Lake, hybrid)"
        );
    }

    #[test]
    fn other_and_broken_texts() {
        assert_eq!(parse_cpuinfo(""), Err(CpuInfoError::Empty));
        assert_eq!(parse_cpuinfo("\n\n"), Err(CpuInfoError::Empty));
        let riscv = "processor\t: 0\nhart\t\t: 0\nisa\t\t: rv64imafdc\nmmu\t\t: sv39\nuarch\t\t: sifive,u74-mc\n";
        let cpu = parse_cpuinfo(riscv).unwrap();
        assert_eq!(cpu.vendor, Vendor::Other("sifive,u74-mc".into()));
        assert_eq!(cpu.arch(), Arch::Other);
        let s390 = "vendor_id       : IBM/S390\n# processors    : 2\n";
        assert_eq!(
            parse_cpuinfo(s390).unwrap().vendor,
            Vendor::Other("IBM/S390".into())
        );
        assert_eq!(
            parse_cpuinfo("vendor_id : GenuineIntel\nmodel : 85\n"),
            Err(CpuInfoError::Missing { key: "cpu family" })
        );
        let e = parse_cpuinfo("vendor_id : AuthenticAMD\ncpu family : x\nmodel : 1\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "/proc/cpuinfo: 'cpu family' is not a number: 'x'"
        );
        assert!(matches!(
            parse_cpuinfo("CPU implementer : 0x41\nCPU part : zz\n"),
            Err(CpuInfoError::BadNumber { .. })
        ));
        // A VM that hides the stepping.
        let cpu = parse_cpuinfo(
            "vendor_id : GenuineIntel\ncpu family : 6\nmodel : 143\nstepping : unknown\n",
        )
        .unwrap();
        assert_eq!((cpu.model, cpu.stepping), (0x8f, 0));
        assert_eq!(cpu.code_name(), Some("Sapphire Rapids"));
    }

    #[test]
    fn this_machines_cpuinfo_parses() {
        // Linux always has /proc/cpuinfo (the project runs on Linux only): no skip.
        let cpu = detect().expect("/proc/cpuinfo is read and parsed");
        // Whatever it is, it names itself.
        assert!(!cpu.to_string().is_empty());
        if cfg!(target_arch = "x86_64") {
            assert!(!matches!(cpu.vendor, Vendor::Arm { .. }));
            if matches!(cpu.vendor, Vendor::Intel | Vendor::Amd) {
                assert_eq!(cpu.arch(), Arch::X86_64);
                assert!(cpu.family > 0);
            }
        }
        if cfg!(target_arch = "aarch64") {
            assert!(matches!(cpu.vendor, Vendor::Arm { .. }));
        }
    }

    #[test]
    fn discovers_pmus_in_a_sysfs_tree() {
        let root = std::env::temp_dir().join(format!("cpiflame-events-cpu-{}", std::process::id()));
        let devices = root.join("bus/event_source/devices");
        for (name, type_) in [
            ("cpu", Some("4\n")),
            ("software", Some("1\n")),
            ("odd", None),
        ] {
            std::fs::create_dir_all(devices.join(name)).unwrap();
            if let Some(t) = type_ {
                std::fs::write(devices.join(name).join("type"), t).unwrap();
            }
        }
        let events = devices.join("cpu/events");
        std::fs::create_dir_all(&events).unwrap();
        for alias in ["cycles", "mem-loads", "mem-loads.scale"] {
            std::fs::write(events.join(alias), "event=0x3c\n").unwrap();
        }
        let pmus = discover_pmus(&root).unwrap();
        assert_eq!(pmus.list().len(), 3);
        assert_eq!(pmus.get("cpu").unwrap().events, ["cycles", "mem-loads"]);
        assert!(pmus.has_event("cpu", "mem-loads") && !pmus.has_event("software", "cycles"));
        assert_eq!(pmus.type_of("cpu"), Some(4));
        assert_eq!(pmus.type_of("software"), Some(1));
        assert!(pmus.has("odd") && pmus.type_of("odd").is_none());
        assert!(pmus.has_cpu() && !pmus.is_hybrid_intel());
        std::fs::remove_dir_all(&root).unwrap();
        assert!(discover_pmus(&root).is_err());
        // This machine's sysfs: Linux with perf events (which the suite needs) always has the
        // software PMU there, so no skip.
        let here = discover_pmus(Path::new("/sys")).unwrap();
        assert_eq!(here.type_of("software"), Some(1));
    }
}
