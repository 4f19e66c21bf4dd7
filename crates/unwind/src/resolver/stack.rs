//! Unwinding user stacks with framehop from a sample's registers and stack copy.

use cpiflame_perf_data::abi::x86_64_regs;
use cpiflame_perf_data::Sample;
use foldhash::HashMap;
use framehop::x86_64::{UnwindRegsX86_64, UnwinderX86_64};
use framehop::Unwinder;

use super::{Resolver, MAX_FRAMES};
use crate::address::{Avma, Svma};
use crate::image::Image;
use crate::process::Process;

/// The word at `addr` of a stack copy that starts at `sp`, and the end of the bytes it took
/// (for [`Resolver::user_stack_extent`]); `Err` when the copy does not hold it.
fn stack_word(bytes: &[u8], sp: u64, addr: u64) -> Result<(u64, usize), ()> {
    let off = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
    let end = off.checked_add(8).ok_or(())?;
    let word = bytes.get(off..end).ok_or(())?;
    Ok((u64::from_le_bytes(word.try_into().map_err(|_| ())?), end))
}

/// Whether the stack ends at a frame whose address to look up is `lookup`: the address lies
/// in a module that has unwind tables, and none of their entries covers it. framehop would
/// go on by a guess that nothing checks (the word at the stack pointer as the return address
/// of a leaf, frame pointers above it), and where glibc leaves such a gap on purpose the guess
/// is wrong: after `__clone`'s syscall the new thread's stack holds the function it is about
/// to call, read as a caller that never called. perf ends these stacks there too. Modules
/// without any unwind tables (JIT code, anonymous memory) keep framehop's frame pointers.
/// `memo` keeps the answer per image and address.
pub(super) fn ends_stack(
    process: Option<&Process>,
    images: &[Image],
    memo: &mut HashMap<(usize, Svma), bool>,
    lookup: Avma,
) -> bool {
    let Some(mapping) = process.and_then(|p| p.mapping_at(lookup)) else {
        return false;
    };
    let Some(image) = mapping.image else {
        return false;
    };
    let svma = mapping.svma(lookup);
    let covered = *memo
        .entry((image, svma))
        .or_insert_with(|| images[image].cfi_covers(svma).unwrap_or(true));
    !covered
}

/// Unwinds between releases of the unwind tables' pages: each lookup maps in the pages
/// around an entry, and the thousands of functions a large program's profile hits would leave
/// megabytes of a large library's `.eh_frame` resident.
const UNWINDS_BETWEEN_RELEASES: u32 = 2048;

impl Resolver {
    /// Unwinds the user stack of `sample` (of process `pid`) into `self.addrs`, when the
    /// sample has registers and a stack copy this resolver can unwind. Returns whether it
    /// had them: then the unwind decides the user frames (none when the registers lack the
    /// instruction, stack or frame pointer), else the recorded call chain does.
    pub(super) fn unwind_user(&mut self, pid: i32, sample: &Sample<'_>) -> bool {
        let (Some(regs), Some(stack)) = (sample.user_regs, sample.user_stack) else {
            return false;
        };
        if !self.unwinds_x86_64 {
            return false;
        }
        let (Some(ip), Some(sp), Some(bp)) = (
            regs.get(x86_64_regs::IP),
            regs.get(x86_64_regs::SP),
            regs.get(x86_64_regs::BP),
        ) else {
            return true;
        };
        self.stats.dwarf_unwound += 1;
        self.unwinds_since_release += 1;
        if self.unwinds_since_release >= UNWINDS_BETWEEN_RELEASES {
            self.unwinds_since_release = 0;
            self.images.iter().for_each(Image::release_unwind_pages);
        }
        let bytes = stack.used();
        let mut read_stack = |addr: u64| stack_word(bytes, sp, addr).map(|(word, _)| word);
        let empty = UnwinderX86_64::new();
        let process = self.processes.get(&pid);
        let unwinder = match process {
            Some(p) => &p.unwinder,
            None => &empty,
        };
        let mut frames = unwinder.iter_frames(
            ip,
            UnwindRegsX86_64::new(ip, sp, bp),
            &mut self.cache,
            &mut read_stack,
        );
        loop {
            match frames.next() {
                Ok(Some(f)) => {
                    self.addrs
                        .push((Avma(f.address()), Avma(f.address_for_lookup())));
                    if self.addrs.len() >= MAX_FRAMES {
                        break;
                    }
                    let lookup = Avma(f.address_for_lookup());
                    if ends_stack(process, &self.images, &mut self.cfi_covered, lookup) {
                        self.stats.unwind_ended_uncovered += 1;
                        break;
                    }
                }
                Ok(None) => break,
                Err(_) => {
                    self.stats.unwind_stopped_early += 1;
                    break;
                }
            }
        }
        true
    }

    /// How many bytes of the sample's user stack copy the unwinder reads, and a word more for
    /// perf, when it unwinds to the stack's end without an error; `None` when the sample has
    /// no stack copy, or the unwind stopped early or ended at an address no unwind tables
    /// cover (then the whole copy is worth keeping for a better unwinder). Unwinding the
    /// kept bytes again later reads the same addresses and gives the same frames.
    pub fn user_stack_extent(&mut self, sample: &Sample<'_>) -> Option<usize> {
        let (regs, stack) = (sample.user_regs?, sample.user_stack?);
        if !self.unwinds_x86_64 {
            return None;
        }
        let ip = regs.get(x86_64_regs::IP)?;
        let sp = regs.get(x86_64_regs::SP)?;
        let bp = regs.get(x86_64_regs::BP)?;
        let bytes = stack.used();
        let mut extent = 0usize;
        let mut read_stack = |addr: u64| {
            let (word, end) = stack_word(bytes, sp, addr)?;
            extent = extent.max(end);
            Ok(word)
        };
        // Only a process whose mappings are known, and only frames inside them: an address
        // outside every known module means the unwinder was guessing (frame pointers), and
        // a guess may stop early without reading the stack it would need later.
        let process = self.processes.get(&sample.pid.unwrap_or(-1))?;
        let known = |addr: u64| {
            process
                .mapping_at(Avma(addr))
                .is_some_and(|m| m.image.is_some())
        };
        let mut frames = process.unwinder.iter_frames(
            ip,
            UnwindRegsX86_64::new(ip, sp, bp),
            &mut self.cache,
            &mut read_stack,
        );
        for _ in 0..MAX_FRAMES {
            match frames.next() {
                Ok(Some(frame)) if known(frame.address_for_lookup()) => {
                    let lookup = Avma(frame.address_for_lookup());
                    if ends_stack(Some(process), &self.images, &mut self.cfi_covered, lookup) {
                        return None;
                    }
                }
                Ok(Some(_)) | Err(_) => return None,
                // One word more than was read: perf's libunwind reader (`access_mem` in
                // util/unwind-libunwind-local.c) takes no word that ends at the copy's end
                // (`addr + 8 >= end`), and without it `perf script` ends every trimmed
                // stack with `[unknown]` in place of its outermost frame.
                Ok(None) => return Some(extent + 8),
            }
        }
        None
    }
}
