//! The table of distinct named frames that resolved stacks refer to.

use foldhash::HashMap;
use std::sync::Arc;

use crate::address::EntryAddress;

/// Where a frame's code lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameKind {
    User,
    /// A function inlined into the frame below it.
    Inline,
    Kernel,
    /// Code compiled at run time: named from a JIT dump (`jit-PID.dump`) or a perf map
    /// (`/tmp/perf-PID.map`), or in an image `perf inject --jit` wrote (`jitted-PID-N.so`).
    Jit,
}

/// A distinct named frame; samples refer to it by [`FrameRef`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    pub name: Arc<str>,
    /// Short module name: the binary's file name, `[vdso]`, `[kernel.kallsyms]`, `[ext4]`.
    pub module: Arc<str>,
    pub kind: FrameKind,
}

/// Index into the resolver's frame table ([`Resolver::frame`](crate::Resolver::frame)).
pub type FrameRef = u32;

/// One frame of a resolved stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackEntry {
    pub frame: FrameRef,
    /// The address in the process and what kind it is (a kernel address; a user
    /// instruction, or return address whose frames are named by the byte before it).
    pub address: EntryAddress,
    /// A user frame named from a file or a JIT dump: where its code is, and its place in the
    /// inline chain at that address (0: the innermost frame). `None` for kernel frames and
    /// frames named from a perf map or not at all.
    pub code: Option<CodeSite>,
}

/// The code of a frame: a file's address ([`CodeAddress`](crate::CodeAddress)) and how many
/// frames inlined there are inside this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CodeSite {
    pub code: crate::CodeAddress,
    pub inline_depth: u16,
}

/// Frames by [`FrameRef`], each (name, module, kind) once, except provisional ones.
#[derive(Default)]
pub(crate) struct FrameTable {
    frames: Vec<FrameInfo>,
    ids: HashMap<(Arc<str>, Arc<str>, FrameKind), FrameRef>,
}

impl FrameTable {
    pub(crate) fn get(&self, frame: FrameRef) -> &FrameInfo {
        &self.frames[frame as usize]
    }

    /// The frame named `name` in `module`, added if new.
    pub(crate) fn intern(&mut self, name: &str, module: &Arc<str>, kind: FrameKind) -> FrameRef {
        let key = (Arc::<str>::from(name), module.clone(), kind);
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.frames.len() as FrameRef;
        self.frames.push(FrameInfo {
            name: key.0.clone(),
            module: module.clone(),
            kind,
        });
        self.ids.insert(key, id);
        id
    }

    /// A frame of its own whose name is not final yet (see [`FrameTable::rename`]); it is not
    /// shared with other frames of the same name.
    pub(crate) fn provisional(&mut self, info: FrameInfo) -> FrameRef {
        let id = self.frames.len() as FrameRef;
        self.frames.push(info);
        id
    }

    /// Gives a provisional frame its final name.
    pub(crate) fn rename(&mut self, frame: FrameRef, name: String, module: Arc<str>) {
        let info = &mut self.frames[frame as usize];
        info.name = name.into();
        info.module = module;
    }
}
