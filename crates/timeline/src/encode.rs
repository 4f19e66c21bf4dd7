//! The page's data, compact: frames once (in the CPI graph's sibling order), stacks once (as
//! frame indexes), and per non-empty cell the (thread, stack) pairs that have samples in it
//! with their counts, every number an unsigned LEB128 varint, the bytes in base64.
//!
//! `cells` holds, for each non-empty cell in (column, row) order: the number of empty cells
//! skipped since the previous one and the number of threads with samples in it; per thread,
//! its index and number of stacks; per stack (in increasing order), its index less the
//! previous one's and, for each value column, its samples and its summed period divided by
//! the column's unit (the greatest common divisor of its samples' periods: 1 in frequency mode,
//! the period itself with a fixed one, so that a fixed-period column costs a byte).
//! `stacks` holds, per stack, its length and its frames' indexes, root first.

use std::collections::HashMap;

use cpiflame_profile::timed::{Cells, Thread, Timed};
use cpiflame_profile::{Frame, Profile};

use cpiflame_profile::{Column, Columns};

/// One of the numbers the page keeps per entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueColumn {
    /// `cycles`, `stalls`, `instructions`, `oncpu`, `runnable` or `blocked`.
    pub role: &'static str,
    /// The profile's column.
    pub column: usize,
    /// Every period of the column is a multiple of this; periods are stored divided by it.
    pub unit: u64,
}

/// The page's data.
#[derive(Clone, Debug)]
pub struct Encoded {
    /// The frames, ranked: siblings are drawn in this order.
    pub frames: Vec<Frame>,
    pub threads: Vec<Thread>,
    pub values: Vec<ValueColumn>,
    pub cells: Cells,
    /// Base64 of the stacks' varints.
    pub stacks: String,
    /// Base64 of the cells' varints.
    pub cell_data: String,
    /// Number of (cell, thread, stack) entries.
    pub entries: usize,
}

/// The page's data of `profile` and its samples `timed`, `rows` cells per second; `None`
/// when no sample has a width (cycles, or wall time).
pub fn encode(profile: &Profile, columns: &Columns, timed: &Timed, rows: u32) -> Option<Encoded> {
    let mut values = vec![ValueColumn {
        role: "cycles",
        column: columns.cycles.index(),
        unit: 0,
    }];
    let mut add = |role, column: Option<usize>| {
        if let Some(column) = column {
            values.push(ValueColumn {
                role,
                column,
                unit: 0,
            });
        }
    };
    add("stalls", columns.stalls.map(Column::index));
    add("instructions", columns.instructions.map(Column::index));
    if let Some(w) = columns.wall() {
        add("oncpu", Some(w.on_cpu.index()));
        add("runnable", Some(w.runnable.index()));
        add("blocked", Some(w.blocked.index()));
    }
    let widths: Vec<usize> = columns
        .width_columns()
        .into_iter()
        .flatten()
        .map(Column::index)
        .collect();
    let mut value_of: HashMap<usize, usize> = HashMap::new();
    for (i, v) in values.iter().enumerate() {
        value_of.entry(v.column).or_insert(i);
    }
    let ours = |c: u32| value_of.get(&(c as usize)).copied();
    let kept = || timed.samples.iter().filter(|s| ours(s.column).is_some());
    let width_times = kept()
        .filter(|s| widths.contains(&(s.column as usize)) && s.period > 0)
        .map(|s| s.time);
    let first = width_times.clone().min()?;
    let last = kept().map(|s| s.time).max()?;
    let first = first.min(kept().map(|s| s.time).min()?);
    let cells = Cells::new(first, last, rows);
    for s in kept() {
        let v = &mut values[value_of[&(s.column as usize)]];
        v.unit = gcd(v.unit, s.period);
    }
    for v in &mut values {
        v.unit = v.unit.max(1);
    }

    // Frames ranked as the CPI graph orders siblings; only stacks with samples are kept.
    let mut order: Vec<usize> = (0..profile.frames.len()).collect();
    order.sort_by(|&a, &b| profile.frames[a].cmp(&profile.frames[b]));
    let mut rank = vec![0u32; profile.frames.len()];
    for (r, &f) in order.iter().enumerate() {
        rank[f] = r as u32;
    }
    let frames: Vec<Frame> = order.iter().map(|&f| profile.frames[f].clone()).collect();
    let mut dense: HashMap<u32, u32> = HashMap::new();
    let mut stack_bytes = Vec::new();
    let mut stack_of = |stack: u32, bytes: &mut Vec<u8>| -> u32 {
        let n = dense.len() as u32;
        *dense.entry(stack).or_insert_with(|| {
            let frames = &profile.stacks[stack as usize].frames;
            varint(bytes, frames.len() as u64);
            for &f in frames {
                varint(bytes, u64::from(rank[f as usize]));
            }
            n
        })
    };

    let k = values.len();
    let mut index: HashMap<(u32, u32, u32), usize> = HashMap::new();
    let mut keys: Vec<(u32, u32, u32)> = Vec::new();
    let mut sums: Vec<u64> = Vec::new();
    for s in kept() {
        let Some((column, row)) = cells.of(s.time) else {
            continue;
        };
        let cell = column * cells.rows + row;
        let stack = stack_of(s.stack, &mut stack_bytes);
        let at = *index.entry((cell, s.thread, stack)).or_insert_with(|| {
            keys.push((cell, s.thread, stack));
            sums.resize(sums.len() + 2 * k, 0);
            keys.len() - 1
        });
        let v = value_of[&(s.column as usize)];
        sums[at * 2 * k + 2 * v] += 1;
        sums[at * 2 * k + 2 * v + 1] += s.period / values[v].unit;
    }
    let mut sorted: Vec<usize> = (0..keys.len()).collect();
    sorted.sort_unstable_by_key(|&i| keys[i]);
    let mut bytes = Vec::new();
    let mut next = 0u32;
    for cell in sorted.chunk_by(|&a, &b| keys[a].0 == keys[b].0) {
        let at = keys[cell[0]].0;
        let threads: Vec<&[usize]> = cell.chunk_by(|&a, &b| keys[a].1 == keys[b].1).collect();
        varint(&mut bytes, u64::from(at - next));
        varint(&mut bytes, threads.len() as u64);
        for group in threads {
            varint(&mut bytes, u64::from(keys[group[0]].1));
            varint(&mut bytes, group.len() as u64);
            let mut stack = 0;
            for &j in group {
                varint(&mut bytes, u64::from(keys[j].2 - stack));
                stack = keys[j].2;
                for &x in &sums[j * 2 * k..(j + 1) * 2 * k] {
                    varint(&mut bytes, x);
                }
            }
        }
        next = at + 1;
    }
    Some(Encoded {
        frames,
        threads: timed.threads.clone(),
        values,
        cells,
        stacks: base64(&stack_bytes),
        cell_data: base64(&bytes),
        entries: keys.len(),
    })
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Unsigned LEB128.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use cpiflame_profile::timed::{TimedSample, NS_PER_SEC};
    use cpiflame_profile::{Count, EventColumn, FrameKind};

    pub(crate) fn unbase64(text: &str) -> Vec<u8> {
        let value = |c: u8| match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            _ => 63,
        };
        let mut out = Vec::new();
        for chunk in text.as_bytes().chunks(4) {
            let pad = chunk.iter().filter(|&&c| c == b'=').count();
            let n = chunk.iter().fold(0u32, |n, &c| {
                (n << 6) | u32::from(if c == b'=' { 0 } else { value(c) })
            });
            out.extend_from_slice(&n.to_be_bytes()[1..4 - pad]);
        }
        out
    }

    pub(crate) fn read_varints(bytes: &[u8]) -> Vec<u64> {
        let mut out = Vec::new();
        let (mut v, mut shift) = (0u64, 0);
        for &b in bytes {
            v |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                out.push(v);
                v = 0;
                shift = 0;
            }
        }
        out
    }

    #[test]
    fn base64_and_varints_round_trip() {
        for bytes in [
            &b""[..],
            b"a",
            b"ab",
            b"abc",
            b"abcd",
            &[0xff, 0, 0x80, 7, 9],
        ] {
            assert_eq!(unbase64(&base64(bytes)), bytes);
        }
        assert_eq!(base64(b"Man"), "TWFu");
        assert_eq!(base64(b"Ma"), "TWE=");
        let mut b = Vec::new();
        for v in [0, 1, 127, 128, 300, u64::MAX] {
            varint(&mut b, v);
        }
        assert_eq!(read_varints(&b), vec![0, 1, 127, 128, 300, u64::MAX]);
    }

    /// A cell's entries decoded: (cell index, thread, stack, [samples, period in units] per value).
    pub(crate) fn decode_cells(e: &Encoded) -> Vec<(u32, u32, u32, Vec<u64>)> {
        let v = read_varints(&unbase64(&e.cell_data));
        let k = e.values.len();
        let mut out = Vec::new();
        let (mut at, mut next) = (0, 0u32);
        while at < v.len() {
            let cell = next + v[at] as u32;
            let groups = v[at + 1];
            at += 2;
            for _ in 0..groups {
                let (thread, n) = (v[at] as u32, v[at + 1] as usize);
                at += 2;
                let mut stack = 0;
                for _ in 0..n {
                    stack += v[at] as u32;
                    out.push((cell, thread, stack, v[at + 1..at + 1 + 2 * k].to_vec()));
                    at += 1 + 2 * k;
                }
            }
            next = cell + 1;
        }
        out
    }

    #[test]
    fn cells_hold_the_samples_taken_in_them() {
        // Two stacks, two threads; cycles every 3 ms from t = 5.995 s to 8.092 s (columns 5 to 8), a stall
        // sample every third cycles sample. Each cell's counts are known by construction.
        let mut profile = Profile::new(vec![
            EventColumn {
                name: "cycles".into(),
            },
            EventColumn {
                name: "stalls".into(),
            },
        ]);
        let frame = |profile: &mut Profile, name: &str| {
            profile.intern(Frame {
                name: name.into(),
                module: String::new(),
                kind: FrameKind::User,
            })
        };
        let (a, b, c) = (
            frame(&mut profile, "app"),
            frame(&mut profile, "zed"),
            frame(&mut profile, "alpha"),
        );
        profile.add(&[a, b], 0, Count::default());
        profile.add(&[a, c], 0, Count::default());
        let threads = vec![
            Thread {
                pid: 7,
                tid: 7,
                comm: "app".into(),
            },
            Thread {
                pid: 7,
                tid: 8,
                comm: "worker".into(),
            },
        ];
        let mut samples = Vec::new();
        let start = 5 * NS_PER_SEC + 995_000_000;
        let mut expected: HashMap<(u32, u32, u32), [u64; 4]> = HashMap::new();
        for i in 0..700u64 {
            let time = start + i * 3_000_000;
            let (thread, stack) = ((i % 2) as u32, (i % 5 == 0) as u32);
            let since = time - 5 * NS_PER_SEC;
            let cell =
                (since / NS_PER_SEC) as u32 * 50 + ((since % NS_PER_SEC) / 20_000_000) as u32;
            samples.push(TimedSample {
                time,
                thread,
                stack,
                column: 0,
                period: 1000 * (1 + i % 3),
            });
            let e = expected.entry((cell, thread, stack)).or_default();
            e[0] += 1;
            e[1] += 1 + i % 3;
            if i % 3 == 0 {
                samples.push(TimedSample {
                    time,
                    thread,
                    stack,
                    column: 1,
                    period: 500,
                });
                e[2] += 1;
                e[3] += 1;
            }
        }
        let timed = Timed { samples, threads };
        let columns = Columns::new(0, Some(1));
        let e = encode(&profile, &columns, &timed, 50).unwrap();
        assert_eq!(e.cells.origin, 5 * NS_PER_SEC);
        assert_eq!(e.cells.columns, 4);
        assert_eq!(
            e.values
                .iter()
                .map(|v| (v.role, v.unit))
                .collect::<Vec<_>>(),
            [("cycles", 1000), ("stalls", 500)]
        );
        // Stacks: dense indexes in first-seen order, frames as ranks (alpha < app < zed).
        let stacks = read_varints(&unbase64(&e.stacks));
        assert_eq!(stacks, vec![2, 1, 0, 2, 1, 2]);
        let names: Vec<&str> = e.frames.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["alpha", "app", "zed"]);
        let got = decode_cells(&e);
        assert_eq!(got.len(), expected.len());
        assert_eq!(e.entries, expected.len());
        for (cell, thread, dense, values) in got {
            // Dense stack 0 is the first seen: sample 0's stack, profile stack 1.
            let stack = 1 - dense;
            assert_eq!(
                values,
                expected[&(cell, thread, stack)].to_vec(),
                "cell {cell}"
            );
        }
    }
}
