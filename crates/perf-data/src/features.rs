//! The feature sections cpiflame uses (host, command line, event names, build ids), read
//! with every count and length checked against the section's bytes before anything is
//! allocated.
//!
//! This used to go through linux-perf-data, which trusts the counts a file claims
//! (`Vec::with_capacity(nr)` for EVENT_DESC, `vec![0; len]` for strings): fuzzing found a
//! 21 KB file that made it ask for 133 GB. Formats: `perf.data-file-format.txt`.

use crate::abi::{feature, MISC_BUILD_ID_SIZE};
use crate::bytes::{c_str, Cursor, Endian};
use crate::meta::{BuildIdEntry, ClockData, CompressionInfo, Meta, NumaNode};

/// One EVENT_DESC entry: an event's name and sample ids.
pub(crate) struct EventDesc {
    pub name: Option<String>,
    pub ids: Vec<u64>,
}

/// The parsed feature sections; `sections` are (feature bit, bytes) in file order.
pub(crate) fn parse(
    sections: &[(u32, &[u8])],
    endian: Endian,
) -> Result<(Meta, Vec<EventDesc>), String> {
    let mut meta = Meta::default();
    let mut descs = Vec::new();
    for &(bit, data) in sections {
        let what = |e: &str| format!("feature {bit}: {e}");
        let mut c = Cursor::new(data, endian);
        match bit {
            feature::HOSTNAME => meta.hostname = header_string(&mut c).map_err(what)?,
            feature::OSRELEASE => meta.os_release = header_string(&mut c).map_err(what)?,
            feature::VERSION => meta.perf_version = header_string(&mut c).map_err(what)?,
            feature::ARCH => meta.arch = header_string(&mut c).map_err(what)?,
            feature::CPUDESC => meta.cpu_desc = header_string(&mut c).map_err(what)?,
            feature::CPUID => meta.cpuid = header_string(&mut c).map_err(what)?,
            feature::NRCPUS => {
                let _available = c.u32();
                meta.nr_cpus_online = c.u32();
            }
            feature::CMDLINE => {
                let nr = c.u32().ok_or_else(|| what("no argument count"))?;
                // Each argument takes at least its 4-byte length.
                if u64::from(nr) * 4 > c.remaining().len() as u64 {
                    return Err(what(&format!("{nr} arguments do not fit")));
                }
                for _ in 0..nr {
                    let arg = header_string(&mut c).map_err(what)?;
                    meta.cmdline.push(arg.unwrap_or_default());
                }
            }
            feature::EVENT_DESC => descs = event_desc(&mut c, endian).map_err(|e| what(&e))?,
            feature::BUILD_ID => meta.build_ids = build_ids(data, endian),
            feature::COMPRESSED => {
                let mut field = || c.u32().ok_or_else(|| what("section too short"));
                meta.compression = Some(CompressionInfo {
                    version: field()?,
                    type_: field()?,
                    level: field()?,
                    ratio: field()?,
                    mmap_len: field()?,
                });
            }
            feature::NUMA_TOPOLOGY => {
                // u32 count, then (u32 node, u64 mem_total, u64 mem_free, string cpus). Only
                // `cpiflame c2c` needs it: a damaged section keeps the nodes read before it.
                let nr = c.u32().unwrap_or(0);
                for _ in 0..nr {
                    let (Some(node), Some(mem_total_kb), Some(mem_free_kb)) =
                        (c.u32(), c.u64(), c.u64())
                    else {
                        break;
                    };
                    let Ok(cpus) = header_string(&mut c) else {
                        break;
                    };
                    let cpus = cpus.unwrap_or_default();
                    meta.numa_nodes.push(NumaNode {
                        node,
                        mem_total_kb,
                        mem_free_kb,
                        cpus,
                    });
                }
            }
            feature::CLOCK_DATA => {
                // u32 version (1), u32 clockid, u64 wall clock ns, u64 clockid ns.
                if let (Some(1), Some(clockid), Some(wall_clock_ns), Some(clockid_time_ns)) =
                    (c.u32(), c.u32(), c.u64(), c.u64())
                {
                    meta.clock_data = Some(ClockData {
                        clockid,
                        wall_clock_ns,
                        clockid_time_ns,
                    });
                }
            }
            feature::SAMPLE_TIME => {
                // u64 first sample time, u64 last sample time.
                if let (Some(first), Some(last)) = (c.u64(), c.u64()) {
                    meta.sample_time = Some((first, last));
                }
            }
            feature::PMU_MAPPINGS => {
                // u32 count, then (u32 type, string name) pairs.
                let nr = c.u32().ok_or_else(|| what("no PMU count"))?;
                for _ in 0..nr {
                    let Some(type_) = c.u32() else { break };
                    let Ok(Some(name)) = header_string(&mut c) else {
                        break;
                    };
                    meta.pmus.push((type_, name));
                }
            }
            _ => {}
        }
    }
    Ok((meta, descs))
}

/// `struct perf_header_string`: u32 length (padding included), then the bytes, NUL-padded.
fn header_string(c: &mut Cursor<'_>) -> Result<Option<String>, &'static str> {
    let len = c.u32().ok_or("string length past the section")?;
    let bytes = c.bytes(u64::from(len)).ok_or("string past the section")?;
    Ok(std::str::from_utf8(c_str(bytes)).ok().map(String::from))
}

fn event_desc(c: &mut Cursor<'_>, endian: Endian) -> Result<Vec<EventDesc>, String> {
    let nr = c.u32().ok_or("no event count")?;
    let attr_size = c.u32().ok_or("no attr size")?;
    // Each entry holds its attr, an id count and a string length.
    let entry_min = u64::from(attr_size) + 8;
    if u64::from(nr) * entry_min > c.remaining().len() as u64 {
        return Err(format!(
            "{nr} events of at least {entry_min} bytes do not fit"
        ));
    }
    let mut descs = Vec::with_capacity(nr as usize);
    for i in 0..nr {
        c.skip(u64::from(attr_size))
            .ok_or_else(|| format!("event {i}: attr past the section"))?;
        let nr_ids = c.u32().ok_or_else(|| format!("event {i}: no id count"))?;
        let name = header_string(c).map_err(|e| format!("event {i}: {e}"))?;
        let ids = c
            .u64s(u64::from(nr_ids))
            .ok_or_else(|| format!("event {i}: {nr_ids} ids past the section"))?;
        let ids = ids
            .chunks_exact(8)
            .map(|w| endian.u64(w.try_into().unwrap_or_default()))
            .collect();
        descs.push(EventDesc { name, ids });
    }
    Ok(descs)
}

/// BUILD_ID: `struct build_id_event` records (8-byte header, pid, 24 id bytes, NUL-padded
/// path up to the record's size) until the section ends or a record is malformed. Kernel
/// and user entries for the same path keep the last; sorted by path.
fn build_ids(data: &[u8], endian: Endian) -> Vec<BuildIdEntry> {
    let mut entries: Vec<BuildIdEntry> = Vec::new();
    let mut rest = data;
    while rest.len() >= 8 + 4 + 24 {
        let misc = endian.u16([rest[4], rest[5]]);
        let size = usize::from(endian.u16([rest[6], rest[7]]));
        if size < 8 + 4 + 24 || size > rest.len() {
            break;
        }
        let id_bytes = &rest[12..12 + 20];
        let len = if misc & MISC_BUILD_ID_SIZE != 0 {
            usize::from(rest[12 + 20]).min(20)
        } else {
            // Unknown length: trailing 4-byte groups of zeros are padding.
            let mut len = 20;
            while len >= 4 && id_bytes[len - 4..len].iter().all(|&b| b == 0) {
                len -= 4;
            }
            len
        };
        let pid = endian.u32([rest[8], rest[9], rest[10], rest[11]]) as i32;
        let path = c_str(&rest[36..size]).to_vec();
        let build_id = id_bytes[..len].to_vec();
        entries.retain(|e| e.path != path);
        entries.push(BuildIdEntry {
            pid,
            misc: misc & !MISC_BUILD_ID_SIZE,
            build_id,
            path,
        });
        rest = &rest[size..];
    }
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    entries
}
