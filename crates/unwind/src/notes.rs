//! ELF notes (`Elf64_Nhdr` sequences, as in a `PT_NOTE` segment or `/sys/kernel/notes`): the
//! GNU build id among them.
//!
//! Pure: it parses the bytes it is given and must never read a file (callers such as
//! `source.rs` read `/sys/kernel/notes`) nor trust a claimed size past the bytes it has.

/// Finds the NT_GNU_BUILD_ID note in a sequence of native-endian ELF notes.
pub fn gnu_build_id_note(mut notes: &[u8]) -> Option<Vec<u8>> {
    let align4 = |n: usize| n.checked_add(3).map(|v| v & !3);
    while notes.len() >= 12 {
        let word = |i: usize| {
            u32::from_ne_bytes([notes[i], notes[i + 1], notes[i + 2], notes[i + 3]]) as usize
        };
        let (namesz, descsz, kind) = (word(0), word(4), word(8));
        let name_end = 12usize.checked_add(align4(namesz)?)?;
        let desc_end = name_end.checked_add(align4(descsz)?)?;
        if desc_end > notes.len() {
            return None;
        }
        if kind == 3 && notes.get(12..12 + namesz)? == b"GNU\0" {
            return Some(notes[name_end..name_end + descsz].to_vec());
        }
        notes = &notes[desc_end..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_gnu_build_id_among_notes() {
        let mut notes = Vec::new();
        // A Xen note first, then the GNU build id.
        for (name, kind, desc) in [
            (&b"Xen\0"[..], 1u32, &[1u8, 2, 3, 4][..]),
            (b"GNU\0", 3, &[0xab; 20]),
        ] {
            notes.extend_from_slice(&(name.len() as u32).to_ne_bytes());
            notes.extend_from_slice(&(desc.len() as u32).to_ne_bytes());
            notes.extend_from_slice(&kind.to_ne_bytes());
            notes.extend_from_slice(name);
            notes.extend_from_slice(desc);
        }
        assert_eq!(gnu_build_id_note(&notes), Some(vec![0xab; 20]));
        assert_eq!(gnu_build_id_note(&notes[..20]), None);
    }
}
