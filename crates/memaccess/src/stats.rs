//! perf c2c's counters of memory samples (`struct c2c_stats`) and how one sample adds to them
//! (the facts of perf's `c2c_decode_stats` in `tools/perf/util/mem-events.c`).

use std::ops::AddAssign;

use crate::bits::*;
use crate::DataSource;

/// Counts of memory samples by what their data source says, as perf c2c keeps them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct C2cStats {
    /// Samples (records).
    pub nr_entries: u64,
    /// Locked (atomic) loads and stores.
    pub locks: u64,
    /// Loads blocked because data could not be forwarded / by an address conflict.
    pub blk_data: u64,
    pub blk_addr: u64,
    pub load: u64,
    /// Loads without a data address (not counted further).
    pub ld_noadrs: u64,
    pub ld_uncache: u64,
    pub ld_io: u64,
    /// Line fill buffer hits.
    pub ld_fbhit: u64,
    pub ld_l1hit: u64,
    pub ld_l2hit: u64,
    /// LLC hits that were not HITM.
    pub ld_llchit: u64,
    pub lcl_hitm: u64,
    pub rmt_hitm: u64,
    pub tot_hitm: u64,
    /// Loads served by a peer cache (snoopx PEER) of this node / another node.
    pub lcl_peer: u64,
    pub rmt_peer: u64,
    pub tot_peer: u64,
    /// Remote cache hits, clean.
    pub rmt_hit: u64,
    pub lcl_dram: u64,
    pub rmt_dram: u64,
    /// DRAM loads whose snoop found the line shared (HIT) / exclusive (anything else).
    pub ld_shared: u64,
    pub ld_excl: u64,
    /// Loads flagged MISS.
    pub ld_miss: u64,
    pub store: u64,
    pub st_noadrs: u64,
    pub st_uncache: u64,
    pub st_l1hit: u64,
    pub st_l1miss: u64,
    /// Stores with no memory level (mem_lvl NA).
    pub st_na: u64,
    /// Loads and stores whose data or code address fell in no mapping.
    pub nomap: u64,
    /// Samples that are neither load nor store.
    pub noparse: u64,
}

impl C2cStats {
    /// The counts of one sample with data source `ds`, data address `daddr`; `mapped` says
    /// whether both the data and the code address fell in a known mapping.
    pub fn of_sample(ds: DataSource, daddr: u64, mapped: bool) -> C2cStats {
        let mut s = C2cStats {
            nr_entries: 1,
            ..C2cStats::default()
        };
        let lvl = ds.lvl();
        let snoop = ds.snoop();
        let snoopx = ds.snoopx();
        let mrem = ds.remote_without_hops();
        s.locks = u64::from(ds.is_locked());
        s.blk_data = u64::from(ds.blk() & BLK_DATA != 0);
        s.blk_addr = u64::from(ds.blk() & BLK_ADDR != 0);
        let has = |flag: u64| lvl & flag != 0;
        if ds.is_load() {
            s.load = 1;
            if daddr == 0 {
                s.ld_noadrs = 1;
                return s;
            }
            if has(LVL_HIT) {
                s.ld_uncache = u64::from(has(LVL_UNC));
                s.ld_io = u64::from(has(LVL_IO));
                s.ld_fbhit = u64::from(has(LVL_LFB));
                s.ld_l1hit = u64::from(has(LVL_L1));
                if has(LVL_L2) {
                    s.ld_l2hit = 1;
                    if snoopx & SNOOPX_PEER != 0 {
                        s.lcl_peer += 1;
                    }
                }
                if has(LVL_L3) {
                    if snoop & SNOOP_HITM != 0 {
                        s.lcl_hitm = 1;
                    } else {
                        s.ld_llchit = 1;
                    }
                    if snoopx & SNOOPX_PEER != 0 {
                        s.lcl_peer += 1;
                    }
                }
                let shared = u64::from(snoop & SNOOP_HIT != 0);
                if has(LVL_LOC_RAM) {
                    s.lcl_dram = 1;
                    s.ld_shared += shared;
                    s.ld_excl += 1 - shared;
                }
                if has(LVL_REM_RAM1) || has(LVL_REM_RAM2) || mrem {
                    s.rmt_dram = 1;
                    s.ld_shared += shared;
                    s.ld_excl += 1 - shared;
                }
            }
            if has(LVL_REM_CCE1) || has(LVL_REM_CCE2) || mrem {
                if snoop & SNOOP_HIT != 0 {
                    s.rmt_hit = 1;
                } else if snoop & SNOOP_HITM != 0 {
                    s.rmt_hitm = 1;
                } else if snoopx & SNOOPX_PEER != 0 {
                    s.rmt_hit = 1;
                    s.rmt_peer = 1;
                }
            }
            s.ld_miss = u64::from(has(LVL_MISS));
            s.tot_hitm = s.lcl_hitm + s.rmt_hitm;
            s.tot_peer = s.lcl_peer + s.rmt_peer;
        } else if ds.is_store() {
            s.store = 1;
            if daddr == 0 {
                s.st_noadrs = 1;
                return s;
            }
            if has(LVL_HIT) {
                s.st_uncache = u64::from(has(LVL_UNC));
                s.st_l1hit = u64::from(has(LVL_L1));
            }
            s.st_l1miss = u64::from(has(LVL_MISS) && has(LVL_L1));
            s.st_na = u64::from(has(LVL_NA));
        } else {
            s.noparse = 1;
            return s;
        }
        s.nomap = u64::from(!mapped);
        s
    }

    /// Loads perf c2c's tables count (perf's `get_load_cache_hits` + `get_load_llc_misses`):
    /// by level, so a sample counted at two levels counts twice and an uncached, I/O or
    /// unknown-level load not at all.
    pub fn classified_loads(&self) -> u64 {
        self.ld_fbhit
            + self.ld_l1hit
            + self.ld_l2hit
            + self.ld_llchit
            + self.lcl_hitm
            + self.llc_misses()
    }

    /// Stores perf c2c's tables count (`get_stores`): L1 hit, L1 miss, no level.
    pub fn classified_stores(&self) -> u64 {
        self.st_l1hit + self.st_l1miss + self.st_na
    }

    /// perf c2c's "Total records" of a line or row (`total_records`).
    pub fn classified_records(&self) -> u64 {
        self.classified_loads() + self.classified_stores()
    }

    /// Loads that missed the LLC (perf's "Load LLC Misses"): remote HITM, remote HIT,
    /// local and remote DRAM.
    pub fn llc_misses(&self) -> u64 {
        self.rmt_hitm + self.rmt_hit + self.lcl_dram + self.rmt_dram
    }
}

impl AddAssign for C2cStats {
    fn add_assign(&mut self, o: C2cStats) {
        macro_rules! add {
            ($($f:ident),*) => { $( self.$f += o.$f; )* };
        }
        add!(
            nr_entries, locks, blk_data, blk_addr, load, ld_noadrs, ld_uncache, ld_io, ld_fbhit,
            ld_l1hit, ld_l2hit, ld_llchit, lcl_hitm, rmt_hitm, tot_hitm, lcl_peer, rmt_peer,
            tot_peer, rmt_hit, lcl_dram, rmt_dram, ld_shared, ld_excl, ld_miss, store, st_noadrs,
            st_uncache, st_l1hit, st_l1miss, st_na, nomap, noparse
        );
    }
}
