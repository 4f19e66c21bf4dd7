//! Read-only questions about a sampled address, for exports that keep addresses (pprof):
//! which mapping held it and the source line of each frame there. A child of `resolver`
//! (declared there) so that it can read the process state without widening it.

use std::sync::Arc;

use super::Resolver;
use crate::address::{Avma, StackFrame};

/// A file mapping of a sampled process, as pprof's `Mapping` describes one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MappingInfo {
    /// First process address of the mapping.
    pub start: u64,
    /// First process address after it.
    pub limit: u64,
    /// File offset mapped at `start`.
    pub file_offset: u64,
    /// The path the recording gives.
    pub path: Arc<str>,
    /// The file's build id: the opened file's, else the one the recording gives.
    pub build_id: Option<Vec<u8>>,
}

/// Where a frame's code is in the source, as far as DWARF says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SourceLine {
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl Resolver {
    /// The mapping that holds user address `address` of process `pid` at this point of the
    /// recording (ask while walking the samples: mappings change with mmap and exec).
    pub fn mapping_at(&self, pid: i32, address: Avma) -> Option<MappingInfo> {
        let mapping = self.unwinder.processes.get(&pid)?.mapping_at(address)?;
        let build_id = mapping
            .image
            .and_then(|i| self.unwinder.images.get(i))
            .and_then(|image| image.build_id.clone())
            .or_else(|| {
                self.unwinder
                    .build_ids
                    .get(mapping.path.as_bytes())
                    .cloned()
            });
        Some(MappingInfo {
            start: mapping.file.start.0,
            limit: mapping.file.end().0,
            file_offset: mapping.file.pgoff.0,
            path: mapping.path.clone(),
            build_id,
        })
    }

    /// The source line of each frame that [`Resolver::resolve`] gave user frame `frame` of
    /// process `pid` (a [`StackEntry`](crate::StackEntry)'s
    /// [`EntryAddress::User`](crate::address::EntryAddress::User)), innermost first (inlined
    /// functions, then the function), or empty when DWARF does not say. Looked up where
    /// naming looked: the instruction, or the byte before a return address.
    pub fn source_lines(&self, pid: i32, frame: StackFrame) -> Vec<SourceLine> {
        let lookup = frame.lookup();
        let Some(mapping) = self
            .unwinder
            .processes
            .get(&pid)
            .and_then(|p| p.mapping_at(lookup))
        else {
            return Vec::new();
        };
        let Some(image) = mapping.image.and_then(|i| self.unwinder.images.get(i)) else {
            return Vec::new();
        };
        image
            .lines_at_svma(mapping.svma(lookup))
            .into_iter()
            .map(|(file, line)| SourceLine { file, line })
            .collect()
    }

    /// The kernel's build id, as the recording gives it.
    pub fn kernel_build_id(&self) -> Option<&[u8]> {
        self.unwinder
            .build_ids
            .get(b"[kernel.kallsyms]".as_slice())
            .map(Vec::as_slice)
    }
}
