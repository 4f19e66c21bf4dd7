//! The top-down formulas against the kernel's perf metric JSON, perf's published `perf stat`
//! output, and a model of the kernel's per-read PERF_METRICS accumulation.
//!
//! Each formula set has its own small evaluator here, transcribed from the JSON expression
//! quoted above it (file and commit of torvalds/linux it was read from), run on generated
//! count vectors including edge cases; `Plan::apply` must agree to 1e-12, and be `None`
//! exactly where perf's evaluation divides by zero outside `d_ratio` (perf gives NaN).

use std::collections::HashMap;

use cpiflame_profile::topdown::{plan, tma_role_of, Breakdown, Cpu, FormulaSet, Machine, TmaRole};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// The values of a JSON expression's events, by the JSON's names.
type Ev = HashMap<&'static str, f64>;

/// What an evaluator gives: level 1 (ret, bs, fe, be), SMT contention, level 2 in
/// `Level2`'s field order. NaN where perf's expression divides by zero.
struct Want {
    l1: [f64; 4],
    smt: Option<f64>,
    l2: Option<[f64; 8]>,
}

fn max(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

/// perf's division: NaN on a zero denominator (tools/perf/util/expr.y).
fn div(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        f64::NAN
    } else {
        a / b
    }
}

/// perf's `d_ratio`.
fn d_ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        a / b
    }
}

fn close(got: f64, want: f64, what: &str, ctx: &str) {
    assert!(
        (got - want).abs() <= 1e-12 * want.abs().max(1.0),
        "{what}: got {got}, JSON gives {want} ({ctx})"
    );
}

/// Applies `names`/`machine`'s plan to `sums` and checks it against `want` (the evaluator
/// on the same counts, keyed by column name).
fn check(names: &[&str], machine: &Machine, sums: &[u64], want: &Want) {
    let plan = plan(names, machine).unwrap_or_else(|e| panic!("{names:?}: {e}"));
    let got = plan.apply(sums);
    let ctx = format!("{:?} on {sums:?}", plan.set);
    if want.l1.iter().any(|x| x.is_nan()) {
        assert!(got.is_none(), "perf gives NaN, got {got:?} ({ctx})");
        return;
    }
    let got: Breakdown = got.unwrap_or_else(|| panic!("None where perf has numbers ({ctx})"));
    let l1 = [
        got.retiring,
        got.bad_speculation,
        got.frontend_bound,
        got.backend_bound,
    ];
    for (i, name) in [
        "retiring",
        "bad_speculation",
        "frontend_bound",
        "backend_bound",
    ]
    .iter()
    .enumerate()
    {
        close(l1[i], want.l1[i], name, &ctx);
    }
    match (got.smt_contention, want.smt) {
        (Some(g), Some(w)) => close(g, w, "smt_contention", &ctx),
        (None, None) => {}
        other => panic!("smt_contention {other:?} ({ctx})"),
    }
    match (got.level2, want.l2) {
        (Some(g), Some(w)) => {
            let g = [
                g.fetch_latency,
                g.fetch_bandwidth,
                g.branch_mispredicts,
                g.machine_clears,
                g.memory_bound,
                g.core_bound,
                g.heavy_operations,
                g.light_operations,
            ];
            for (i, name) in plan.set.level2_names().iter().enumerate() {
                close(g[i], w[i], name, &ctx);
            }
        }
        (None, None) => {}
        other => panic!("level2 {other:?} ({ctx})"),
    }
}

/// Count vectors: random ones of the given ranges plus the edge cases every set is run on
/// (all zero, each event alone zero, each event alone huge).
fn vectors(n_events: usize, seed: u64) -> Vec<Vec<u64>> {
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut out = vec![vec![0; n_events]];
    for _ in 0..400 {
        out.push(
            (0..n_events)
                .map(|_| match rng.random_range(0..10) {
                    0 => 0,
                    1 => rng.random_range(0..10),
                    _ => rng.random_range(0..5_000_000),
                })
                .collect(),
        );
    }
    let base: Vec<u64> = (0..n_events)
        .map(|i| 1_000_000 + 37_000 * i as u64)
        .collect();
    for i in 0..n_events {
        let mut zero = base.clone();
        zero[i] = 0;
        out.push(zero);
        let mut huge = base.clone();
        huge[i] = 50_000_000;
        out.push(huge);
    }
    out
}

fn ev(names: &[&'static str], sums: &[u64]) -> Ev {
    names
        .iter()
        .zip(sums)
        .map(|(&n, &v)| (n, v as f64))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Intel Golden Cove: tools/perf/pmu-events/arch/x86/sapphirerapids/spr-metrics.json at
// torvalds/linux 26f4b26f76bd468d5cf36219b5c7d3802be08462 (`M` is the recurring
// "(topdown\\-fe\\-bound + topdown\\-bad\\-spec + topdown\\-retiring + topdown\\-be\\-bound)"):
//   tma_frontend_bound:     "topdown\\-fe\\-bound / M - INT_MISC.UOP_DROPPING / tma_info_thread_slots"
//                           (read in the 2023 "New metricgroup output" patch's spr-metrics.json)
//   tma_backend_bound:      "topdown\\-be\\-bound / M"
//   tma_retiring:           "topdown\\-retiring / M" (+ "0 * tma_info_thread_slots" in earlier versions)
//   tma_bad_speculation:    "max(1 - (tma_frontend_bound + tma_backend_bound + tma_retiring), 0)"
//   tma_fetch_latency:      "topdown\\-fetch\\-lat / M - INT_MISC.UOP_DROPPING / tma_info_thread_slots"
//   tma_fetch_bandwidth:    "max(0, tma_frontend_bound - tma_fetch_latency)"
//   tma_branch_mispredicts: "topdown\\-br\\-mispredict / M"
//   tma_machine_clears:     "max(0, tma_bad_speculation - tma_branch_mispredicts)"
//   tma_memory_bound:       "topdown\\-mem\\-bound / M"
//   tma_core_bound:         "max(0, tma_backend_bound - tma_memory_bound)"
//   tma_heavy_operations:   "topdown\\-heavy\\-ops / M + 0 * tma_info_thread_slots"
//   tma_light_operations:   "max(0, tma_retiring - tma_heavy_operations)"
//   tma_info_thread_slots:  TOPDOWN.SLOTS (perf's `slots`)
// ---------------------------------------------------------------------------------------

const INTEL8: [&str; 10] = [
    "slots",
    "topdown-retiring",
    "topdown-bad-spec",
    "topdown-fe-bound",
    "topdown-be-bound",
    "topdown-heavy-ops",
    "topdown-br-mispredict",
    "topdown-fetch-lat",
    "topdown-mem-bound",
    "INT_MISC.UOP_DROPPING",
];

fn spr_json(e: &Ev, with_uop_dropping: bool) -> Want {
    let m = e["topdown-fe-bound"]
        + e["topdown-bad-spec"]
        + e["topdown-retiring"]
        + e["topdown-be-bound"];
    let dropping = if with_uop_dropping {
        div(e["INT_MISC.UOP_DROPPING"], e["slots"])
    } else {
        0.0
    };
    let fe = div(e["topdown-fe-bound"], m) - dropping;
    let be = div(e["topdown-be-bound"], m);
    let ret = div(e["topdown-retiring"], m);
    let bs = max(1.0 - (fe + be + ret), 0.0);
    let fetch_lat = div(e["topdown-fetch-lat"], m) - dropping;
    let br = div(e["topdown-br-mispredict"], m);
    let mem = div(e["topdown-mem-bound"], m);
    let heavy = div(e["topdown-heavy-ops"], m) + 0.0 * e["slots"];
    let nan = |x: f64| {
        if fe.is_nan() || bs.is_nan() {
            f64::NAN
        } else {
            x
        }
    };
    intel_tree(
        [nan(ret), nan(bs), nan(fe), nan(be)],
        fetch_lat,
        br,
        mem,
        heavy,
    )
}

/// The Intel JSONs' level 1 with the level-2 children and their residual siblings
/// ("max(0, tma_frontend_bound - tma_fetch_latency)", "max(0, tma_bad_speculation -
/// tma_branch_mispredicts)", "max(0, tma_backend_bound - tma_memory_bound)",
/// "max(0, tma_retiring - tma_heavy_operations)").
fn intel_tree(l1: [f64; 4], lat: f64, br: f64, mem: f64, heavy: f64) -> Want {
    let [ret, bs, fe, be] = l1;
    Want {
        l1,
        smt: None,
        l2: Some([
            lat,
            max(0.0, fe - lat),
            br,
            max(0.0, bs - br),
            mem,
            max(0.0, be - mem),
            heavy,
            max(0.0, ret - heavy),
        ]),
    }
}

#[test]
fn golden_cove_matches_spr_metrics_json() {
    let machine = Machine::of(Cpu::IntelGoldenCove);
    let mut cases = vectors(INTEL8.len(), 1);
    // Metrics summing above slots (rounding: Σ/slots = 1.0118 in the SPR vector), uop_dropping
    // above the front end (negative FE, then a bad speculation above 1 − … clamped), fetch
    // latency above the front end, each level-2 metric above its parent (the max(0, …)
    // clamps), and zero slots with metrics present (perf: NaN).
    cases.extend([
        vec![1000, 300, 300, 300, 300, 10, 10, 10, 10, 0],
        vec![1000, 250, 250, 250, 250, 10, 10, 10, 10, 900],
        vec![1000, 100, 100, 700, 100, 10, 10, 10, 10, 0],
        vec![1000, 100, 100, 100, 700, 90, 90, 100, 99, 20],
        vec![1000, 100, 100, 100, 700, 300, 300, 300, 800, 20],
        vec![1000, 500, 100, 300, 100, 600, 200, 400, 200, 400],
        vec![0, 100, 100, 100, 100, 1, 1, 1, 1, 5],
        vec![1000, 0, 0, 0, 0, 0, 0, 0, 0, 5],
    ]);
    for sums in &cases {
        check(&INTEL8, &machine, sums, &spr_json(&ev(&INTEL8, sums), true));
        // Without int_misc.uop_dropping: the same expressions with its term left out.
        let names = &INTEL8[..9];
        let want = spr_json(&ev(names, &sums[..9]), false);
        check(names, &machine, &sums[..9], &want);
    }
    let l1_only = &[
        "slots",
        "topdown-retiring",
        "topdown-bad-spec",
        "topdown-fe-bound",
        "topdown-be-bound",
    ];
    let set = plan(l1_only, &machine).unwrap().set;
    assert_eq!(
        set,
        FormulaSet::IntelGoldenCove {
            uop_dropping: false,
            level2: false
        }
    );
    assert!(set.approximation().is_some());
    assert!(plan(&INTEL8, &machine)
        .unwrap()
        .set
        .approximation()
        .is_none());
}

/// Kan Liang, "perf stat: New metricgroup output for the default mode" (LKML, 2023), a
/// Sapphire Rapids `perf stat sleep 1`: perf printed backend 18.4, retiring 17.2, bad
/// speculation 23.1, frontend 41.4 (%).
#[test]
fn sapphire_rapids_perf_stat_vector() {
    let names = [
        "TOPDOWN.SLOTS",
        "topdown-retiring",
        "topdown-bad-spec",
        "topdown-fe-bound",
        "topdown-be-bound",
        "INT_MISC.UOP_DROPPING",
    ];
    let sums = [3_245_820, 564_859, 744_874, 1_370_999, 603_271, 12_661];
    let b = plan(
        &names,
        &Machine::of(Cpu::from_perf_cpuid("GenuineIntel,6,143,8")),
    )
    .unwrap()
    .apply(&sums)
    .unwrap();
    let pct = |x: f64| format!("{:.1}", 100.0 * x);
    assert_eq!(pct(b.backend_bound), "18.4");
    assert_eq!(pct(b.retiring), "17.2");
    assert_eq!(pct(b.bad_speculation), "23.1");
    assert_eq!(pct(b.frontend_bound), "41.4");
    // Bad speculation as its own ratio would be 22.7: perf's is the remainder.
    assert_eq!(
        pct(744_874.0 / (564_859.0 + 744_874.0 + 1_370_999.0 + 603_271.0)),
        "22.7"
    );
}

/// Kan Liang, "perf stat: Add Topdown metrics events as default events" (LKML, Jan 2021),
/// Ice Lake: perf printed retiring 15.0, bad speculation 25.8, frontend 39.9, backend 19.2 —
/// ratios of the metrics' sum (by slots the front end would be 40.0), without the later GP
/// corrections, which is what the Ice Lake set does without those events.
#[test]
fn ice_lake_perf_stat_vector() {
    let names = [
        "slots",
        "topdown-retiring",
        "topdown-bad-spec",
        "topdown-fe-bound",
        "topdown-be-bound",
    ];
    let sums = [1_585_555, 238_941, 410_378, 634_222, 304_675];
    let p = plan(
        &names,
        &Machine::of(Cpu::from_perf_cpuid("GenuineIntel-6-7E-5")),
    )
    .unwrap();
    assert!(matches!(p.set, FormulaSet::IntelIceLake { .. }));
    let b = p.apply(&sums).unwrap();
    let pct = |x: f64| format!("{:.1}", 100.0 * x);
    assert_eq!(
        [
            pct(b.retiring),
            pct(b.bad_speculation),
            pct(b.frontend_bound),
            pct(b.backend_bound)
        ],
        ["15.0", "25.8", "39.9", "19.2"]
    );
}

// ---------------------------------------------------------------------------------------
// Intel Ice Lake: tools/perf/pmu-events/arch/x86/icelakex/icx-metrics.json at torvalds/linux
// 06f609b3119876b42f19fdb690b10896d3c648e6:
//   tma_frontend_bound:  "topdown\\-fe\\-bound / M - INT_MISC.UOP_DROPPING / tma_info_thread_slots"
//   tma_backend_bound:   "topdown\\-be\\-bound / M + 5 * cpu@INT_MISC.RECOVERY_CYCLES\\,cmask\\=1\\,edge@ / tma_info_thread_slots"
//   tma_bad_speculation: "max(1 - (tma_frontend_bound + tma_backend_bound + tma_retiring), 0)"
//   tma_retiring:        "topdown\\-retiring / M" (TMA_Metrics-full.csv; not re-read here)
// (RECOVERY_CYCLES with cmask=1,edge is INT_MISC.CLEARS_COUNT's encoding, 0x104010d.)
// ---------------------------------------------------------------------------------------

#[test]
fn ice_lake_matches_icx_metrics_json() {
    let names = [
        "cpu/slots/",
        "cpu/topdown-retiring/",
        "cpu/topdown-bad-spec/",
        "cpu/topdown-fe-bound/",
        "cpu/topdown-be-bound/",
        "int_misc.uop_dropping",
        "cpu/INT_MISC.RECOVERY_CYCLES,cmask=1,edge/",
    ];
    let json = |e: &Ev| {
        let m = e["r"] + e["b"] + e["f"] + e["e"];
        let fe = div(e["f"], m) - div(e["u"], e["s"]);
        let be = div(e["e"], m) + div(5.0 * e["c"], e["s"]);
        let ret = div(e["r"], m);
        Want {
            l1: [ret, max(1.0 - (fe + be + ret), 0.0), fe, be],
            smt: None,
            l2: None,
        }
    };
    let keys = ["s", "r", "b", "f", "e", "u", "c"];
    let mut cases = vectors(names.len(), 2);
    // clears_count pushing FE+BE+RET above 1 (bad speculation clamped to 0).
    cases.push(vec![1000, 300, 100, 300, 300, 0, 100]);
    let machine = Machine::of(Cpu::IntelIceLake);
    for sums in &cases {
        check(&names, &machine, sums, &json(&ev(&keys, sums)));
    }
}

// ---------------------------------------------------------------------------------------
// Intel Lion Cove: tools/perf/pmu-events/arch/x86/lunarlake/lnl-metrics.json (cpu_core) at
// torvalds/linux 23878069de3016656ea38d289150cf359db06a7b:
//   tma_backend_bound:   "topdown\\-be\\-bound / M + 0 * slots"
//   tma_bad_speculation: "topdown\\-bad\\-spec / M + 0 * slots"
// (bad speculation its own ratio, not Golden Cove's remainder); the other level-1 and
// level-2 nodes plain ratios of M and the residuals as on Golden Cove per TMA_Metrics-full.csv
// (not re-read here).
// ---------------------------------------------------------------------------------------

#[test]
fn lion_cove_matches_lnl_metrics_json() {
    let names = &INTEL8[..9];
    let json = |e: &Ev| {
        let m = e["topdown-fe-bound"]
            + e["topdown-bad-spec"]
            + e["topdown-retiring"]
            + e["topdown-be-bound"];
        let r = |n: &str| div(e[n], m);
        let (ret, bs, fe, be) = (
            r("topdown-retiring"),
            r("topdown-bad-spec"),
            r("topdown-fe-bound"),
            r("topdown-be-bound"),
        );
        let (lat, br, mem, heavy) = (
            r("topdown-fetch-lat"),
            r("topdown-br-mispredict"),
            r("topdown-mem-bound"),
            r("topdown-heavy-ops"),
        );
        intel_tree([ret, bs, fe, be], lat, br, mem, heavy)
    };
    for cpu in [Cpu::IntelLionCove, Cpu::Unknown] {
        for sums in &vectors(names.len(), 3) {
            check(names, &Machine::of(cpu), sums, &json(&ev(names, sums)));
        }
    }
    assert!(plan(names, &Machine::of(Cpu::Unknown))
        .unwrap()
        .set
        .approximation()
        .is_some());
}

// ---------------------------------------------------------------------------------------
// Intel Skylake: skl-metrics.json (the kernel's, at 1bbeaf83), with SMT off
// (tma_info_thread_slots = 4 * CPU_CLK_UNHALTED.THREAD, INT_MISC.RECOVERY_CYCLES):
//   tma_frontend_bound:  "IDQ_UOPS_NOT_DELIVERED.CORE / tma_info_thread_slots"
//   tma_bad_speculation: "(UOPS_ISSUED.ANY - UOPS_RETIRED.RETIRE_SLOTS + 4 * (INT_MISC.RECOVERY_CYCLES_ANY / 2 if #SMT_on else INT_MISC.RECOVERY_CYCLES)) / tma_info_thread_slots"
//   tma_retiring:        "UOPS_RETIRED.RETIRE_SLOTS / tma_info_thread_slots"
//   tma_backend_bound:   "1 - tma_frontend_bound - (UOPS_ISSUED.ANY + 4 * (INT_MISC.RECOVERY_CYCLES_ANY / 2 if #SMT_on else INT_MISC.RECOVERY_CYCLES)) / tma_info_slots"
//                        (this one and tma_bad_speculation read in 2023 LKML patches of the
//                        clx/skl-family metrics files; the others per docs/topdown.md)
// ---------------------------------------------------------------------------------------

#[test]
fn skylake_matches_skl_metrics_json() {
    let names = [
        "cycles",
        "idq_uops_not_delivered.core",
        "uops_issued.any",
        "uops_retired.retire_slots",
        "int_misc.recovery_cycles",
    ];
    let json = |e: &Ev| {
        let slots = 4.0 * e["cycles"];
        let rec = e["int_misc.recovery_cycles"];
        let fe = div(e["idq_uops_not_delivered.core"], slots);
        Want {
            l1: [
                div(e["uops_retired.retire_slots"], slots),
                div(
                    e["uops_issued.any"] - e["uops_retired.retire_slots"] + 4.0 * rec,
                    slots,
                ),
                fe,
                1.0 - fe - div(e["uops_issued.any"] + 4.0 * rec, slots),
            ],
            smt: None,
            l2: None,
        }
    };
    let exact = Machine {
        smt_on: Some(false),
        ..Machine::of(Cpu::IntelSkylake)
    };
    for sums in &vectors(names.len(), 4) {
        check(&names, &exact, sums, &json(&ev(&names, sums)));
    }
    assert_eq!(plan(&names, &exact).unwrap().set.approximation(), None);
    let smt = Machine::of(Cpu::IntelSkylake);
    assert!(plan(&names, &smt).unwrap().set.approximation().is_some());
}

// ---------------------------------------------------------------------------------------
// AMD: tools/perf/pmu-events/arch/x86/amdzen4/pipeline.json (torvalds/linux 037dd1308c6d)
// and amdzen5/pipeline.json (a9fe4ac7a3a2), W = 6 and 8:
//   total_dispatch_slots: "W * ls_not_halted_cyc"
//   frontend_bound:   "d_ratio(de_no_dispatch_per_slot.no_ops_from_frontend, total_dispatch_slots)"
//   bad_speculation:  "d_ratio(de_src_op_disp.all - ex_ret_ops, total_dispatch_slots)"
//   backend_bound:    "d_ratio(de_no_dispatch_per_slot.backend_stalls, total_dispatch_slots)"
//   smt_contention:   "d_ratio(de_no_dispatch_per_slot.smt_contention, total_dispatch_slots)"
//   retiring:         "d_ratio(ex_ret_ops, total_dispatch_slots)"
//   frontend_bound_latency:   "d_ratio((W * cpu@de_no_dispatch_per_slot.no_ops_from_frontend\\,cmask\\=0xW@), total_dispatch_slots)"
//   frontend_bound_bandwidth: "d_ratio(de_no_dispatch_per_slot.no_ops_from_frontend - (W * cpu@...\\,cmask\\=0xW@), total_dispatch_slots)"
//   bad_speculation_mispredicts: "d_ratio(bad_speculation * ex_ret_brn_misp, ex_ret_brn_misp + R)"
//   bad_speculation_pipeline_restarts: "d_ratio(bad_speculation * R, ex_ret_brn_misp + R)"
//     (R = resyncs_or_nc_redirects on Zen 4, bp_redirects.resync on Zen 5)
// Zen 6: amdzen6/pipeline.json (torvalds/linux d4eb7b2da66c): every expression the same with
// W = 8 and R = bp_fe_redir.resync (branch-prediction.json c7decec2f2d2: 0x9f/0x01, Zen 5's
// bp_redirects.resync encoding).
//   backend_bound_memory: "backend_bound * d_ratio(ex_no_retire.load_not_complete, ex_no_retire.not_complete)"
//   backend_bound_cpu:    "backend_bound * (1 - d_ratio(ex_no_retire.load_not_complete, ex_no_retire.not_complete))"
//   retiring_fastpath:    "retiring * (1 - d_ratio(ex_ret_ucode_ops, ex_ret_ops))"
//   retiring_microcode:   "retiring * d_ratio(ex_ret_ucode_ops, ex_ret_ops)"
// ---------------------------------------------------------------------------------------

fn amd_json(e: &Ev, w: f64, restarts: &str) -> Want {
    let slots = w * e["ls_not_halted_cyc"];
    let fe = d_ratio(e["de_no_dispatch_per_slot.no_ops_from_frontend"], slots);
    let bs = d_ratio(e["de_src_op_disp.all"] - e["ex_ret_ops"], slots);
    let be = d_ratio(e["de_no_dispatch_per_slot.backend_stalls"], slots);
    let ret = d_ratio(e["ex_ret_ops"], slots);
    let lat = w * e["cmask"];
    let (misp, r) = (e["ex_ret_brn_misp"], e[restarts]);
    let mem = d_ratio(
        e["ex_no_retire.load_not_complete"],
        e["ex_no_retire.not_complete"],
    );
    let ucode = d_ratio(e["ex_ret_ucode_ops"], e["ex_ret_ops"]);
    Want {
        l1: [ret, bs, fe, be],
        smt: Some(d_ratio(e["de_no_dispatch_per_slot.smt_contention"], slots)),
        l2: Some([
            d_ratio(lat, slots),
            d_ratio(
                e["de_no_dispatch_per_slot.no_ops_from_frontend"] - lat,
                slots,
            ),
            d_ratio(bs * misp, misp + r),
            d_ratio(bs * r, misp + r),
            be * mem,
            be * (1.0 - mem),
            ret * ucode,
            ret * (1.0 - ucode),
        ]),
    }
}

#[test]
fn zen4_zen5_and_zen6_match_pipeline_json() {
    for (cpuid, zen, w, restarts, cmask) in [
        (
            "AuthenticAMD,25,17,1",
            4,
            6.0,
            "resyncs_or_nc_redirects",
            "cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/",
        ),
        (
            "AuthenticAMD,26,2,0",
            5,
            8.0,
            "bp_redirects.resync",
            "cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x8/u",
        ),
        (
            "AuthenticAMD,26,80,0",
            6,
            8.0,
            "bp_fe_redir.resync",
            "cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x8/",
        ),
    ] {
        let machine = Machine::of(Cpu::from_perf_cpuid(cpuid));
        let names = [
            "ls_not_halted_cyc",
            "de_no_dispatch_per_slot.no_ops_from_frontend",
            "de_no_dispatch_per_slot.backend_stalls",
            "de_no_dispatch_per_slot.smt_contention",
            "de_src_op_disp.all",
            "ex_ret_ops",
            cmask,
            "ex_ret_brn_misp",
            restarts,
            "ex_no_retire.not_complete",
            "ex_no_retire.load_not_complete",
            "ex_ret_ucode_ops",
        ];
        // The evaluator's name of the cmask'd event.
        let mut keys = names;
        keys[6] = "cmask";
        let p = plan(&names, &machine).unwrap();
        assert_eq!(
            p.set,
            FormulaSet::AmdZen {
                zen,
                width: w as u8,
                smt_contention: true,
                level2: true
            }
        );
        assert_eq!(
            p.set.name(),
            format!("AMD Zen {zen} pipeline ({w} slots per cycle)")
        );
        for sums in &vectors(names.len(), 5 + w as u64) {
            let want = amd_json(&ev(&keys, sums), w, keys[8]);
            if sums[0] == 0 {
                // perf's d_ratio gives 0 everywhere; no cycles, no share: None.
                assert!(want.l1.iter().all(|&x| x == 0.0));
                assert_eq!(p.apply(sums), None);
                continue;
            }
            check(&names, &machine, sums, &want);
        }
    }
    // Zen 4's cmask=6 event on Zen 5 is not Zen 5's front-end latency: level 1 only.
    let p = plan(
        &[
            "cycles",
            "de_no_dispatch_per_slot.no_ops_from_frontend",
            "de_no_dispatch_per_slot.backend_stalls",
            "de_src_op_disp.all",
            "ex_ret_ops",
            "cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=6/",
        ],
        &Machine::of(Cpu::AmdZen5),
    )
    .unwrap();
    assert_eq!(
        p.set,
        FormulaSet::AmdZen {
            zen: 5,
            width: 8,
            smt_contention: false,
            level2: false
        }
    );
}

/// `record --topdown --td-level 2` on Zen 4/5/6: level 1 in one group, the level-2 events in
/// two more, each led by its own cycles (perf names each `cycles`), multiplexed by the kernel.
const AMD_GROUPS: [&str; 14] = [
    "cycles",
    "de_no_dispatch_per_slot.no_ops_from_frontend",
    "de_no_dispatch_per_slot.backend_stalls",
    "de_src_op_disp.all",
    "ex_ret_ops",
    "de_no_dispatch_per_slot.smt_contention",
    "cycles",
    "cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/",
    "ex_ret_ucode_ops",
    "ex_ret_brn_misp",
    "resyncs_or_nc_redirects",
    "cycles",
    "ex_no_retire.load_not_complete",
    "ex_no_retire.not_complete",
];

/// The evaluator's names of [`AMD_GROUPS`], and the index of each column's group's cycles.
const AMD_KEYS: [&str; 14] = [
    "ls_not_halted_cyc",
    "de_no_dispatch_per_slot.no_ops_from_frontend",
    "de_no_dispatch_per_slot.backend_stalls",
    "de_src_op_disp.all",
    "ex_ret_ops",
    "de_no_dispatch_per_slot.smt_contention",
    "cycles2",
    "cmask",
    "ex_ret_ucode_ops",
    "ex_ret_brn_misp",
    "resyncs_or_nc_redirects",
    "cycles3",
    "ex_no_retire.load_not_complete",
    "ex_no_retire.not_complete",
];
const AMD_GROUP_CYCLES: [usize; 14] = [0, 0, 0, 0, 0, 0, 6, 6, 6, 6, 6, 11, 11, 11];

/// Multiplexed groups count different intervals: as `perf stat` scales a multiplexed count
/// by time enabled / time running, each level-2 event is scaled to level 1's time by its
/// group's cycles (× c1 / c_own), and the JSON applies to the scaled counts. With group
/// counts that are exact fractions of one run's counts, that is the JSON on that run.
#[test]
fn zen4_level_2_from_multiplexed_groups() {
    let machine = Machine::of(Cpu::AmdZen4);
    let p = plan(&AMD_GROUPS, &machine).unwrap();
    assert_eq!(
        p.set,
        FormulaSet::AmdZen {
            zen: 4,
            width: 6,
            smt_contention: true,
            level2: true
        }
    );
    assert_eq!(p.groups(), 3);
    for sums in &vectors(AMD_GROUPS.len(), 41) {
        let c1 = sums[0] as f64;
        let scaled: Ev = AMD_KEYS
            .iter()
            .zip(sums)
            .zip(AMD_GROUP_CYCLES)
            .map(|((&k, &x), g)| (k, x as f64 * c1 / sums[g] as f64))
            .collect();
        let got = p.apply(sums);
        if sums[0] == 0 {
            assert_eq!(got, None, "{sums:?}");
            continue;
        }
        let mut want = amd_json(&scaled, 6.0, "resyncs_or_nc_redirects");
        if sums[6] == 0 || sums[11] == 0 {
            // A frame without samples of a level-2 group: level 1 alone.
            want.l2 = None;
        }
        check(&AMD_GROUPS, &machine, sums, &want);
    }
    // One run's counts (the second group ran a third of the time, the third a quarter):
    // the single-group JSON on the run.
    let run: [u64; 12] = [
        1_200_000, 2_400_000, 1_800_000, 4_800_000, 3_600_000, 240_000, 120_000, 360_000, 48_000,
        24_000, 600_000, 1_440_000,
    ];
    // The run's events: AMD_KEYS without the later groups' cycles.
    let names: Vec<&'static str> = AMD_KEYS
        .into_iter()
        .filter(|k| !matches!(*k, "cycles2" | "cycles3"))
        .collect();
    let want = amd_json(&ev(&names, &run), 6.0, "resyncs_or_nc_redirects");
    let sums = [
        run[0],
        run[1],
        run[2],
        run[3],
        run[4],
        run[5],
        run[0] / 3,
        run[6] / 3,
        run[7] / 3,
        run[8] / 3,
        run[9] / 3,
        run[0] / 4,
        run[10] / 4,
        run[11] / 4,
    ];
    check(&AMD_GROUPS, &machine, &sums, &want);
    // An event twice in one group is refused; in two groups the first counts.
    let mut twice = AMD_GROUPS.to_vec();
    twice[13] = "ex_no_retire.load_not_complete";
    assert!(matches!(
        plan(&twice, &machine),
        Err(cpiflame_profile::topdown::NoTopdown::Duplicate(_))
    ));
    let mut again = AMD_GROUPS.to_vec();
    again[8] = "ex_ret_ops";
    assert!(plan(&again, &machine)
        .is_ok_and(|p| !matches!(p.set, FormulaSet::AmdZen { level2: true, .. })));
}

// ---------------------------------------------------------------------------------------
// Arm: tools/perf/pmu-events/arch/arm64/sbsa.json (torvalds/linux 602bf1830798):
//   frontend_bound:  "stall_slot_frontend / (#slots * cpu_cycles)"
//   bad_speculation: "(1 - op_retired / op_spec) * (1 - stall_slot / (#slots * cpu_cycles))"
//   retiring:        "(op_retired / op_spec) * (1 - stall_slot / (#slots * cpu_cycles))"
//   backend_bound:   "stall_slot_backend / (#slots * cpu_cycles)"
// arm/neoverse-n2-v2/metrics.json (0df82189bc42) overrides three of them:
//   FRONTEND_BOUND:  "((stall_slot_frontend) if (#slots - 5) else (stall_slot_frontend - cpu_cycles)) / (#slots * cpu_cycles)"
//   BAD_SPECULATION: "(1 - op_retired / op_spec) * (1 - (stall_slot if (#slots - 5) else (stall_slot - cpu_cycles)) / (#slots * cpu_cycles))"
//   RETIRING:        "(op_retired / op_spec) * (1 - (stall_slot if (#slots - 5) else (stall_slot - cpu_cycles)) / (#slots * cpu_cycles))"
// where James Clark's 2023 patch ("Update stall_slot workaround for N2 r0p3") replaces the
// condition "(#slots - 5)" by "strcmp_cpuid_str(0x410fd493) | strcmp_cpuid_str(0x410fd490) ^ 1"
// (N2 r0p3 or later, or not an N2); arm/neoverse-v1/metrics.json (918e37d50a2f):
//   frontend_bound:  "(100 * ((STALL_SLOT_FRONTEND / (CPU_CYCLES * 8)) - ((BR_MIS_PRED * 4) / CPU_CYCLES)))"
//   bad_speculation: "(100 * (((1 - (OP_RETIRED / OP_SPEC)) * (1 - (STALL_SLOT / (CPU_CYCLES * 8)))) + ((BR_MIS_PRED * 4) / CPU_CYCLES)))"
//   (backend_bound and retiring: sbsa's). The 100s are the percent scale.
// ---------------------------------------------------------------------------------------

const ARM: [&str; 7] = [
    "cpu_cycles",
    "stall_slot_frontend",
    "stall_slot_backend",
    "stall_slot",
    "op_retired",
    "op_spec",
    "br_mis_pred",
];

fn sbsa_json(e: &Ev, slots: f64, workaround: bool) -> Want {
    let c = e["cpu_cycles"];
    let (ssf, ss) = if workaround {
        (e["stall_slot_frontend"] - c, e["stall_slot"] - c)
    } else {
        (e["stall_slot_frontend"], e["stall_slot"])
    };
    let or_os = div(e["op_retired"], e["op_spec"]);
    Want {
        l1: [
            or_os * (1.0 - div(ss, slots * c)),
            (1.0 - or_os) * (1.0 - div(ss, slots * c)),
            div(ssf, slots * c),
            div(e["stall_slot_backend"], slots * c),
        ],
        smt: None,
        l2: None,
    }
}

#[test]
fn arm_matches_sbsa_and_neoverse_json() {
    let six = &ARM[..6];
    let cases = vectors(ARM.len(), 9);
    // N2 r0p0 (MIDR 0x410fd490): the workaround; r0p3 (0x410fd493) and V2 (0x410fd4f0): none.
    for (midr, workaround) in [
        ("0x00000000410fd490", true),
        ("0x00000000410fd493", false),
        ("0x00000000410fd4f1", false),
    ] {
        let machine = Machine::of(Cpu::from_perf_cpuid(midr));
        let slots = if midr.ends_with("d4f1") { 8.0 } else { 5.0 };
        let p = plan(six, &machine).unwrap();
        assert_eq!(
            p.set,
            FormulaSet::ArmNeoverseN2V2 {
                slots: slots as u32,
                n2_workaround: workaround
            }
        );
        for sums in &cases {
            check(
                six,
                &machine,
                &sums[..6],
                &sbsa_json(&ev(six, &sums[..6]), slots, workaround),
            );
        }
    }
    // Any other core: sbsa with caps/slots.
    let other = Machine {
        arm_slots: Some(10),
        ..Machine::of(Cpu::from_perf_cpuid("0x00000000410fd840"))
    };
    for sums in &cases {
        check(
            six,
            &other,
            &sums[..6],
            &sbsa_json(&ev(six, &sums[..6]), 10.0, false),
        );
    }
    // Neoverse V1 (0x410fd401).
    let v1 = Machine::of(Cpu::from_perf_cpuid("0x00000000411fd401"));
    let upper: Vec<String> = ARM.iter().map(|n| n.to_uppercase()).collect();
    let upper: Vec<&str> = upper.iter().map(String::as_str).collect();
    for sums in &cases {
        let e = ev(&ARM, sums);
        let mut want = sbsa_json(&e, 8.0, false);
        let (c, bmp) = (e["cpu_cycles"], e["br_mis_pred"]);
        let or_os = div(e["op_retired"], e["op_spec"]);
        want.l1[2] = div(e["stall_slot_frontend"], c * 8.0) - div(bmp * 4.0, c);
        want.l1[1] = (1.0 - or_os) * (1.0 - div(e["stall_slot"], c * 8.0)) + div(bmp * 4.0, c);
        check(&upper, &v1, sums, &want);
    }
}

// ---------------------------------------------------------------------------------------
// Names, CPUs and the choice of a set.
// ---------------------------------------------------------------------------------------

#[test]
fn names_as_perf_prints_them() {
    let cases = [
        ("topdown-retiring", Some(TmaRole::Retiring)),
        ("cpu_core/topdown-be-bound/", Some(TmaRole::BeBound)),
        ("cpu/slots/u", Some(TmaRole::Slots)),
        ("slots:k", Some(TmaRole::Slots)),
        ("INT_MISC.UOP_DROPPING", Some(TmaRole::UopDropping)),
        ("STALL_SLOT_FRONTEND", Some(TmaRole::StallSlotFrontend)),
        ("stall_slot", Some(TmaRole::StallSlot)),
        (
            "cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/",
            Some(TmaRole::AmdNoOpsFromFrontendCmask(6)),
        ),
        ("cpu/topdown-retiring,cmask=1/", None),
        ("int_misc.clears_count", Some(TmaRole::ClearsCount)),
        (
            "cpu/int_misc.recovery_cycles,edge,cmask=0x1/",
            Some(TmaRole::ClearsCount),
        ),
        ("int_misc.recovery_cycles", Some(TmaRole::RecoveryCycles)),
        ("cpu/int_misc.recovery_cycles,cmask=2,edge/", None),
        ("instructions", None),
        ("cpu-clock", None),
    ];
    for (name, role) in cases {
        assert_eq!(tma_role_of(name), role, "{name}");
    }
}

#[test]
fn cpus_from_perf_cpuid() {
    let cases = [
        ("GenuineIntel,6,85,7", Cpu::IntelSkylake),
        ("GenuineIntel-6-6A-6", Cpu::IntelIceLake),
        ("GenuineIntel,6,151,2", Cpu::IntelGoldenCove),
        ("GenuineIntel,6,189,1", Cpu::IntelLionCove),
        ("GenuineIntel-6-C6-2", Cpu::IntelLionCove),
        ("GenuineIntel-6-B5-0", Cpu::IntelGoldenCove),
        ("GenuineIntel-6-BE-0", Cpu::IntelOther),
        ("AuthenticAMD,25,1,1", Cpu::AmdBeforeZen4),
        ("AuthenticAMD,25,97,2", Cpu::AmdZen4),
        ("AuthenticAMD,23,49,0", Cpu::AmdBeforeZen4),
        // Family 1Ah by the kernel's bsp_init_amd ranges: Zen 5, Zen 6, neither.
        ("AuthenticAMD,26,68,0", Cpu::AmdZen5),
        ("AuthenticAMD-26-50-0", Cpu::AmdZen6),
        ("AuthenticAMD,26,192,0", Cpu::AmdZen6),
        ("AuthenticAMD,26,48,0", Cpu::AmdOther),
        ("0x00000000413fd0c1", Cpu::ArmNeoverseN1),
        (
            "0x00000000410fd492",
            Cpu::ArmNeoverseN2 {
                r0p3_or_later: false,
            },
        ),
        ("garbage", Cpu::Unknown),
    ];
    for (cpuid, cpu) in cases {
        assert_eq!(Cpu::from_perf_cpuid(cpuid), cpu, "{cpuid}");
    }
    // The typed constructors the recorder uses (no string between them) agree.
    assert_eq!(Cpu::intel(6, 0x8f), Cpu::IntelGoldenCove);
    assert_eq!(Cpu::intel(6, 85), Cpu::IntelSkylake);
    assert_eq!(Cpu::intel(15, 6), Cpu::IntelOther);
    assert_eq!(Cpu::amd(26, 0x50), Cpu::AmdZen6);
    assert_eq!(Cpu::amd(25, 97), Cpu::AmdZen4);
    assert_eq!(Cpu::arm(0x413f_d0c1), Cpu::ArmNeoverseN1);
}

#[test]
fn no_set_says_why() {
    let amd = [
        "cycles",
        "de_no_dispatch_per_slot.no_ops_from_frontend",
        "de_no_dispatch_per_slot.backend_stalls",
        "de_src_op_disp.all",
        "ex_ret_ops",
    ];
    let intel: &[&str] = &INTEL8;
    let cases: [(&[&str], Cpu, &str); 9] = [
        (&amd, Cpu::Unknown, "CpuNeeded"),
        (&amd, Cpu::AmdOther, "CpuNeeded"),
        // A second cycles is a second group for AMD only.
        (
            &[&["cycles"], &INTEL8[..], &["cycles"]].concat(),
            Cpu::IntelGoldenCove,
            "Duplicate",
        ),
        (&amd, Cpu::AmdBeforeZen4, "CpuWithout"),
        (&ARM, Cpu::ArmNeoverseN1, "CpuWithout"),
        (&ARM, Cpu::ArmOther, "CpuNeeded"),
        (&["cycles", "instructions"], Cpu::Unknown, "NoEvents"),
        (
            &["topdown-retiring", "cpu/topdown-retiring/"],
            Cpu::Unknown,
            "Duplicate",
        ),
        (intel, Cpu::AmdZen4, "Mismatch"),
    ];
    for (names, cpu, kind) in cases {
        let err = plan(names, &Machine::of(cpu)).unwrap_err();
        assert!(
            format!("{err:?}").starts_with(kind),
            "{names:?} on {cpu:?}: {err:?}"
        );
    }
    let missing = plan(
        &["slots", "topdown-retiring", "topdown-fe-bound"],
        &Machine::of(Cpu::IntelGoldenCove),
    )
    .unwrap_err();
    assert_eq!(
        missing.to_string(),
        "Intel Golden Cove PERF_METRICS (spr/adl metrics) needs the events topdown-bad-spec, topdown-be-bound"
    );
}

// ---------------------------------------------------------------------------------------
// The kernel's per-read accumulation (arch/x86/events/intel/core.c): at
// every read (every sample of a leader-sampled group) each metric event's count grows by
// mul_u64_u32_div(slots, byte, 0xff) (floor), then FIXED_CTR3 and PERF_METRICS are reset.
// The bytes are the hardware's 8-bit fractions of the slots since the last read; the four
// level-1 bytes sum to 0xff (modelled here by largest-remainder rounding). cpiflame's
// per-sample deltas are those increments.
// ---------------------------------------------------------------------------------------

/// True fractions of one read interval: retiring, bad spec, fe, be (sum 1), then heavy ops,
/// branch mispredicts, fetch latency, memory bound (each within its parent).
type Mix = [f64; 8];

/// The hardware's bytes for a mix.
fn bytes(mix: &Mix) -> [u64; 8] {
    let mut b = [0u64; 8];
    let exact: Vec<f64> = mix[..4].iter().map(|x| 255.0 * x).collect();
    for i in 0..4 {
        b[i] = exact[i].floor() as u64;
    }
    let mut order: Vec<usize> = (0..4).collect();
    order.sort_by(|&i, &j| (exact[j] - exact[j].floor()).total_cmp(&(exact[i] - exact[i].floor())));
    let short = 255 - b[..4].iter().sum::<u64>();
    for &i in order.iter().take(short as usize) {
        b[i] += 1;
    }
    for i in 4..8 {
        b[i] = (255.0 * mix[i]).round() as u64;
    }
    b
}

/// One sample's deltas in `INTEL8[..9]`'s order (slots, then the 8 metrics) for an interval
/// of `slots` slots with the true `mix`.
fn read(slots: u64, mix: &Mix) -> Vec<u64> {
    let mut d = vec![slots];
    d.extend(bytes(mix).iter().map(|&b| slots * b / 255));
    d
}

/// Bound on a category's error after the kernel's quantisation, for a frame of `n` reads
/// and `s` slots: per read the byte is within 1/255 of the truth and the floor loses under
/// one slot, and the four level-1 counts sum to between slots − 4 and slots, so
/// |c/ΣM − t/S| ≤ (S/255 + 5n) / (S − 4n).
fn quantisation_bound(s: f64, n: f64) -> f64 {
    (s / 255.0 + 5.0 * n) / (s - 4.0 * n)
}

fn fractions(sums: &[u64]) -> Vec<f64> {
    let p = plan(&INTEL8[..9], &Machine::of(Cpu::IntelLionCove)).unwrap();
    let b = p.apply(sums).unwrap();
    let l2 = b.level2.unwrap();
    vec![
        b.retiring,
        b.bad_speculation,
        b.frontend_bound,
        b.backend_bound,
        l2.heavy_operations,
        l2.branch_mispredicts,
        l2.fetch_latency,
        l2.memory_bound,
    ]
}

fn random_mix(rng: &mut Pcg64, centre: &[f64; 4]) -> Mix {
    let raw: Vec<f64> = centre
        .iter()
        .map(|c| c * rng.random_range(0.7..1.3))
        .collect();
    let total: f64 = raw.iter().sum();
    let mut m = [0.0; 8];
    for i in 0..4 {
        m[i] = raw[i] / total;
        m[4 + i] = m[i] * rng.random_range(0.0..1.0);
    }
    m
}

#[test]
fn kernel_accumulation_sums_give_slot_weighted_fractions() {
    let mut rng = Pcg64::seed_from_u64(28);
    let centres = [
        [0.6, 0.1, 0.2, 0.1],
        [0.1, 0.05, 0.15, 0.7],
        [0.25, 0.3, 0.35, 0.1],
    ];
    for (f, centre) in centres.iter().enumerate() {
        let (mut sums, mut truth, mut s, mut n) = (vec![0u64; 9], [0.0f64; 8], 0.0, 0.0);
        // Many short intervals and some long ones: every read is quantised on its own.
        for _ in 0..3000 {
            let slots = if rng.random_range(0..4) == 0 {
                rng.random_range(1_000_000..20_000_000)
            } else {
                rng.random_range(2_000..50_000)
            };
            let mix = random_mix(&mut rng, centre);
            for (sum, d) in sums.iter_mut().zip(read(slots, &mix)) {
                *sum += d;
            }
            for k in 0..8 {
                truth[k] += slots as f64 * mix[k];
            }
            s += slots as f64;
            n += 1.0;
        }
        let got = fractions(&sums);
        let bound = quantisation_bound(s, n);
        assert!(bound < 0.005, "bound {bound}");
        for k in 0..8 {
            let want = truth[k] / s;
            assert!(
                (got[k] - want).abs() <= bound,
                "frame {f} category {k}: {} vs slot-weighted truth {want} (bound {bound})",
                got[k]
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Smearing (docs/topdown.md): a sample's deltas cover the interval that ended at its IP, so a
// frame gets the mix of the intervals ending in it. Two functions alternate, A for `a` slots
// then B for `b`; the sampler fires every `period` slots.
// ---------------------------------------------------------------------------------------

const MIX_A: Mix = [0.10, 0.05, 0.05, 0.80, 0.02, 0.04, 0.03, 0.70];
const MIX_B: Mix = [0.80, 0.05, 0.05, 0.10, 0.10, 0.04, 0.03, 0.05];

/// Per-frame (A, B) sums, slots and read counts of `samples` reads.
fn interleaved(a: u64, b: u64, period: u64, samples: u64) -> [(Vec<u64>, f64, f64); 2] {
    let cycle = a + b;
    let a_before = |t: u64| (t / cycle) * a + (t % cycle).min(a);
    let mut frames = [(vec![0u64; 9], 0.0, 0.0), (vec![0u64; 9], 0.0, 0.0)];
    for j in 0..samples {
        let (start, end) = (j * period, (j + 1) * period);
        let in_a = (a_before(end) - a_before(start)) as f64 / period as f64;
        let mut mix = [0.0; 8];
        for k in 0..8 {
            mix[k] = in_a * MIX_A[k] + (1.0 - in_a) * MIX_B[k];
        }
        let frame = usize::from((end - 1) % cycle >= a);
        for (sum, d) in frames[frame].0.iter_mut().zip(read(period, &mix)) {
            *sum += d;
        }
        frames[frame].1 += period as f64;
        frames[frame].2 += 1.0;
    }
    frames
}

#[test]
fn smearing_of_short_interleaved_functions_is_what_the_model_predicts() {
    // Period longer than the alternation: P = 4(a+b) + 1, so every interval holds 4a or
    // 4a + 1 slots of A, and the sample's phase drifts by one slot per sample over all of
    // the cycle. Both frames then get the whole program's mix, (a·A + b·B)/(a+b) within
    // 1/P: A's back end reads 0.625 where A's own is 0.8 (B's: 0.625 vs 0.1).
    let (a, b) = (3000, 1000);
    let frames = interleaved(a, b, 4 * (a + b) + 1, a + b);
    let share_a = a as f64 / (a + b) as f64;
    for (f, own) in [(0, MIX_A), (1, MIX_B)] {
        let (sums, s, n) = &frames[f];
        let got = fractions(sums);
        let bound = quantisation_bound(*s, *n) + 1.0 / (4 * (a + b) + 1) as f64;
        for k in 0..8 {
            let predicted = share_a * MIX_A[k] + (1.0 - share_a) * MIX_B[k];
            assert!(
                (got[k] - predicted).abs() <= bound,
                "frame {f} category {k}: {} vs predicted {predicted}",
                got[k]
            );
        }
        // The error against the function's own mix is the predicted smear, not noise.
        let smear = (got[3] - own[3]).abs();
        let predicted = if f == 0 { 0.175 } else { 0.525 };
        assert!(
            (smear - predicted).abs() <= bound,
            "frame {f}: smear {smear}"
        );
    }
    // Period well below the run lengths: only the one interval per run that straddles the
    // boundary mixes, so A's error is at most P/(a − P) of the difference of the mixes.
    let (a, b, period) = (300_000, 100_000, 1001);
    let frames = interleaved(a, b, period, 20 * (a + b) / period);
    for (f, own, run) in [(0, MIX_A, a), (1, MIX_B, b)] {
        let (sums, s, n) = &frames[f];
        let got = fractions(sums);
        for k in 0..8 {
            let bound = period as f64 / (run - period) as f64 * (MIX_A[k] - MIX_B[k]).abs()
                + quantisation_bound(*s, *n);
            assert!(
                (got[k] - own[k]).abs() <= bound,
                "frame {f} category {k}: {} vs own {} (bound {bound})",
                got[k],
                own[k]
            );
        }
    }
}
