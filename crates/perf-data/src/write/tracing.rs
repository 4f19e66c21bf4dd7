//! Encoding the tracing data of tracepoint events (the HEADER_TRACING_DATA feature section),
//! laid out as perf 6.1's `tracing_data_get` writes it and `crate::tracing` reads it: the
//! magic `\x17\x08\x44tracing`, version "0.6", the endian byte, the size of a long, the page
//! size (u32); `header_page` and `header_event` (each a NUL-terminated name, a u64 size and
//! the tracefs file); a u32 count of ftrace format files (none here, as perf writes for
//! tracepoints); a u32 count of systems, each a NUL-terminated name, a u32 count of events and
//! each event's u64 size and `format` file; then kallsyms (u32 size), printk formats (u32
//! size) and saved cmdlines (u64 size), all three empty here: perf reads tracepoint fields
//! without them (it writes kallsyms empty too).
//!
//! Pure: the tracefs files are read by the caller (the recorder).

use super::enc::{check_no_nul, u32_len, Enc};
use super::Result;

/// What the tracing data holds: tracefs's two headers and the format files of the recorded
/// tracepoints, by system.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TracingData {
    /// The kernel's page size.
    pub page_size: u32,
    /// `events/header_page`.
    pub header_page: Vec<u8>,
    /// `events/header_event`.
    pub header_event: Vec<u8>,
    /// (system, the `format` file of each of its recorded events), in the order written.
    pub systems: Vec<(String, Vec<Vec<u8>>)>,
}

impl TracingData {
    /// The bytes of the feature section.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut b = Enc::default();
        b.bytes(b"\x17\x08\x44tracing0.6\0");
        b.u8(cfg!(target_endian = "big") as u8);
        b.u8(std::mem::size_of::<std::ffi::c_long>() as u8);
        b.u32(self.page_size);
        for (name, body) in [
            ("header_page", &self.header_page),
            ("header_event", &self.header_event),
        ] {
            b.bytes(name.as_bytes());
            b.u8(0);
            b.u64(body.len() as u64);
            b.bytes(body);
        }
        // No ftrace format files.
        b.u32(0);
        b.u32(u32_len(self.systems.len(), "tracing systems")?);
        for (system, formats) in &self.systems {
            check_no_nul(system, "tracing system name")?;
            b.bytes(system.as_bytes());
            b.u8(0);
            b.u32(u32_len(formats.len(), "tracing event formats")?);
            for format in formats {
                b.u64(format.len() as u64);
                b.bytes(format);
            }
        }
        // kallsyms, printk formats: none; saved cmdlines (version 0.6): none.
        b.u32(0);
        b.u32(0);
        b.u64(0);
        Ok(b.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracing::parse_tracing_data;

    /// The reader of the same layout finds every event under its system, and the bytes end
    /// where the three empty tails end.
    #[test]
    fn the_reader_reads_what_the_writer_writes() {
        let data = TracingData {
            page_size: 4096,
            header_page: b"\tfield: u64 timestamp;\n".to_vec(),
            header_event: b"# compressed entry header\n".to_vec(),
            systems: vec![(
                "sched".into(),
                vec![
                    b"name: sched_waking\nID: 317\nformat:\n".to_vec(),
                    b"name: sched_switch\nID: 316\nformat:\n".to_vec(),
                ],
            )],
        };
        let bytes = data.encode().unwrap();
        let names: Vec<(u64, String)> = parse_tracing_data(&bytes)
            .unwrap()
            .iter()
            .map(|e| (e.id, e.full_name()))
            .collect();
        assert_eq!(
            names,
            [
                (317, "sched:sched_waking".to_string()),
                (316, "sched:sched_switch".to_string())
            ]
        );
        assert_eq!(&bytes[bytes.len() - 16..], &[0u8; 16]);
        let nul = TracingData {
            systems: vec![("a\0b".into(), Vec::new())],
            ..data
        };
        assert!(nul.encode().is_err());
    }
}
