//! Naming frames: user addresses through their mapping's image (symbols and DWARF) or the
//! process's JIT map, kernel addresses through kernel symbols, and `module+0xOFFSET` (or
//! `[kernel]+0xADDR`) when nothing names them honestly.

use std::sync::Arc;

use super::{Resolver, Unnamed};
use crate::address::Avma;
use crate::frames::{FrameInfo, FrameKind, FrameRef, StackEntry};
use crate::perfmap::PerfMap;

impl Resolver {
    /// Modules whose frames could not be named, with why and how many frames.
    pub fn unnamed(&self) -> Vec<Unnamed> {
        self.unnamed
            .iter()
            .map(|(path, (reason, frames))| Unnamed {
                path: path.to_string(),
                reason: reason.clone(),
                frames: *frames,
            })
            .collect()
    }

    /// Pushes the frames at user address `address` of process `pid` (named by `lookup`, the
    /// address itself or the byte before a return address) onto `out`: the functions inlined
    /// there, innermost first, then the function itself. Returns whether a symbol, DWARF or a
    /// JIT map named it; when not, the frame pushed is `module+0xOFFSET` (or `[unknown]`),
    /// counted among the module's unnamed frames only if `count_unnamed`.
    pub(super) fn push_user_frames(
        &mut self,
        pid: i32,
        address: Avma,
        lookup: Avma,
        out: &mut Vec<StackEntry>,
        count_unnamed: bool,
    ) -> bool {
        let entry = |frame| StackEntry {
            frame,
            address: address.0,
        };
        let mapping = self
            .unwinder
            .processes
            .get(&pid)
            .and_then(|p| p.mapping_at(lookup).cloned());
        let Some(mapping) = mapping else {
            let name = self.perf_map_name(pid, lookup);
            let jit: Arc<str> = Arc::from(format!("perf-{pid}.map"));
            let frame = match &name {
                Some(n) => self.frames.intern(n, &jit, FrameKind::Jit),
                None => self
                    .frames
                    .intern("[unknown]", &Arc::from(""), FrameKind::User),
            };
            out.push(entry(frame));
            return name.is_some();
        };
        if let Some(image) = mapping.image {
            let svma = mapping.svma(lookup);
            let key = (image, svma);
            // Named once per distinct address of an image; one hash lookup per frame after.
            let ids = match self.names.get(&key) {
                Some(ids) => ids,
                None => {
                    let locator = &self.unwinder.locator;
                    let img = &self.unwinder.images[image];
                    let named = img.frames_at_svma(svma, || locator.open_debug(img));
                    let ids: Box<[FrameRef]> = named
                        .iter()
                        .map(|f| {
                            let kind = if f.inlined {
                                FrameKind::Inline
                            } else if jitted_image(&mapping.module) {
                                FrameKind::Jit
                            } else {
                                FrameKind::User
                            };
                            self.frames.intern(&f.name, &mapping.module, kind)
                        })
                        .collect();
                    self.names.entry(key).or_insert(ids)
                }
            };
            if !ids.is_empty() {
                out.extend(ids.iter().map(|&frame| entry(frame)));
                return true;
            }
            if count_unnamed {
                self.unnamed
                    .entry(mapping.path.clone())
                    .or_insert_with(|| ("no symbol covers some addresses".into(), 0))
                    .1 += 1;
            }
        } else {
            if mapping.path.starts_with("//anon") || mapping.path.starts_with("[anon") {
                if let Some(n) = self.perf_map_name(pid, lookup) {
                    let jit: Arc<str> = Arc::from(format!("perf-{pid}.map"));
                    let frame = self.frames.intern(&n, &jit, FrameKind::Jit);
                    out.push(entry(frame));
                    return true;
                }
            }
            if count_unnamed {
                let reason = match &mapping.image_error {
                    Some(e) => e.to_string(),
                    None => "no file and no JIT map names this memory".to_string(),
                };
                self.unnamed
                    .entry(mapping.path.clone())
                    .or_insert((reason, 0))
                    .1 += 1;
            }
        }
        // Of the address itself, not the lookup address, as perf shows it.
        let name = mapping.offset_name(address);
        let frame = self.frames.intern(&name, &mapping.module, FrameKind::User);
        out.push(entry(frame));
        false
    }

    /// The JIT map's name for `addr` in process `pid`; JIT maps are read only for files
    /// recorded here, where the map's process was.
    fn perf_map_name(&mut self, pid: i32, addr: Avma) -> Option<String> {
        if !self.recorded_here {
            return None;
        }
        let source = &*self.unwinder.locator.source;
        let process = self.unwinder.processes.entry(pid).or_default();
        let map = process
            .perf_map
            .get_or_insert_with(|| {
                PerfMap::load_from(source, &PerfMap::path_for(pid)).map(std::rc::Rc::new)
            })
            .clone()?;
        map.lookup(addr.0).map(String::from)
    }

    /// The frame for kernel address `addr`.
    pub(super) fn kernel_frame(&mut self, addr: Avma) -> FrameRef {
        if let Some(&f) = self.kernel_names.get(&addr) {
            return f;
        }
        if self.kernel.is_none()
            && self.kernel_loading.is_none()
            && self.kernel_symbol_files.any()
            && self.parallel
            && !self.unwind_only
        {
            let source = self.unwinder.locator.source.clone();
            let files = self.kernel_symbol_files.clone();
            let starts = self.kernel_starts.clone();
            self.kernel_loading = Some(std::thread::spawn(move || files.load(&*source, &starts)));
        }
        if self.kernel.is_none() && self.kernel_loading.as_ref().is_none_or(|h| h.is_finished()) {
            self.join_kernel_symbols();
        }
        let f = if self.kernel.is_some() {
            let (name, module) = self.kernel_name(addr);
            self.frames.intern(&name, &module, FrameKind::Kernel)
        } else {
            // Not loaded yet: a frame of its own for this address, named when it is.
            let id = self.frames.provisional(FrameInfo {
                name: unnamed_kernel(addr).into(),
                module: Arc::from("[kernel.kallsyms]"),
                kind: FrameKind::Kernel,
            });
            self.kernel_pending.push((id, addr));
            id
        };
        self.kernel_names.insert(addr, f);
        f
    }

    fn join_kernel_symbols(&mut self) {
        if self.kernel.is_some() {
            return;
        }
        let symbols = match self.kernel_loading.take() {
            Some(handle) => handle.join().ok().flatten(),
            None => self
                .kernel_symbol_files
                .load(&*self.unwinder.locator.source, &self.kernel_starts),
        };
        self.kernel = Some(symbols);
    }

    fn kernel_name(&self, addr: Avma) -> (String, Arc<str>) {
        match self
            .kernel
            .as_ref()
            .and_then(|k| k.as_ref()?.lookup(addr.0))
        {
            Some((name, None)) => (name.to_string(), Arc::from("[kernel.kallsyms]")),
            Some((name, Some(m))) => (name.to_string(), Arc::from(format!("[{m}]"))),
            None => (unnamed_kernel(addr), Arc::from("[kernel.kallsyms]")),
        }
    }

    /// Gives every frame its final name. Kernel frames resolved before the kernel symbols
    /// were read carry a provisional `[kernel]+0xADDR` name until this is called; different
    /// addresses of one function keep different [`FrameRef`]s with the same name, so callers
    /// that merge stacks must merge by name.
    pub fn finish_names(&mut self) {
        self.join_kernel_symbols();
        for (id, addr) in std::mem::take(&mut self.kernel_pending) {
            let (name, module) = self.kernel_name(addr);
            self.frames.rename(id, name, module);
        }
    }
}

/// The name of a kernel address no symbol names: the address itself, since kernel addresses
/// have no file offset to show.
fn unnamed_kernel(addr: Avma) -> String {
    format!("[kernel]+{:#x}", addr.0)
}

/// An image `perf inject --jit` wrote for JIT-compiled code (`jitted-PID-N.so`, by its short
/// module name): its frames are JIT frames, as inferno's perf collapser annotates them.
fn jitted_image(module: &str) -> bool {
    module.starts_with("jitted-") && module.ends_with(".so")
}
