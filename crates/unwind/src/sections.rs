//! An image's section bytes as the DWARF reader and the unwinder take them: shared with the
//! file's map when stored plainly, inflated when compressed, and the gimli reader over them.
//!
//! Shared by `image.rs` and `dwarf.rs` so that neither imports the other for it. It must
//! never allocate more for a compressed section than its compressed bytes can expand to.

use object::ObjectSection;

use crate::shared::SharedBytes;

/// The gimli reader over shared file bytes.
pub type Reader = gimli::EndianReader<gimli::RunTimeEndian, SharedBytes>;

/// The bytes of `section`, borrowed from the map when stored uncompressed.
pub(crate) fn section_bytes(
    data: &SharedBytes,
    section: &object::Section<'_, '_>,
) -> Option<SharedBytes> {
    let compressed = section.compressed_file_range().ok()?;
    if compressed.format == object::CompressionFormat::None {
        let start = usize::try_from(compressed.offset).ok()?;
        let len = usize::try_from(compressed.uncompressed_size).ok()?;
        // Re-slice the same backing storage: `data` is the whole file.
        let end = start.checked_add(len)?;
        if end > data.len() {
            return None;
        }
        let mut bytes = data.clone();
        bytes.narrow(start..end);
        Some(bytes)
    } else {
        // The header's uncompressed size is what gets allocated: a corrupt or hostile file
        // must not make it exceed what its compressed bytes can expand to.
        let max_ratio = match compressed.format {
            // Deflate's limit is 1032:1.
            object::CompressionFormat::Zlib => 1032,
            _ => 8192,
        };
        if compressed.uncompressed_size > compressed.compressed_size.saturating_mul(max_ratio) {
            return None;
        }
        Some(SharedBytes::owned(
            section.uncompressed_data().ok()?.into_owned(),
        ))
    }
}
