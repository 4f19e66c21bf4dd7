//! The state of one sampled process as the recording goes on: its executable mappings and
//! the unwinder over their images and JIT code (its JIT map, naming's, is the namer's).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use framehop::x86_64::UnwinderX86_64;
use framehop::Unwinder;

use crate::address::{Avma, FileMapping, FileOffset, Svma};
use crate::image::ImageError;
use crate::jit::JitCode;
use crate::shared::SharedBytes;

/// One executable mapping of a process.
pub(crate) struct Mapping {
    /// Which bytes of the file are where in the process.
    pub file: FileMapping,
    /// The AVMA of the image's SVMA 0 (meaningful only with an image).
    pub base: Avma,
    /// Index of the opened image in the resolver's list.
    pub image: Option<usize>,
    /// Why there is no image, when there is none for a file path.
    pub image_error: Option<ImageError>,
    /// The recorded path.
    pub path: Arc<str>,
    /// File name of the path, shown as the frame's module.
    pub module: Arc<str>,
}

impl Mapping {
    /// The stated address in the image of process address `avma`.
    pub fn svma(&self, avma: Avma) -> Svma {
        avma.to_svma(self.base)
    }

    /// `module+0xOFFSET`, with the file offset of `avma`: the same in every run, unlike the
    /// process address.
    pub fn offset_name(&self, avma: Avma) -> String {
        let FileOffset(offset) = self.file.file_offset_of(avma);
        format!("{}+{offset:#x}", self.module)
    }
}

/// A process: mappings by start address, its JIT code, and framehop's view of their images
/// and of the JIT functions' unwind tables.
#[derive(Clone, Default)]
pub(crate) struct Process {
    mappings: BTreeMap<Avma, Rc<Mapping>>,
    pub jit: JitCode,
    /// Whether an anonymous executable mapping was ever made (a runtime's JIT code): only
    /// then does a walk look for JIT frames ([`Process::may_run_jit_code`]).
    anonymous_code: bool,
    pub unwinder: UnwinderX86_64<SharedBytes>,
}

impl Process {
    /// A forked child: its parent's mappings and code, no dump of its own yet.
    pub fn forked(&self) -> Process {
        Process {
            mappings: self.mappings.clone(),
            jit: self.jit.forked(),
            anonymous_code: self.anonymous_code,
            unwinder: self.unwinder.clone(),
        }
    }

    /// Whether this process may run JIT code: it mapped anonymous code or a JIT dump.
    pub fn may_run_jit_code(&self) -> bool {
        self.anonymous_code || !self.jit.is_empty()
    }

    /// The mapping that holds `avma`.
    pub fn mapping_at(&self, avma: Avma) -> Option<&Rc<Mapping>> {
        let (_, m) = self.mappings.range(..=avma).next_back()?;
        (avma < m.file.end()).then_some(m)
    }

    /// Adds `mapping`, replacing the mappings it overlaps (as mmap does), with `module` for
    /// the unwinder when its image has one.
    pub fn map(&mut self, mapping: Mapping, module: Option<framehop::Module<SharedBytes>>) {
        let (start, end) = (mapping.file.start, mapping.file.end());
        let overlapping: Vec<Avma> = self
            .mappings
            .range(..end)
            .filter(|(_, old)| old.file.end() > start)
            .map(|(&s, _)| s)
            .collect();
        for s in overlapping {
            // Only a file's mapping has a module there; a JIT function's module may start
            // where an anonymous mapping does (a runtime remaps its code to protect it).
            if self
                .mappings
                .remove(&s)
                .is_some_and(|old| old.image.is_some())
            {
                self.unwinder.remove_module(s.0);
            }
        }
        if let Some(module) = module {
            self.unwinder.add_module(module);
        }
        self.anonymous_code |= mapping.image.is_none() && is_anonymous(&mapping.path);
        self.mappings.insert(start, Rc::new(mapping));
    }
}

/// Whether a mapping's recorded path is anonymous memory (`//anon`, or `[anon:NAME]` for
/// memory a runtime named with `PR_SET_VMA_ANON_NAME`).
pub(crate) fn is_anonymous(path: &str) -> bool {
    path.starts_with("//anon") || path.starts_with("[anon")
}
