//! Data-source decoding against the kernel's `perf_mem_data_src` definitions: every field at
//! its bit position (exact arithmetic on the shifts and widths of `perf_event.h`), and the
//! classification of the encodings Intel, AMD and POWER kernels produce.

use cpiflame_memaccess::bits::*;
use cpiflame_memaccess::{C2cStats, DataSource, ServedFrom};

/// (shift, width) of every field, in the union's order (little-endian bitfields).
const FIELDS: [(&str, u32, u32); 10] = [
    ("mem_op", 0, 5),
    ("mem_lvl", 5, 14),
    ("mem_snoop", 19, 5),
    ("mem_lock", 24, 2),
    ("mem_dtlb", 26, 7),
    ("mem_lvl_num", 33, 4),
    ("mem_remote", 37, 1),
    ("mem_snoopx", 38, 2),
    ("mem_blk", 40, 3),
    ("mem_hops", 43, 3),
];

fn get(ds: DataSource, name: &str) -> u64 {
    match name {
        "mem_op" => ds.op(),
        "mem_lvl" => ds.lvl(),
        "mem_snoop" => ds.snoop(),
        "mem_lock" => ds.lock(),
        "mem_dtlb" => ds.dtlb(),
        "mem_lvl_num" => ds.lvl_num(),
        "mem_remote" => u64::from(ds.remote()),
        "mem_snoopx" => ds.snoopx(),
        "mem_blk" => ds.blk(),
        "mem_hops" => ds.hops(),
        _ => unreachable!(),
    }
}

#[test]
fn fields_are_contiguous_and_match_the_shift_constants() {
    // The union packs the fields back to back from bit 0; mem_rsvd takes the last 18 bits.
    let mut next = 0;
    for (_, shift, width) in FIELDS {
        assert_eq!(shift, next);
        next = shift + width;
    }
    assert_eq!(next + 18, 64);
    let shifts = [
        OP_SHIFT,
        LVL_SHIFT,
        SNOOP_SHIFT,
        LOCK_SHIFT,
        TLB_SHIFT,
        LVLNUM_SHIFT,
        REMOTE_SHIFT,
        SNOOPX_SHIFT,
        BLK_SHIFT,
        HOPS_SHIFT,
    ];
    for ((name, shift, _), constant) in FIELDS.iter().zip(shifts) {
        assert_eq!(*shift, constant, "{name}");
    }
}

#[test]
fn every_bit_of_every_field_decodes_alone() {
    for (name, shift, width) in FIELDS {
        for bit in 0..width {
            let ds = DataSource(1 << (shift + bit));
            for (other, _, _) in FIELDS {
                let want = if other == name { 1 << bit } else { 0 };
                assert_eq!(get(ds, other), want, "bit {} read as {other}", shift + bit);
            }
        }
        // All ones in the field, nothing else.
        let all = ((1u64 << width) - 1) << shift;
        assert_eq!(get(DataSource(all), name), (1 << width) - 1);
        assert_eq!(get(DataSource(!all), name), 0, "{name} leaks");
    }
}

#[test]
fn flag_values_are_the_kernels() {
    // PERF_MEM_S(LVL, L3) and friends, as perf_event.h spells the values.
    assert_eq!(at(LVL_L3, LVL_SHIFT), 0x40 << 5);
    assert_eq!(at(SNOOP_HITM, SNOOP_SHIFT), 0x10 << 19);
    assert_eq!(at(LVLNUM_ANY_CACHE, LVLNUM_SHIFT), 0x0b << 33);
    assert_eq!(at(REMOTE_REMOTE, REMOTE_SHIFT), 1 << 37);
    assert_eq!(at(SNOOPX_PEER, SNOOPX_SHIFT), 2 << 38);
    assert_eq!(at(BLK_ADDR, BLK_SHIFT), 4 << 40);
    assert_eq!(at(HOPS_2, HOPS_SHIFT), 3 << 43);
    assert_eq!(at(LOCK_LOCKED, LOCK_SHIFT), 2 << 24);
    assert_eq!(at(TLB_WK | TLB_L1, TLB_SHIFT), 0x28 << 26);
    // An Intel load-latency record of an L3 hit on a modified line: 0x800842.
    let hitm =
        at(OP_LOAD, OP_SHIFT) | at(LVL_HIT | LVL_L3, LVL_SHIFT) | at(SNOOP_HITM, SNOOP_SHIFT);
    assert_eq!(hitm, 0x0080_0842);
    let ds = DataSource(hitm);
    assert!(ds.is_load() && !ds.is_store());
    assert_eq!(ds.lvl(), LVL_HIT | LVL_L3);
    assert_eq!(ds.snoop(), SNOOP_HITM);
}

fn load(lvl: u64, snoop: u64) -> DataSource {
    DataSource(at(OP_LOAD, OP_SHIFT) | at(lvl, LVL_SHIFT) | at(snoop, SNOOP_SHIFT))
}

fn store(lvl: u64) -> DataSource {
    DataSource(at(OP_STORE, OP_SHIFT) | at(lvl, LVL_SHIFT))
}

/// The counters perf c2c adds for one sample, as (name, value) pairs that are not zero.
fn counted(ds: DataSource) -> Vec<(&'static str, u64)> {
    let s = C2cStats::of_sample(ds, 0x1000, true);
    let all = [
        ("locks", s.locks),
        ("blk_data", s.blk_data),
        ("blk_addr", s.blk_addr),
        ("load", s.load),
        ("ld_uncache", s.ld_uncache),
        ("ld_io", s.ld_io),
        ("ld_fbhit", s.ld_fbhit),
        ("ld_l1hit", s.ld_l1hit),
        ("ld_l2hit", s.ld_l2hit),
        ("ld_llchit", s.ld_llchit),
        ("lcl_hitm", s.lcl_hitm),
        ("rmt_hitm", s.rmt_hitm),
        ("tot_hitm", s.tot_hitm),
        ("lcl_peer", s.lcl_peer),
        ("rmt_peer", s.rmt_peer),
        ("tot_peer", s.tot_peer),
        ("rmt_hit", s.rmt_hit),
        ("lcl_dram", s.lcl_dram),
        ("rmt_dram", s.rmt_dram),
        ("ld_shared", s.ld_shared),
        ("ld_excl", s.ld_excl),
        ("ld_miss", s.ld_miss),
        ("store", s.store),
        ("st_uncache", s.st_uncache),
        ("st_l1hit", s.st_l1hit),
        ("st_l1miss", s.st_l1miss),
        ("st_na", s.st_na),
        ("noparse", s.noparse),
    ];
    assert_eq!(s.nr_entries, 1);
    all.into_iter().filter(|(_, v)| *v != 0).collect()
}

/// A data source, the counters perf c2c adds for it, and its class.
type Case = (DataSource, &'static [(&'static str, u64)], ServedFrom);

#[test]
fn loads_count_and_classify_as_perf_c2c_does() {
    use ServedFrom::*;
    let cases: [Case; 12] = [
        (
            load(LVL_HIT | LVL_L1, SNOOP_NONE),
            &[("load", 1), ("ld_l1hit", 1)],
            L1,
        ),
        (
            load(LVL_HIT | LVL_LFB, SNOOP_NONE),
            &[("load", 1), ("ld_fbhit", 1)],
            LineFillBuffer,
        ),
        (
            load(LVL_HIT | LVL_L2, SNOOP_NONE),
            &[("load", 1), ("ld_l2hit", 1)],
            L2,
        ),
        (
            load(LVL_HIT | LVL_L3, SNOOP_HIT),
            &[("load", 1), ("ld_llchit", 1)],
            Llc,
        ),
        (
            load(LVL_HIT | LVL_L3, SNOOP_HITM),
            &[("load", 1), ("lcl_hitm", 1), ("tot_hitm", 1)],
            LocalHitm,
        ),
        (
            load(LVL_HIT | LVL_LOC_RAM, SNOOP_MISS),
            &[("load", 1), ("lcl_dram", 1), ("ld_excl", 1)],
            LocalDram,
        ),
        (
            load(LVL_HIT | LVL_LOC_RAM, SNOOP_HIT),
            &[("load", 1), ("lcl_dram", 1), ("ld_shared", 1)],
            LocalDram,
        ),
        (
            load(LVL_HIT | LVL_REM_RAM1, SNOOP_MISS),
            &[("load", 1), ("rmt_dram", 1), ("ld_excl", 1)],
            RemoteDram,
        ),
        (
            load(LVL_HIT | LVL_REM_CCE1, SNOOP_HIT),
            &[("load", 1), ("rmt_hit", 1)],
            RemoteCache,
        ),
        (
            load(LVL_HIT | LVL_REM_CCE2, SNOOP_HITM),
            &[("load", 1), ("rmt_hitm", 1), ("tot_hitm", 1)],
            RemoteHitm,
        ),
        (
            load(LVL_HIT | LVL_UNC, SNOOP_NONE),
            &[("load", 1), ("ld_uncache", 1)],
            Uncached,
        ),
        (
            load(LVL_HIT | LVL_IO, SNOOP_NONE),
            &[("load", 1), ("ld_io", 1)],
            Io,
        ),
    ];
    for (ds, want, class) in cases {
        assert_eq!(counted(ds), want, "{:#x}", ds.0);
        assert_eq!(ds.served_from(), class, "{:#x}", ds.0);
    }
    // A miss with no level that served it: counted as a miss, nowhere known.
    let miss = load(LVL_MISS | LVL_L3, SNOOP_NONE);
    assert_eq!(counted(miss), [("load", 1), ("ld_miss", 1)]);
    assert_eq!(miss.served_from(), Unknown);
}

#[test]
fn remote_bit_without_hops_is_remote_dram_and_remote_cache() {
    // Skylake: mem_remote with an L3 miss level; perf c2c counts remote DRAM and, with snoop
    // HITM, a remote HITM.
    let ds = DataSource(load(LVL_HIT | LVL_L3, SNOOP_HITM).0 | at(1, REMOTE_SHIFT));
    assert_eq!(
        counted(ds),
        [
            ("load", 1),
            ("lcl_hitm", 1),
            ("rmt_hitm", 1),
            ("tot_hitm", 2),
            ("rmt_dram", 1),
            ("ld_excl", 1),
        ]
    );
    assert_eq!(ds.served_from(), ServedFrom::RemoteHitm);
    // POWER: mem_remote with HOPS_0 is another core of the same node, not remote.
    let same_node = DataSource(ds.0 | at(HOPS_0, HOPS_SHIFT));
    assert_eq!(
        counted(same_node),
        [("load", 1), ("lcl_hitm", 1), ("tot_hitm", 1)]
    );
    assert_eq!(same_node.served_from(), ServedFrom::LocalHitm);
}

#[test]
fn peer_snoops_count_as_perf_does() {
    let peer = at(SNOOPX_PEER, SNOOPX_SHIFT);
    let l2 = DataSource(load(LVL_HIT | LVL_L2, SNOOP_NONE).0 | peer);
    assert_eq!(
        counted(l2),
        [
            ("load", 1),
            ("ld_l2hit", 1),
            ("lcl_peer", 1),
            ("tot_peer", 1)
        ]
    );
    let rmt = DataSource(load(LVL_HIT | LVL_REM_CCE1, SNOOP_NONE).0 | peer);
    assert_eq!(
        counted(rmt),
        [
            ("load", 1),
            ("rmt_peer", 1),
            ("tot_peer", 1),
            ("rmt_hit", 1)
        ]
    );
    assert_eq!(rmt.served_from(), ServedFrom::RemoteCache);
}

#[test]
fn stores_locks_blocks_and_unparsable() {
    assert_eq!(
        counted(store(LVL_HIT | LVL_L1)),
        [("store", 1), ("st_l1hit", 1)]
    );
    assert_eq!(
        counted(store(LVL_MISS | LVL_L1)),
        [("store", 1), ("st_l1miss", 1)]
    );
    assert_eq!(counted(store(LVL_NA)), [("store", 1), ("st_na", 1)]);
    assert_eq!(
        counted(store(LVL_HIT | LVL_UNC)),
        [("store", 1), ("st_uncache", 1)]
    );
    let locked = DataSource(store(LVL_HIT | LVL_L1).0 | at(LOCK_LOCKED, LOCK_SHIFT));
    assert_eq!(
        counted(locked),
        [("locks", 1), ("store", 1), ("st_l1hit", 1)]
    );
    let blocked =
        DataSource(load(LVL_HIT | LVL_L1, SNOOP_NONE).0 | at(BLK_DATA | BLK_ADDR, BLK_SHIFT));
    assert_eq!(
        counted(blocked),
        [
            ("blk_data", 1),
            ("blk_addr", 1),
            ("load", 1),
            ("ld_l1hit", 1)
        ]
    );
    // Neither load nor store (a prefetch, or PERF_MEM_NA).
    assert_eq!(
        counted(DataSource(at(OP_PFETCH, OP_SHIFT))),
        [("noparse", 1)]
    );
    // A load without a data address stops at the count; one outside any mapping is a
    // no-map reject but keeps its level counts.
    let l1 = load(LVL_HIT | LVL_L1, SNOOP_NONE);
    let s = C2cStats::of_sample(l1, 0, true);
    assert_eq!((s.load, s.ld_noadrs, s.ld_l1hit), (1, 1, 0));
    let s = C2cStats::of_sample(l1, 0x1000, false);
    assert_eq!((s.load, s.ld_l1hit, s.nomap), (1, 1, 1));
}

#[test]
fn level_numbers_classify_the_newer_encodings() {
    let num = |n: u64, extra: u64| {
        DataSource(at(OP_LOAD, OP_SHIFT) | at(LVL_HIT, LVL_SHIFT) | at(n, LVLNUM_SHIFT) | extra)
    };
    let remote = at(REMOTE_REMOTE, REMOTE_SHIFT);
    let cases = [
        (num(LVLNUM_L1, 0), ServedFrom::L1, "L1 hit"),
        (
            num(LVLNUM_LFB, 0),
            ServedFrom::LineFillBuffer,
            "LFB/MAB hit",
        ),
        (num(LVLNUM_L2, 0), ServedFrom::L2, "L2 hit"),
        (num(LVLNUM_L3, 0), ServedFrom::Llc, "L3 hit"),
        (
            num(LVLNUM_L3, at(SNOOP_HITM, SNOOP_SHIFT)),
            ServedFrom::LocalHitm,
            "L3 hit",
        ),
        (num(LVLNUM_RAM, 0), ServedFrom::LocalDram, "RAM hit"),
        (
            num(LVLNUM_RAM, remote | at(HOPS_2, HOPS_SHIFT)),
            ServedFrom::RemoteDram,
            "Remote socket, same board RAM hit",
        ),
        (
            num(LVLNUM_ANY_CACHE, remote | at(HOPS_1, HOPS_SHIFT)),
            ServedFrom::RemoteCache,
            "Remote node, same socket Any cache hit",
        ),
        (
            num(LVLNUM_ANY_CACHE, remote | at(HOPS_0, HOPS_SHIFT)),
            ServedFrom::Llc,
            "Remote core, same node Any cache hit",
        ),
        (
            num(LVLNUM_ANY_CACHE, remote | at(SNOOP_HITM, SNOOP_SHIFT)),
            ServedFrom::RemoteHitm,
            "Remote Any cache hit",
        ),
        (num(LVLNUM_IO, 0), ServedFrom::Io, "I/O hit"),
        (num(LVLNUM_PMEM, 0), ServedFrom::LocalDram, "PMEM hit"),
        (num(LVLNUM_NA, 0), ServedFrom::Unknown, "N/A"),
    ];
    for (ds, class, label) in cases {
        assert_eq!(ds.served_from(), class, "{:#x}", ds.0);
        assert_eq!(ds.level_label(), label, "{:#x}", ds.0);
    }
}

#[test]
fn level_flags_print_as_perf_names_them() {
    assert_eq!(load(LVL_HIT | LVL_L1, 0).level_label(), "L1 hit");
    assert_eq!(load(LVL_HIT | LVL_LFB, 0).level_label(), "LFB/MAB hit");
    assert_eq!(
        load(LVL_HIT | LVL_REM_CCE1, 0).level_label(),
        "Remote Cache (1 hop) hit"
    );
    assert_eq!(load(LVL_MISS | LVL_L3, 0).level_label(), "L3 miss");
    assert_eq!(
        load(LVL_HIT | LVL_L1 | LVL_L2, 0).level_label(),
        "L1 or L2 hit"
    );
    assert_eq!(load(LVL_NA, 0).level_label(), "N/A");
}

#[test]
fn the_scale_runs_from_l1_to_remote_hitm() {
    let ordered: Vec<ServedFrom> = {
        let mut v = ServedFrom::ALL.to_vec();
        v.sort();
        v
    };
    assert_eq!(ordered, ServedFrom::ALL);
    assert_eq!(ServedFrom::L1.distance(), Some(0.0));
    assert_eq!(ServedFrom::RemoteHitm.distance(), Some(1.0));
    assert_eq!(ServedFrom::Llc.distance(), Some(3.0 / 8.0));
    assert_eq!(ServedFrom::Io.distance(), None);
    assert_eq!(ServedFrom::Unknown.distance(), None);
}
