//! Read-only questions about a sampled address, for exports that keep addresses (pprof):
//! which mapping held it and the source line of each frame there; and for `annotate`, where
//! a leaf is in its file, its function's bytes and its frames with their lines. A child of
//! `resolver` (declared there) so that it can read the process state without widening it.

use std::sync::Arc;

use super::Resolver;
use crate::address::{Avma, StackFrame};
use crate::jit::JitCodeRef;
use crate::jitdump::JitFunction;

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
        if let Some(code) = self.jit_code_at(pid, lookup) {
            return self.source_line_chain(code);
        }
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

/// A sampled user address as its code states it, for annotating the code there: which of
/// the resolver's opened images (or which JIT function) holds it, and its ELF address (what
/// `perf annotate` prints; a JIT function's: the process address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodeAddress {
    pub file: CodeFile,
    /// The ELF (stated) address; in a JIT function, the address in the process.
    pub svma: u64,
}

/// Where code is: an opened image, or a JIT function a dump loaded (its code, lines and
/// name are the dump's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CodeFile {
    /// An index into the resolver's images (they are only ever added).
    Image(usize),
    Jit(JitCodeRef),
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
        let mapping = self.unwinder.processes.get(&pid)?.mapping_at(address);
        match mapping.and_then(|m| Some((m, m.image?))) {
            Some((mapping, image)) => Some(CodeAddress {
                file: CodeFile::Image(image),
                svma: mapping.svma(address).0,
            }),
            None => self.jit_code_at(pid, address),
        }
    }

    /// The JIT function holding `address` of process `pid` at this point of the recording,
    /// as a code address.
    fn jit_code_at(&self, pid: i32, address: Avma) -> Option<CodeAddress> {
        let process = self.unwinder.processes.get(&pid)?;
        if process
            .mapping_at(address)
            .is_some_and(|m| m.image.is_some())
        {
            return None;
        }
        let placed = process.jit.function_at(address.0)?;
        Some(CodeAddress {
            file: CodeFile::Jit(placed.code),
            svma: address.0,
        })
    }

    fn jit_function(&self, code: CodeAddress) -> Option<&JitFunction> {
        match code.file {
            CodeFile::Jit(jit) => self.unwinder.jit_function(jit).map(|f| &**f),
            CodeFile::Image(_) => None,
        }
    }

    fn image_of(&self, code: CodeAddress) -> Option<&crate::image::Image> {
        match code.file {
            CodeFile::Image(i) => self.unwinder.images.get(i),
            CodeFile::Jit(_) => None,
        }
    }

    /// The path of the file opened for `code` (none for JIT code).
    pub fn code_path(&self, code: CodeAddress) -> Option<&std::path::Path> {
        Some(&self.image_of(code)?.path)
    }

    /// The stated address range of the function (sized symbol, or JIT function) holding
    /// `code`, and its bytes; `None` when no symbol holds it or its bytes are not at hand.
    pub fn function_code(&self, code: CodeAddress) -> Option<(std::ops::Range<u64>, &[u8])> {
        if let Some(function) = self.jit_function(code) {
            return Some((function.range(), &function.code));
        }
        let image = self.image_of(code)?;
        let range = image.function_at(crate::address::Svma(code.svma))?;
        let bytes = image.code_bytes(range.clone())?;
        Some((range, bytes))
    }

    /// The symbol-table name (raw, clone suffixes kept: `foo.cold`) of the sized symbol
    /// holding `code`, the one [`Resolver::function_code`] gives the code of (a JIT
    /// function's name as its dump gives it).
    pub fn function_symbol(&self, code: CodeAddress) -> Option<String> {
        if let Some(function) = self.jit_function(code) {
            return Some(function.name.to_string());
        }
        let image = self.image_of(code)?;
        image.function_symbol_at(crate::address::Svma(code.svma))
    }

    /// The frames at `code` (inlined functions, then the function), each with its DWARF
    /// source line; the lines are empty when DWARF does not say (call it after the samples
    /// were named: naming found the debug file).
    pub fn source_frames(&self, code: CodeAddress) -> Vec<SourceFrame> {
        if let Some(function) = self.jit_function(code) {
            return vec![SourceFrame {
                function: function.name.to_string(),
                inlined: false,
                line: jit_line(function, code.svma),
            }];
        }
        let Some(image) = self.image_of(code) else {
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

    /// Whether the file of `file` (or its debug file) has DWARF to read lines from, or the
    /// JIT function its dump's lines; [`Resolver::source_line_chain`] is empty there
    /// otherwise. Ask after the samples were named (naming looks for the debug file).
    pub fn has_source_lines(&self, file: CodeFile) -> bool {
        match file {
            CodeFile::Image(i) => self
                .unwinder
                .images
                .get(i)
                .is_some_and(|i| i.has_line_info()),
            CodeFile::Jit(jit) => self
                .unwinder
                .jit_function(jit)
                .is_some_and(|f| !f.lines.is_empty()),
        }
    }

    /// The DWARF source lines at `code`, one per frame there (inlined functions, then the
    /// function), innermost first; empty without DWARF. The lines of
    /// [`Resolver::source_frames`] without naming the frames: cheap where there is no DWARF.
    pub fn source_line_chain(&self, code: CodeAddress) -> Vec<SourceLine> {
        if let Some(function) = self.jit_function(code) {
            let line = jit_line(function, code.svma);
            return if line.line.is_some() {
                vec![line]
            } else {
                Vec::new()
            };
        }
        let Some(image) = self.image_of(code) else {
            return Vec::new();
        };
        image
            .lines_at_svma(crate::address::Svma(code.svma))
            .into_iter()
            .map(|(file, line)| SourceLine { file, line })
            .collect()
    }
}

/// The line of JIT code at process address `addr`, as its dump's debug info says.
fn jit_line(function: &JitFunction, addr: u64) -> SourceLine {
    match function.line_at(addr) {
        Some(l) => SourceLine {
            file: Some(l.file.to_string()),
            line: Some(l.line),
        },
        None => SourceLine::default(),
    }
}
