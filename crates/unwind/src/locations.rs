//! Read-only questions about a sampled address, for exports that keep addresses (pprof):
//! which mapping held it and the source line of each frame there; and for `annotate`, where
//! a leaf is in its file, its function's bytes and its frames with their lines. A child of
//! `resolver` (declared there) so that it can read the process state without widening it.

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

/// A sampled user address as its file states it, for annotating the code there: which of
/// the resolver's opened images holds it, and its ELF address (what `perf annotate` prints).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodeAddress {
    /// The image, an index into the resolver's images (they are only ever added).
    pub image: usize,
    /// The ELF (stated) address.
    pub svma: u64,
}

/// One frame at a code address with its source line, innermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFrame {
    pub function: String,
    pub inlined: bool,
    pub line: SourceLine,
}

impl Resolver {
    /// Where user address `address` of process `pid` is in its file, when the file was
    /// opened (ask while walking the samples: mappings change with mmap and exec).
    pub fn code_address(&self, pid: i32, address: Avma) -> Option<CodeAddress> {
        let mapping = self.unwinder.processes.get(&pid)?.mapping_at(address)?;
        let image = mapping.image?;
        Some(CodeAddress {
            image,
            svma: mapping.svma(address).0,
        })
    }

    /// The path of the file opened for `code`.
    pub fn code_path(&self, code: CodeAddress) -> Option<&std::path::Path> {
        Some(&self.unwinder.images.get(code.image)?.path)
    }

    /// The stated address range of the function (sized symbol) holding `code`, and its bytes
    /// in the file; `None` when no symbol holds it or its bytes are not in the file.
    pub fn function_code(&self, code: CodeAddress) -> Option<(std::ops::Range<u64>, &[u8])> {
        let image = self.unwinder.images.get(code.image)?;
        let range = image.function_at(crate::address::Svma(code.svma))?;
        let bytes = image.code_bytes(range.clone())?;
        Some((range, bytes))
    }

    /// The symbol-table name (raw, clone suffixes kept: `foo.cold`) of the sized symbol
    /// holding `code`, the one [`Resolver::function_code`] gives the code of.
    pub fn function_symbol(&self, code: CodeAddress) -> Option<String> {
        let image = self.unwinder.images.get(code.image)?;
        image.function_symbol_at(crate::address::Svma(code.svma))
    }

    /// The frames at `code` (inlined functions, then the function), each with its DWARF
    /// source line; the lines are empty when DWARF does not say (call it after the samples
    /// were named: naming found the debug file).
    pub fn source_frames(&self, code: CodeAddress) -> Vec<SourceFrame> {
        let Some(image) = self.unwinder.images.get(code.image) else {
            return Vec::new();
        };
        let svma = crate::address::Svma(code.svma);
        let frames = image.frames_at_svma(svma, || None);
        let lines = image.lines_at_svma(svma);
        // Lines pair with frames only when DWARF named every frame there.
        let paired = lines.len() == frames.len();
        frames
            .into_iter()
            .enumerate()
            .map(|(i, f)| SourceFrame {
                function: f.name,
                inlined: f.inlined,
                line: if paired {
                    let (file, line) = lines[i].clone();
                    SourceLine { file, line }
                } else {
                    SourceLine::default()
                },
            })
            .collect()
    }

    /// Whether the file of image `image` (an index of [`CodeAddress::image`]) or its debug
    /// file has DWARF to read lines from; [`Resolver::source_line_chain`] is empty there
    /// otherwise. Ask after the samples were named (naming looks for the debug file).
    pub fn has_source_lines(&self, image: usize) -> bool {
        self.unwinder
            .images
            .get(image)
            .is_some_and(|i| i.has_line_info())
    }

    /// The DWARF source lines at `code`, one per frame there (inlined functions, then the
    /// function), innermost first; empty without DWARF. The lines of
    /// [`Resolver::source_frames`] without naming the frames: cheap where there is no DWARF.
    pub fn source_line_chain(&self, code: CodeAddress) -> Vec<SourceLine> {
        let Some(image) = self.unwinder.images.get(code.image) else {
            return Vec::new();
        };
        image
            .lines_at_svma(crate::address::Svma(code.svma))
            .into_iter()
            .map(|(file, line)| SourceLine { file, line })
            .collect()
    }
}
