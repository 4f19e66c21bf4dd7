//! `union perf_mem_data_src` (the kernel's `include/uapi/linux/perf_event.h`): one u64 of
//! bit fields saying what a sampled access was (load, store, ...), which level of the memory
//! hierarchy served it, what the snoop found, whether it was locked, how the TLB fared,
//! whether it was blocked, and how many hops away the data was.

/// The field layout and the flag values of `perf_mem_data_src`, as `perf_event.h` defines
/// them. `*_SHIFT` is the field's first bit in the u64; the flags are values within a field.
pub mod bits {
    /// mem_op (5 bits): what the instruction did.
    pub const OP_SHIFT: u32 = 0;
    pub const OP_NA: u64 = 0x01;
    pub const OP_LOAD: u64 = 0x02;
    pub const OP_STORE: u64 = 0x04;
    pub const OP_PFETCH: u64 = 0x08;
    pub const OP_EXEC: u64 = 0x10;

    /// mem_lvl (14 bits): the level that served the access, with HIT or MISS. Deprecated
    /// by the kernel in favour of mem_lvl_num + mem_remote + mem_snoopx, but what perf c2c
    /// counts by.
    pub const LVL_SHIFT: u32 = 5;
    pub const LVL_NA: u64 = 0x01;
    pub const LVL_HIT: u64 = 0x02;
    pub const LVL_MISS: u64 = 0x04;
    pub const LVL_L1: u64 = 0x08;
    pub const LVL_LFB: u64 = 0x10;
    pub const LVL_L2: u64 = 0x20;
    pub const LVL_L3: u64 = 0x40;
    pub const LVL_LOC_RAM: u64 = 0x80;
    pub const LVL_REM_RAM1: u64 = 0x100;
    pub const LVL_REM_RAM2: u64 = 0x200;
    pub const LVL_REM_CCE1: u64 = 0x400;
    pub const LVL_REM_CCE2: u64 = 0x800;
    pub const LVL_IO: u64 = 0x1000;
    pub const LVL_UNC: u64 = 0x2000;

    /// mem_snoop (5 bits).
    pub const SNOOP_SHIFT: u32 = 19;
    pub const SNOOP_NA: u64 = 0x01;
    pub const SNOOP_NONE: u64 = 0x02;
    pub const SNOOP_HIT: u64 = 0x04;
    pub const SNOOP_MISS: u64 = 0x08;
    pub const SNOOP_HITM: u64 = 0x10;

    /// mem_lock (2 bits).
    pub const LOCK_SHIFT: u32 = 24;
    pub const LOCK_NA: u64 = 0x01;
    pub const LOCK_LOCKED: u64 = 0x02;

    /// mem_dtlb (7 bits).
    pub const TLB_SHIFT: u32 = 26;
    pub const TLB_NA: u64 = 0x01;
    pub const TLB_HIT: u64 = 0x02;
    pub const TLB_MISS: u64 = 0x04;
    pub const TLB_L1: u64 = 0x08;
    pub const TLB_L2: u64 = 0x10;
    pub const TLB_WK: u64 = 0x20;
    pub const TLB_OS: u64 = 0x40;

    /// mem_lvl_num (4 bits): the level as a number rather than a flag.
    pub const LVLNUM_SHIFT: u32 = 33;
    pub const LVLNUM_L1: u64 = 0x01;
    pub const LVLNUM_L2: u64 = 0x02;
    pub const LVLNUM_L3: u64 = 0x03;
    pub const LVLNUM_L4: u64 = 0x04;
    pub const LVLNUM_CXL: u64 = 0x09;
    pub const LVLNUM_IO: u64 = 0x0a;
    pub const LVLNUM_ANY_CACHE: u64 = 0x0b;
    pub const LVLNUM_LFB: u64 = 0x0c;
    pub const LVLNUM_RAM: u64 = 0x0d;
    pub const LVLNUM_PMEM: u64 = 0x0e;
    pub const LVLNUM_NA: u64 = 0x0f;

    /// mem_remote (1 bit).
    pub const REMOTE_SHIFT: u32 = 37;
    pub const REMOTE_REMOTE: u64 = 0x01;

    /// mem_snoopx (2 bits): snoop results beyond mem_snoop.
    pub const SNOOPX_SHIFT: u32 = 38;
    pub const SNOOPX_FWD: u64 = 0x01;
    pub const SNOOPX_PEER: u64 = 0x02;

    /// mem_blk (3 bits): why the access was blocked.
    pub const BLK_SHIFT: u32 = 40;
    pub const BLK_NA: u64 = 0x01;
    pub const BLK_DATA: u64 = 0x02;
    pub const BLK_ADDR: u64 = 0x04;

    /// mem_hops (3 bits): how far the data was, with mem_remote.
    pub const HOPS_SHIFT: u32 = 43;
    /// Remote core, same node.
    pub const HOPS_0: u64 = 0x01;
    /// Remote node, same socket.
    pub const HOPS_1: u64 = 0x02;
    /// Remote socket, same board.
    pub const HOPS_2: u64 = 0x03;
    /// Remote board.
    pub const HOPS_3: u64 = 0x04;

    /// `PERF_MEM_S(field, value)`: a flag value placed at its field's shift.
    pub const fn at(value: u64, shift: u32) -> u64 {
        value << shift
    }
}

use bits::*;

/// A sample's PERF_SAMPLE_DATA_SRC word, field by field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DataSource(pub u64);

/// The `width` bits of `word` from `shift` up.
const fn field(word: u64, shift: u32, width: u32) -> u64 {
    (word >> shift) & ((1 << width) - 1)
}

impl DataSource {
    /// mem_op: [`bits::OP_LOAD`], [`bits::OP_STORE`], ...
    pub fn op(self) -> u64 {
        field(self.0, OP_SHIFT, 5)
    }
    /// mem_lvl: [`bits::LVL_HIT`] | [`bits::LVL_L1`], ...
    pub fn lvl(self) -> u64 {
        field(self.0, LVL_SHIFT, 14)
    }
    /// mem_snoop.
    pub fn snoop(self) -> u64 {
        field(self.0, SNOOP_SHIFT, 5)
    }
    /// mem_lock.
    pub fn lock(self) -> u64 {
        field(self.0, LOCK_SHIFT, 2)
    }
    /// mem_dtlb.
    pub fn dtlb(self) -> u64 {
        field(self.0, TLB_SHIFT, 7)
    }
    /// mem_lvl_num: [`bits::LVLNUM_L1`], ...; 0 when the source does not use it.
    pub fn lvl_num(self) -> u64 {
        field(self.0, LVLNUM_SHIFT, 4)
    }
    /// mem_remote.
    pub fn remote(self) -> bool {
        field(self.0, REMOTE_SHIFT, 1) != 0
    }
    /// mem_snoopx.
    pub fn snoopx(self) -> u64 {
        field(self.0, SNOOPX_SHIFT, 2)
    }
    /// mem_blk.
    pub fn blk(self) -> u64 {
        field(self.0, BLK_SHIFT, 3)
    }
    /// mem_hops: 0 when not given, else [`bits::HOPS_0`] ...
    pub fn hops(self) -> u64 {
        field(self.0, HOPS_SHIFT, 3)
    }

    /// A load (perf c2c checks LOAD before STORE).
    pub fn is_load(self) -> bool {
        self.op() & OP_LOAD != 0
    }
    /// A store that is not also flagged a load.
    pub fn is_store(self) -> bool {
        !self.is_load() && self.op() & OP_STORE != 0
    }
    /// A locked (atomic) access.
    pub fn is_locked(self) -> bool {
        self.lock() & LOCK_LOCKED != 0
    }

    /// perf c2c's "remote" for sources without a remote mem_lvl flag: mem_remote with no
    /// hop count (Skylake reports an unknown remote level so; on POWER mem_remote with
    /// HOPS_0 means another core of the same node, which is not remote).
    pub fn remote_without_hops(self) -> bool {
        self.remote() && self.hops() == 0
    }

    /// Where the access was served from, on one scale from near to far; see [`ServedFrom`]
    /// for the rules.
    pub fn served_from(self) -> ServedFrom {
        let lvl = self.lvl();
        if lvl & !(LVL_NA | LVL_HIT | LVL_MISS) != 0 {
            return self.served_from_lvl(lvl);
        }
        self.served_from_lvl_num()
    }

    /// From the mem_lvl flags, as perf c2c counts them; when several apply, the farthest.
    fn served_from_lvl(self, lvl: u64) -> ServedFrom {
        let snoop = self.snoop();
        let mrem = self.remote_without_hops();
        let mut far = None::<ServedFrom>;
        let mut at = |s: ServedFrom| far = Some(far.map_or(s, |f| f.max(s)));
        if lvl & LVL_HIT != 0 {
            if lvl & LVL_UNC != 0 {
                at(ServedFrom::Uncached);
            }
            if lvl & LVL_IO != 0 {
                at(ServedFrom::Io);
            }
            if lvl & LVL_LFB != 0 {
                at(ServedFrom::LineFillBuffer);
            }
            if lvl & LVL_L1 != 0 {
                at(ServedFrom::L1);
            }
            if lvl & LVL_L2 != 0 {
                at(ServedFrom::L2);
            }
            if lvl & LVL_L3 != 0 {
                at(if snoop & SNOOP_HITM != 0 {
                    ServedFrom::LocalHitm
                } else {
                    ServedFrom::Llc
                });
            }
            if lvl & LVL_LOC_RAM != 0 {
                at(ServedFrom::LocalDram);
            }
            if lvl & (LVL_REM_RAM1 | LVL_REM_RAM2) != 0 || mrem {
                at(ServedFrom::RemoteDram);
            }
        }
        if lvl & (LVL_REM_CCE1 | LVL_REM_CCE2) != 0 || mrem {
            if snoop & SNOOP_HITM != 0 {
                at(ServedFrom::RemoteHitm);
            } else if snoop & SNOOP_HIT != 0 || self.snoopx() & SNOOPX_PEER != 0 {
                at(ServedFrom::RemoteCache);
            }
        }
        far.unwrap_or(ServedFrom::Unknown)
    }

    /// From mem_lvl_num, mem_remote and mem_hops (the newer encoding, e.g. AMD IBS, ARM
    /// SPE): remote unless mem_hops says another core of the same node.
    fn served_from_lvl_num(self) -> ServedFrom {
        if self.lvl() & LVL_HIT == 0 && self.lvl() & LVL_MISS != 0 {
            return ServedFrom::Unknown;
        }
        let remote = self.remote() && self.hops() != HOPS_0;
        let hitm = self.snoop() & SNOOP_HITM != 0;
        match self.lvl_num() {
            LVLNUM_L1 => ServedFrom::L1,
            LVLNUM_LFB => ServedFrom::LineFillBuffer,
            LVLNUM_L2 if !remote => ServedFrom::L2,
            LVLNUM_L2 | LVLNUM_L3 | LVLNUM_L4 | LVLNUM_ANY_CACHE => match (remote, hitm) {
                (false, false) => ServedFrom::Llc,
                (false, true) => ServedFrom::LocalHitm,
                (true, false) => ServedFrom::RemoteCache,
                (true, true) => ServedFrom::RemoteHitm,
            },
            LVLNUM_RAM | LVLNUM_PMEM | LVLNUM_CXL => {
                if remote {
                    ServedFrom::RemoteDram
                } else {
                    ServedFrom::LocalDram
                }
            }
            LVLNUM_IO => ServedFrom::Io,
            _ => ServedFrom::Unknown,
        }
    }

    /// The level as perf prints it (`perf mem report`'s "Memory access" column, perf's
    /// `perf_mem__lvl_scnprintf`): from mem_lvl_num when set ("Remote ", the hop distance,
    /// the level, "hit"/"miss"), else the mem_lvl flags joined by " or ", else "N/A".
    pub fn level_label(self) -> String {
        const LVL_NAMES: [&str; 14] = [
            "N/A",
            "HIT",
            "MISS",
            "L1",
            "LFB/MAB",
            "L2",
            "L3",
            "Local RAM",
            "Remote RAM (1 hop)",
            "Remote RAM (2 hops)",
            "Remote Cache (1 hop)",
            "Remote Cache (2 hops)",
            "I/O",
            "Uncached",
        ];
        const HOPS_NAMES: [&str; 5] = [
            "N/A",
            "core, same node",
            "node, same socket",
            "socket, same board",
            "board",
        ];
        let lvl = self.lvl();
        let hit_miss = if lvl & LVL_HIT != 0 {
            "hit"
        } else if lvl & LVL_MISS != 0 {
            "miss"
        } else {
            ""
        };
        let num = self.lvl_num();
        if num != 0 && num != LVLNUM_NA {
            let mut out = String::new();
            if self.remote() {
                out.push_str("Remote ");
            }
            if let Some(h) = HOPS_NAMES
                .get(self.hops() as usize)
                .filter(|_| self.hops() != 0)
            {
                out.push_str(h);
                out.push(' ');
            }
            out.push_str(match num {
                LVLNUM_L1 => "L1",
                LVLNUM_L2 => "L2",
                LVLNUM_L3 => "L3",
                LVLNUM_L4 => "L4",
                LVLNUM_CXL => "CXL",
                LVLNUM_IO => "I/O",
                LVLNUM_ANY_CACHE => "Any cache",
                LVLNUM_LFB => "LFB/MAB",
                LVLNUM_RAM => "RAM",
                LVLNUM_PMEM => "PMEM",
                _ => "",
            });
            if out.ends_with(' ') || out.is_empty() {
                out.push_str(&format!("Unknown level {num}"));
            }
            out.push(' ');
            out.push_str(hit_miss);
            return out;
        }
        let levels = lvl & !(LVL_NA | LVL_HIT | LVL_MISS);
        if levels == 0 {
            return "N/A".into();
        }
        let names: Vec<&str> = (0..14)
            .filter(|i| levels & (1 << i) != 0)
            .map(|i| LVL_NAMES[i])
            .collect();
        format!("{} {hit_miss}", names.join(" or "))
    }
}

/// Where a load was served from, ordered from nearest (fastest) to farthest: the scale the
/// mem flame graph colours by. [`ServedFrom::Io`], [`ServedFrom::Uncached`] and
/// [`ServedFrom::Unknown`] are off the distance scale and sort after it.
///
/// Rules ([`DataSource::served_from`]): the mem_lvl flags when any level flag is set, with
/// perf c2c's reading of them (L3 hit with snoop HITM is a local HITM; a remote cache with
/// snoop HITM a remote HITM, with snoop HIT or snoopx PEER a remote cache hit; mem_remote
/// without mem_hops counts as remote DRAM and remote cache, as in perf c2c), taking the
/// farthest when several apply. Otherwise mem_lvl_num with mem_remote (remote unless
/// mem_hops is HOPS_0, another core of the same node): caches beyond L2 are LLC or remote
/// cache (HITM when the snoop says so), RAM, PMEM and CXL are DRAM. A miss with no level
/// that served it is Unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ServedFrom {
    /// L1 data cache hit.
    L1,
    /// Line fill buffer (or AMD's miss address buffer): the line was already on its way.
    LineFillBuffer,
    /// L2 hit.
    L2,
    /// Last-level cache hit, clean.
    Llc,
    /// Last-level cache hit on a line another core of this node had modified.
    LocalHitm,
    /// DRAM of this node.
    LocalDram,
    /// A clean line in another node's cache.
    RemoteCache,
    /// DRAM of another node.
    RemoteDram,
    /// A line another node's cache had modified: the costliest, what false sharing across
    /// sockets looks like.
    RemoteHitm,
    /// I/O memory.
    Io,
    /// Uncached memory.
    Uncached,
    /// Not said, or not a level (a miss with nowhere named).
    Unknown,
}

impl ServedFrom {
    /// Every class, nearest first.
    pub const ALL: [ServedFrom; 12] = [
        ServedFrom::L1,
        ServedFrom::LineFillBuffer,
        ServedFrom::L2,
        ServedFrom::Llc,
        ServedFrom::LocalHitm,
        ServedFrom::LocalDram,
        ServedFrom::RemoteCache,
        ServedFrom::RemoteDram,
        ServedFrom::RemoteHitm,
        ServedFrom::Io,
        ServedFrom::Uncached,
        ServedFrom::Unknown,
    ];

    /// A short name for legends and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ServedFrom::L1 => "L1",
            ServedFrom::LineFillBuffer => "LFB",
            ServedFrom::L2 => "L2",
            ServedFrom::Llc => "LLC",
            ServedFrom::LocalHitm => "local HITM",
            ServedFrom::LocalDram => "local DRAM",
            ServedFrom::RemoteCache => "remote cache",
            ServedFrom::RemoteDram => "remote DRAM",
            ServedFrom::RemoteHitm => "remote HITM",
            ServedFrom::Io => "I/O",
            ServedFrom::Uncached => "uncached",
            ServedFrom::Unknown => "unknown",
        }
    }

    /// Position on the near-to-far scale: 0.0 for L1 to 1.0 for remote HITM; `None` for the
    /// classes off the scale.
    pub fn distance(self) -> Option<f64> {
        let i = ServedFrom::ALL.iter().position(|s| *s == self)?;
        let last = ServedFrom::ALL
            .iter()
            .position(|s| *s == ServedFrom::RemoteHitm)?;
        (i <= last).then(|| i as f64 / last as f64)
    }
}
