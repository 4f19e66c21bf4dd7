//! What `read()` on a perf event fd returns (perf_event.h, `read_format`), and the estimate
//! of a count when the kernel multiplexed the counter.

use std::fs::File;
use std::io::{self, Read};

use cpiflame_perf_data::abi::read_format as rf;

/// One counter's value as read, with the times it was enabled and running.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    pub value: u64,
    pub time_enabled: u64,
    pub time_running: u64,
    /// The kernel's id of the event (PERF_FORMAT_ID).
    pub id: u64,
}

impl Reading {
    /// The count estimated for the whole enabled time: `value × enabled / running` (what
    /// perf stat prints when a counter was multiplexed). `None` when it never ran.
    pub fn scaled(&self) -> Option<u64> {
        if self.time_running == 0 {
            return (self.time_enabled == 0).then_some(self.value);
        }
        if self.time_running >= self.time_enabled {
            return Some(self.value);
        }
        let v = self.value as u128 * self.time_enabled as u128 / self.time_running as u128;
        Some(u64::try_from(v).unwrap_or(u64::MAX))
    }

    /// Share of the enabled time the counter was counting (1.0 = never multiplexed).
    pub fn running_share(&self) -> f64 {
        if self.time_enabled == 0 {
            1.0
        } else {
            self.time_running as f64 / self.time_enabled as f64
        }
    }

    /// The difference `self - earlier` of two readings of the same counter.
    pub fn since(&self, earlier: &Reading) -> Reading {
        Reading {
            value: self.value.wrapping_sub(earlier.value),
            time_enabled: self.time_enabled.wrapping_sub(earlier.time_enabled),
            time_running: self.time_running.wrapping_sub(earlier.time_running),
            id: self.id,
        }
    }
}

/// The read_format the readers here expect.
pub const READ_FORMAT: u64 = rf::TOTAL_TIME_ENABLED | rf::TOTAL_TIME_RUNNING | rf::ID;
/// The same, for reading a whole group at once.
pub const READ_FORMAT_GROUP: u64 = READ_FORMAT | rf::GROUP;

fn words(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
}

/// Parses one counter read with [`READ_FORMAT`]: value, enabled, running, id.
pub fn parse_single(bytes: &[u8]) -> Option<Reading> {
    let mut w = words(bytes);
    Some(Reading {
        value: w.next()?,
        time_enabled: w.next()?,
        time_running: w.next()?,
        id: w.next()?,
    })
}

/// Parses a group read with [`READ_FORMAT_GROUP`]: nr, enabled, running, then (value, id)
/// per member. Every member shares the group's times.
pub fn parse_group(bytes: &[u8], out: &mut Vec<Reading>) -> Option<()> {
    out.clear();
    let mut w = words(bytes);
    let nr = w.next()?;
    let time_enabled = w.next()?;
    let time_running = w.next()?;
    for _ in 0..nr {
        out.push(Reading {
            value: w.next()?,
            time_enabled,
            time_running,
            id: w.next()?,
        });
    }
    Some(())
}

/// Reads one counter opened with [`READ_FORMAT`].
pub fn read_single(fd: &File) -> io::Result<Reading> {
    let mut buf = [0u8; 32];
    let n = (&*fd).read(&mut buf)?;
    parse_single(&buf[..n])
        .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "short read"))
}

/// Reads a group (through its leader) opened with [`READ_FORMAT_GROUP`].
pub fn read_group(leader: &File, members: usize, out: &mut Vec<Reading>) -> io::Result<()> {
    let mut buf = vec![0u8; 24 + 16 * members.max(1)];
    let n = (&*leader).read(&mut buf)?;
    parse_group(&buf[..n], out)
        .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "short read"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    #[test]
    fn multiplexed_counts_are_scaled_by_enabled_over_running() {
        let r = Reading {
            value: 1_000,
            time_enabled: 400,
            time_running: 100,
            id: 1,
        };
        assert_eq!(r.scaled(), Some(4_000));
        assert_eq!(r.running_share(), 0.25);
        let full = Reading {
            value: 7,
            time_enabled: 50,
            time_running: 50,
            id: 1,
        };
        assert_eq!(full.scaled(), Some(7));
        let never = Reading {
            value: 0,
            time_enabled: 50,
            time_running: 0,
            id: 1,
        };
        assert_eq!(never.scaled(), None);
        // No overflow for large products.
        let big = Reading {
            value: u64::MAX - 1,
            time_enabled: 3,
            time_running: 2,
            id: 1,
        };
        assert_eq!(big.scaled(), Some(u64::MAX));
        let delta = r.since(&Reading {
            value: 400,
            time_enabled: 100,
            time_running: 40,
            id: 1,
        });
        assert_eq!(
            (delta.value, delta.time_enabled, delta.time_running),
            (600, 300, 60)
        );
    }

    #[test]
    fn parses_single_and_group_layouts() {
        assert_eq!(
            parse_single(&bytes(&[5, 10, 8, 42])),
            Some(Reading {
                value: 5,
                time_enabled: 10,
                time_running: 8,
                id: 42
            })
        );
        assert_eq!(parse_single(&bytes(&[5, 10, 8])), None);
        let mut out = Vec::new();
        parse_group(&bytes(&[2, 100, 50, 11, 1, 22, 2]), &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[1],
            Reading {
                value: 22,
                time_enabled: 100,
                time_running: 50,
                id: 2
            }
        );
        assert!(parse_group(&bytes(&[3, 100, 50, 11, 1]), &mut out).is_none());
    }
}
