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

    /// Adds `mapping`, in place of what it overlaps (as mmap does), with `module` for the
    /// unwinder when its image has one. Returns the parts of the mappings it overlapped that
    /// lie outside it (a mapping over the middle of another leaves two), still mapped: the
    /// caller adds them back with their modules (`perf inject --jit` maps its images of V8's
    /// builtins over node's own text, and the rest of that text is still node's).
    pub fn map(
        &mut self,
        mapping: Mapping,
        module: Option<framehop::Module<SharedBytes>>,
    ) -> Vec<Mapping> {
        let (start, end) = (mapping.file.start, mapping.file.end());
        let overlapping: Vec<Avma> = self
            .mappings
            .range(..end)
            .filter(|(_, old)| old.file.end() > start)
            .map(|(&s, _)| s)
            .collect();
        let mut left = Vec::new();
        for s in overlapping {
            let Some(old) = self.mappings.remove(&s) else {
                continue;
            };
            // Only a file's mapping has a module there; a JIT function's module may start
            // where an anonymous mapping does (a runtime remaps its code to protect it).
            if old.image.is_some() {
                self.unwinder.remove_module(s.0);
            }
            if old.file.start < start {
                left.push(old.part(old.file.start, start));
            }
            if end < old.file.end() {
                left.push(old.part(end, old.file.end()));
            }
        }
        if let Some(module) = module {
            self.unwinder.add_module(module);
        }
        self.anonymous_code |= mapping.image.is_none() && is_anonymous(&mapping.path);
        self.mappings.insert(start, Rc::new(mapping));
        left
    }
}

impl Mapping {
    /// The part of this mapping from `start` to `end` (inside it): the same file, image and
    /// base, its file offset moved with the start.
    fn part(&self, start: Avma, end: Avma) -> Mapping {
        Mapping {
            file: FileMapping {
                start,
                pgoff: self.file.file_offset_of(start),
                len: end.0 - start.0,
            },
            base: self.base,
            image: self.image,
            image_error: self.image_error.clone(),
            path: self.path.clone(),
            module: self.module.clone(),
        }
    }
}

/// Whether a mapping's recorded path is anonymous memory (`//anon`, or `[anon:NAME]` for
/// memory a runtime named with `PR_SET_VMA_ANON_NAME`).
pub(crate) fn is_anonymous(path: &str) -> bool {
    path.starts_with("//anon") || path.starts_with("[anon")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(start: u64, len: u64, pgoff: u64, path: &str, image: Option<usize>) -> Mapping {
        Mapping {
            file: FileMapping {
                start: Avma(start),
                pgoff: FileOffset(pgoff),
                len,
            },
            base: Avma(start - pgoff),
            image,
            image_error: None,
            path: path.into(),
            module: path.into(),
        }
    }

    /// As perf does (`maps__fixup_overlap_and_insert`): a mapping over the middle of another
    /// leaves the other's parts on both sides mapped, each at its own file offset.
    #[test]
    fn a_mapping_over_the_middle_of_another_leaves_both_sides() {
        let mut process = Process::default();
        assert!(process
            .map(
                file(0x10000, 0x8000, 0x1000, "/usr/bin/node", Some(0)),
                None
            )
            .is_empty());
        let left = process.map(file(0x12000, 0x1000, 0, "jitted-1-1.so", Some(1)), None);
        let spans: Vec<_> = left
            .iter()
            .map(|m| (m.file.start.0, m.file.len, m.file.pgoff.0, m.base.0))
            .collect();
        assert_eq!(
            spans,
            [
                (0x10000, 0x2000, 0x1000, 0xf000),
                (0x13000, 0x5000, 0x4000, 0xf000)
            ]
        );
        for part in left {
            assert!(process.map(part, None).is_empty());
        }
        let at = |a| process.mapping_at(Avma(a)).map(|m| &*m.path);
        assert_eq!(at(0x11fff), Some("/usr/bin/node"));
        assert_eq!(at(0x12000), Some("jitted-1-1.so"));
        assert_eq!(at(0x13000), Some("/usr/bin/node"));
        assert_eq!(at(0x17fff), Some("/usr/bin/node"));
        assert_eq!(at(0x18000), None);
        // The file offset of an address is the same as in the whole mapping.
        let right = process.mapping_at(Avma(0x15000)).unwrap();
        assert_eq!(right.file.file_offset_of(Avma(0x15000)).0, 0x6000);
        // A mapping over all of another leaves nothing of it.
        assert!(process
            .map(file(0x12000, 0x1000, 0, "jitted-1-2.so", Some(2)), None)
            .is_empty());
    }
}
