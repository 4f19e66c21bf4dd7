//! `cpiflame c2c`'s text report: the layout of perf c2c's `--stdio` tables, from a
//! [`Report`]. Writing only; the counting is in [`c2c`](crate::c2c).

use std::io::{self, Write};

use crate::c2c::{Report, SharedLine};

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0.00%".into()
    } else {
        format!("{:.2}%", 100.0 * part as f64 / whole as f64)
    }
}

impl Report {
    /// The report as `cpiflame c2c` prints it: the JSON document (pretty-printed, one
    /// newline at its end) with `json`, else the text of [`Report::write_text`].
    pub fn write(&self, json: bool, out: &mut dyn Write) -> io::Result<()> {
        if json {
            writeln!(out, "{:#}", self.to_json())
        } else {
            self.write_text(out)
        }
    }

    /// The report as text: perf c2c's trace summary, the data sources, the shared cache
    /// lines and, for each line, who touches which offset of it.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        let r = self;
        let t = &r.totals;
        writeln!(out, "Trace summary")?;
        let rows: [(&str, u64); 31] = [
            ("records", t.nr_entries),
            ("locked loads/stores", t.locks),
            ("loads", t.load),
            ("loads uncached", t.ld_uncache),
            ("loads I/O", t.ld_io),
            ("loads miss", t.ld_miss),
            ("loads without address", t.ld_noadrs),
            ("load LFB hit", t.ld_fbhit),
            ("load L1 hit", t.ld_l1hit),
            ("load L2 hit", t.ld_l2hit),
            ("load LLC hit", t.ld_llchit + t.lcl_hitm),
            ("load local HITM", t.lcl_hitm),
            ("load remote HITM", t.rmt_hitm),
            ("load remote HIT", t.rmt_hit),
            ("load local DRAM", t.lcl_dram),
            ("load remote DRAM", t.rmt_dram),
            ("load exclusive", t.ld_excl),
            ("load shared", t.ld_shared),
            ("load LLC misses", t.llc_misses()),
            ("load blocked by data", t.blk_data),
            ("load blocked by address", t.blk_addr),
            ("load local peer", t.lcl_peer),
            ("load remote peer", t.rmt_peer),
            ("load weight", r.load_weight),
            ("stores", t.store),
            ("stores uncached", t.st_uncache),
            ("stores without address", t.st_noadrs),
            ("store L1 hit", t.st_l1hit),
            ("store L1 miss", t.st_l1miss),
            ("no mapping", t.nomap),
            ("unparsable data source", t.noparse),
        ];
        for (name, v) in rows {
            writeln!(out, "  {name:<26}{v:>10}")?;
        }
        writeln!(out, "\nData sources")?;
        for c in &r.sources {
            let event = r.events.get(c.event).map_or("?", String::as_str);
            let served: Vec<String> = c
                .served_from
                .iter()
                .map(|(class, n)| format!("{} {n}", class.name()))
                .collect();
            writeln!(
                out,
                "  {event:<28} {:<34} {:>8} samples {:>10} weight  ({})",
                c.level,
                c.samples,
                c.weight,
                served.join(", ")
            )?;
        }
        let s = &r.shared;
        writeln!(
            out,
            "\nShared cache lines: {} ({} HITM, {} stores)",
            r.shared_lines, s.tot_hitm, s.store
        )?;
        writeln!(
            out,
            "\n{:>5}  {:>18}  {:>8}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>9}",
            "index",
            "line",
            "hitm",
            "records",
            "lclhitm",
            "rmthitm",
            "loads",
            "stores",
            "lcldram",
            "rmtdram",
            "l1miss",
            "avg lat"
        )?;
        for (i, l) in r.lines.iter().enumerate() {
            let st = &l.line.stats;
            writeln!(
            out,
            "{i:>5}  {:>#18x}  {:>7.2}%  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {:>9.1}",
            l.line.address,
            100.0 * l.hitm_share,
            st.nr_entries,
            st.lcl_hitm,
            st.rmt_hitm,
            st.load,
            st.store,
            st.lcl_dram,
            st.rmt_dram,
            st.st_l1miss,
            l.line.load_latency.mean()
        )?;
        }
        for (i, l) in r.lines.iter().enumerate() {
            write_pareto(out, i, l)?;
        }
        Ok(())
    }
}

fn write_pareto(out: &mut dyn Write, index: usize, l: &SharedLine) -> io::Result<()> {
    let s = &l.line.stats;
    writeln!(
        out,
        "\nline {index} {:#x}: {} remote HITM, {} local HITM, {} store L1 hit, {} store L1 miss",
        l.line.address, s.rmt_hitm, s.lcl_hitm, s.st_l1hit, s.st_l1miss
    )?;
    writeln!(
        out,
        "  {:>7} {:>7} {:>7} {:>7} {:>6} {:>18} {:>8} {:>8} {:>8} {:>7}  function  source  pid/tid  cpus  nodes",
        "rmthitm", "lclhitm", "st l1", "st miss", "offset", "code", "rmt lat", "lcl lat", "load lat", "records"
    )?;
    for r in &l.rows {
        let tids: Vec<String> = r.tids.iter().map(|t| t.to_string()).collect();
        let pids: Vec<String> = r.pids.iter().map(|p| p.to_string()).collect();
        let cpus: Vec<String> = r.cpus.iter().map(|c| c.to_string()).collect();
        let nodes: Vec<String> = r
            .nodes
            .iter()
            .map(|(n, c)| {
                let c: Vec<String> = c.iter().map(|c| c.to_string()).collect();
                format!("{n}{{{}}}", c.join(","))
            })
            .collect();
        writeln!(
            out,
            "  {:>7} {:>7} {:>7} {:>7} {:>#6x} {:>#18x} {:>8.0} {:>8.0} {:>8.0} {:>7}  {}  {}  {}/{}  {}  {}",
            pct(r.stats.rmt_hitm, s.rmt_hitm),
            pct(r.stats.lcl_hitm, s.lcl_hitm),
            pct(r.stats.st_l1hit, s.st_l1hit),
            pct(r.stats.st_l1miss, s.st_l1miss),
            r.offset,
            r.iaddr,
            r.rmt_hitm_latency.mean(),
            r.lcl_hitm_latency.mean(),
            r.other_load_latency.mean(),
            r.stats.nr_entries,
            r.symbol.as_deref().unwrap_or("[unknown]"),
            // perf prints `??:0` (ELF) or `symbol+offset` (perf map) where DWARF has no line.
            r.source.as_deref().unwrap_or("-"),
            pids.join(","),
            tids.join(","),
            cpus.join(","),
            nodes.join(" ")
        )?;
    }
    Ok(())
}
