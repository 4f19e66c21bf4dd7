//! Unwinding user stacks with framehop from a sample's registers and stack copy.

use cpiflame_perf_data::abi::x86_64_regs;
use cpiflame_perf_data::Sample;
use foldhash::HashMap;
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{FrameAddress, Unwinder as _};

use super::{Unwinder, MAX_FRAMES};
use crate::address::{Avma, StackFrame, Svma};
use crate::image::Image;
use crate::process::{is_anonymous, Process};

/// The word at `addr` of a stack copy that starts at `sp`, and the end of the bytes it took
/// (for [`Unwinder::user_stack_extent`]); `Err` when the copy does not hold it.
fn stack_word(bytes: &[u8], sp: u64, addr: u64) -> Result<(u64, usize), ()> {
    let off = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
    let end = off.checked_add(8).ok_or(())?;
    let word = bytes.get(off..end).ok_or(())?;
    Ok((u64::from_le_bytes(word.try_into().map_err(|_| ())?), end))
}

/// Whether the stack ends at a frame whose address to look up is `lookup`: the address lies
/// in a module that has unwind tables, none of their entries covers it, and it is not in a
/// function that has no entry at all. There framehop would go on by a guess that nothing
/// checks (the word at the stack pointer as the return address of a leaf, frame pointers
/// above it), and where a function's unwind info ends early on purpose the guess is wrong:
/// glibc ends `__clone`'s and `__clone3`'s before the syscall, and after it the new thread's
/// stack holds the function it is about to call (`__clone`) or nothing of the kind
/// (`__clone3`), read as a caller that never called. perf ends these stacks there too, on both
/// sides of the syscall. Code that no unwind info describes at all (a module without tables,
/// JIT code, a function compiled without CFI, by the module's symbol table) keeps framehop's
/// frame pointers: they are all the information there is. `memo` keeps the answer per
/// image and address.
pub(super) fn ends_stack(
    process: Option<&Process>,
    images: &[Image],
    memo: &mut HashMap<(usize, Svma), bool>,
    lookup: Avma,
) -> bool {
    let Some(mapping) = process.and_then(|p| p.mapping_at(lookup)) else {
        return false;
    };
    let Some(i) = mapping.image else {
        return false;
    };
    let svma = mapping.svma(lookup);
    *memo.entry((i, svma)).or_insert_with(|| {
        let image = &images[i];
        match image.cfi_covers(svma) {
            None | Some(true) => false,
            // A function no entry touches was compiled without unwind info; one that an
            // entry covers in part (or no sized symbol at all) was left uncovered on purpose.
            Some(false) => image
                .function_at(svma)
                .is_none_or(|function| image.cfi_overlaps(function) != Some(false)),
        }
    })
}

/// What a walk reads the frames of a process with: its mappings and unwinder (`None` for a
/// process never seen), and the resolver's images they refer to.
#[derive(Clone, Copy)]
struct Tables<'a> {
    process: Option<&'a Process>,
    images: &'a [Image],
}

/// How a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WalkEnd {
    /// At the stack's end (a return address of 0, or unwind info saying there is no caller).
    Done,
    /// On an error: a word the stack copy does not hold, or a rule that cannot be applied.
    Error,
    /// At a frame no unwind tables of its module cover ([`ends_stack`]).
    Uncovered,
    /// At [`MAX_FRAMES`].
    TooDeep,
}

/// framehop's cache of unwind rules, several times over: one cache holds 509 addresses (one
/// per slot of `address % 509`), and a large program's stacks go through tens of thousands
/// (rustc's: 14,000), so that most frames parsed their `.eh_frame` entry again. The cache
/// of an address is chosen by the address's next digits (`address / 509`), so that addresses
/// of one slot spread over the caches. The rules are the same as with one cache.
pub(crate) struct RuleCaches(Box<[CacheX86_64]>);

impl RuleCaches {
    const COUNT: u64 = 8;

    pub(crate) fn new() -> RuleCaches {
        RuleCaches((0..Self::COUNT).map(|_| CacheX86_64::new()).collect())
    }

    /// The cache for frames at `address`.
    fn of(&mut self, address: FrameAddress) -> &mut CacheX86_64 {
        let i = (address.address_for_lookup() / 509) % Self::COUNT;
        &mut self.0[i as usize]
    }

    /// One cache, for a walk that takes a single one for all its frames.
    fn first(&mut self) -> &mut CacheX86_64 {
        &mut self.0[0]
    }
}

/// Unwinds from `regs` over `stack`, a stack copy starting at the stack pointer, pushing each
/// frame to `out` (after what it holds), innermost first. No I/O: the stack and
/// the unwind tables are bytes at hand.
fn walk(
    tables: Tables<'_>,
    memo: &mut HashMap<(usize, Svma), bool>,
    caches: &mut RuleCaches,
    regs: UnwindRegsX86_64,
    stack: &[u8],
    out: &mut Vec<StackFrame>,
) -> WalkEnd {
    let sp = regs.sp();
    let mut read_stack = |addr: u64| stack_word(stack, sp, addr).map(|(word, _)| word);
    let empty = UnwinderX86_64::new();
    let unwinder = tables.process.map_or(&empty, |p| &p.unwinder);
    let start = out.len();
    let mut regs = regs;
    let mut address = FrameAddress::InstructionPointer(regs.ip());
    // framehop's own loop (`iter_frames`), with one step of its own: a frame in JIT code
    // that no unwind table covers.
    loop {
        let frame = stack_frame(address);
        out.push(frame);
        let lookup = frame.lookup();
        if out.len() - start >= MAX_FRAMES {
            return WalkEnd::TooDeep;
        }
        if ends_stack(tables.process, tables.images, memo, lookup) {
            return WalkEnd::Uncovered;
        }
        let next = match tables.process.filter(|p| bare_jit(p, lookup)) {
            Some(process) => jit_caller(tables, process, caches, &mut regs, &mut read_stack)
                .ok_or(framehop::Error::CouldNotReadStack(regs.sp())),
            None => unwinder.unwind_frame(address, &mut regs, caches.of(address), &mut read_stack),
        };
        match next {
            Ok(Some(ra)) => match FrameAddress::from_return_address(ra) {
                Some(a) => address = a,
                None => return WalkEnd::Error,
            },
            Ok(None) => return WalkEnd::Done,
            Err(_) => return WalkEnd::Error,
        }
    }
}

/// Whether `lookup` is in JIT code that no unwind table covers: anonymous executable memory,
/// or a dump's function without a table. There framehop would take the frame-pointer chain
/// on trust; [`jit_caller`] checks it, and looks further when it does not hold.
fn bare_jit(process: &Process, lookup: Avma) -> bool {
    if !process.may_run_jit_code() {
        return false;
    }
    if let Some(placed) = process.jit.function_at(lookup.0) {
        return placed.function.unwind.is_none();
    }
    process
        .mapping_at(lookup)
        .is_some_and(|m| m.image.is_none() && is_anonymous(&m.path))
}

/// Words of stack [`jit_caller`] looks through for a return address.
const JIT_SCAN_WORDS: u64 = 64;

/// The caller of a frame in JIT code without an unwind table, `regs` updated to its frame:
/// the frame-pointer rule when the frame keeps one (V8's frames, HotSpot's with
/// `-XX:+PreserveFramePointer`) and the word it gives is a return address (right after a
/// call, in code of the process); else the first word above the stack pointer that is
/// such a return address and from which the stack unwinds one frame further (CPython's
/// `-X perf` trampolines keep no frame pointer: `sub $8,%rsp; call *%rcx`). A word that
/// follows a direct call is taken only when the call leads into JIT code: a stale return
/// address left on the stack by an earlier call of a file's function is no caller of this
/// frame. `None` when neither finds one.
fn jit_caller(
    tables: Tables<'_>,
    process: &Process,
    caches: &mut RuleCaches,
    regs: &mut UnwindRegsX86_64,
    read_stack: &mut impl FnMut(u64) -> Result<u64, ()>,
) -> Option<Option<u64>> {
    let (sp, bp) = (regs.sp(), regs.bp());
    // The frame-pointer rule, checked.
    let caller_sp = bp
        .checked_add(16)
        .filter(|_| bp >= sp && bp - sp < (1 << 20));
    if let Some(caller_sp) = caller_sp {
        if let (Ok(ra), Ok(caller_bp)) = (read_stack(bp + 8), read_stack(bp)) {
            if returns_after_call(tables, process, ra, false) {
                regs.set_sp(caller_sp);
                regs.set_bp(caller_bp);
                return Some(Some(ra));
            }
        }
    }
    for i in 0..JIT_SCAN_WORDS {
        let slot = sp.checked_add(i * 8)?;
        let above = slot.checked_add(8)?;
        let Ok(ra) = read_stack(slot) else {
            break;
        };
        if !returns_after_call(tables, process, ra, true) {
            continue;
        }
        let caller = UnwindRegsX86_64::new(ra, above, bp);
        let Some(address) = FrameAddress::from_return_address(ra) else {
            continue;
        };
        let holds = match process.unwinder.unwind_frame(
            address,
            &mut caller.clone(),
            caches.of(address),
            read_stack,
        ) {
            Ok(None) => true,
            Ok(Some(next)) => process.mapping_at(Avma(next.wrapping_sub(1))).is_some(),
            Err(_) => false,
        };
        if holds {
            *regs = caller;
            return Some(Some(ra));
        }
    }
    None
}

/// Whether `ra` is a return address of process code: the instruction before it a call.
/// In a file's code, a direct call counts only when `scanning` finds it leading into JIT
/// code (see [`jit_caller`]). JIT code whose bytes are unknown (a perf map's) counts on
/// the frame-pointer rule's word, never on a scanned one.
fn returns_after_call(tables: Tables<'_>, process: &Process, ra: u64, scanning: bool) -> bool {
    let lookup = Avma(ra.wrapping_sub(1));
    if let Some(placed) = process.jit.function_at(lookup.0) {
        let function = &placed.function;
        let end = (ra - function.addr) as usize;
        return function
            .code
            .get(end.saturating_sub(8)..end)
            .and_then(call_before_end)
            .is_some();
    }
    let Some(mapping) = process.mapping_at(lookup) else {
        return false;
    };
    let Some(image) = mapping.image else {
        return !scanning && is_anonymous(&mapping.path);
    };
    let svma = mapping.svma(Avma(ra)).0;
    let Some(code) = tables.images[image].code_bytes(svma.saturating_sub(8)..svma) else {
        return false;
    };
    match call_before_end(code) {
        Some(Call::Indirect) => true,
        Some(Call::Direct(offset)) => {
            !scanning || {
                let target = Avma(ra.wrapping_add(offset as u64));
                process.jit.function_at(target.0).is_some()
                    || process
                        .mapping_at(target)
                        .is_some_and(|m| m.image.is_none() && is_anonymous(&m.path))
            }
        }
        None => false,
    }
}

/// An x86-64 call instruction that ends where `code` ends.
#[derive(Debug, PartialEq, Eq)]
enum Call {
    /// `call rel32`, with its displacement from the return address.
    Direct(i32),
    /// `call r/m64`: through a register or memory.
    Indirect,
}

/// The call instruction `code` ends with, if any: `E8 rel32`, or `FF /2` with its ModRM,
/// SIB and displacement making up exactly the bytes before the end (a REX prefix allowed).
fn call_before_end(code: &[u8]) -> Option<Call> {
    let n = code.len();
    if n >= 5 && code[n - 5] == 0xE8 {
        let rel = i32::from_le_bytes(code[n - 4..].try_into().ok()?);
        return Some(Call::Direct(rel));
    }
    // `FF /2` is 2 to 7 bytes: opcode, ModRM, maybe SIB, maybe a displacement.
    for len in 2..=7usize.min(n) {
        let at = n - len;
        if code[at] != 0xFF {
            continue;
        }
        let modrm = code[at + 1];
        if (modrm >> 3) & 7 != 2 {
            continue;
        }
        let (mode, rm) = (modrm >> 6, modrm & 7);
        let sib = mode != 3 && rm == 4;
        let base_is_disp32 = sib && mode == 0 && code.get(at + 2).is_some_and(|b| b & 7 == 5);
        let disp = match mode {
            0 if rm == 5 || base_is_disp32 => 4,
            1 => 1,
            2 => 4,
            _ => 0,
        };
        if 2 + usize::from(sib) + disp == len {
            return Some(Call::Indirect);
        }
    }
    None
}

/// framehop's frame address as this crate's: the same address and kind, so the same address
/// to look up.
fn stack_frame(f: FrameAddress) -> StackFrame {
    match f {
        FrameAddress::InstructionPointer(a) => StackFrame::Instruction(Avma(a)),
        FrameAddress::ReturnAddress(a) => StackFrame::ReturnAddress(Avma(a.get())),
    }
}

/// Unwinds between releases of the unwind tables' pages: each lookup maps in the pages
/// around an entry, and the thousands of functions a large program's profile hits would leave
/// megabytes of a large library's `.eh_frame` resident.
const UNWINDS_BETWEEN_RELEASES: u32 = 2048;

impl Unwinder {
    /// Unwinds the user stack of `sample` onto `out`, innermost first, when the sample has
    /// registers and a stack copy this unwinder can unwind. Returns whether it had them: then
    /// the unwind decides the user frames (none when the registers lack the instruction,
    /// stack or frame pointer), else the recorded call chain or LBR stack does
    /// ([`Resolver::resolve_unwound`](super::Resolver::resolve_unwound)).
    pub fn unwind_user_stack(&mut self, sample: &Sample<'_>, out: &mut Vec<StackFrame>) -> bool {
        let pid = sample.pid.unwrap_or(-1);
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
        self.advance_jit(pid, sample.time);
        self.stats.dwarf_unwound += 1;
        self.unwinds_since_release += 1;
        if self.unwinds_since_release >= UNWINDS_BETWEEN_RELEASES {
            self.unwinds_since_release = 0;
            self.images.iter().for_each(Image::release_unwind_pages);
        }
        let tables = Tables {
            process: self.processes.get(&pid),
            images: &self.images,
        };
        let end = walk(
            tables,
            &mut self.stack_ends_at,
            &mut self.caches,
            UnwindRegsX86_64::new(ip, sp, bp),
            stack.used(),
            out,
        );
        match end {
            WalkEnd::Error => self.stats.unwind_stopped_early += 1,
            WalkEnd::Uncovered => self.stats.unwind_ended_uncovered += 1,
            WalkEnd::Done | WalkEnd::TooDeep => {}
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
            self.caches.first(),
            &mut read_stack,
        );
        for _ in 0..MAX_FRAMES {
            match frames.next() {
                Ok(Some(frame)) if known(frame.address_for_lookup()) => {
                    let lookup = Avma(frame.address_for_lookup());
                    if ends_stack(Some(process), &self.images, &mut self.stack_ends_at, lookup) {
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use object::{Object, ObjectSymbol};

    use super::*;
    use crate::address::{FileMapping, FileOffset};
    use crate::process::Mapping;

    /// A wrapper shaped like glibc's `__clone`: its unwind info ends before the "syscall";
    /// the code after it, up to `thread_start`, is covered by none (`after_syscall`);
    /// `thread_start` says there is no caller (`cfi_undefined rip`). `thread_fn` stands for
    /// the function the new thread calls, whose address glibc leaves at the new stack's top.
    /// `no_cfi_fn` is a function compiled without unwind info, with a frame pointer.
    const CLONE_LIKE: &str = "
        .text
        .globl wrapper, after_syscall, thread_start, thread_fn
        .type wrapper, @function
    wrapper:
        .cfi_startproc
        nop
        nop
        .cfi_endproc
    after_syscall:
        nop
        nop
    thread_start:
        .cfi_startproc
        .cfi_undefined rip
        nop
        ret
        .cfi_endproc
        .size wrapper, .-wrapper
        .p2align 4
        .type thread_fn, @function
    thread_fn:
        .cfi_startproc
        nop
        ret
        .cfi_endproc
        .size thread_fn, .-thread_fn
        .p2align 4
        .globl no_cfi_fn
        .type no_cfi_fn, @function
    no_cfi_fn:
        push %rbp
        mov %rsp, %rbp
        nop
        pop %rbp
        ret
        .size no_cfi_fn, .-no_cfi_fn
        .section .note.GNU-stack,\"\",@progbits
    ";

    /// The same code without any unwind info.
    const NO_CFI: &str = "
        .text
        .globl wrapper
    wrapper:
        nop
        ret
        .section .note.GNU-stack,\"\",@progbits
    ";

    /// Assembles `source` into a shared object `name` in `dir` with `cc` and `extra` flags.
    fn assemble(dir: &Path, name: &str, source: &str, extra: &[&str]) -> Option<Image> {
        std::fs::create_dir_all(dir).unwrap();
        let asm = dir.join(format!("{name}.s"));
        std::fs::write(&asm, source).unwrap();
        let out = dir.join(name);
        let status = Command::new("cc")
            .args(["-shared", "-nostdlib", "-o"])
            .arg(&out)
            .arg(&asm)
            .args(extra)
            .status();
        match status {
            Ok(s) => assert!(s.success(), "cc failed on {}", asm.display()),
            Err(e) => {
                cpiflame_testkit::unavailable(format!("cc: {e}"));
                return None;
            }
        }
        Some(Image::open(&out).expect("open the assembled object"))
    }

    fn symbol(image: &Image, name: &str) -> Svma {
        let file = object::File::parse(image.bytes()).unwrap();
        let symbol = file.symbols().find(|s| s.name() == Ok(name)).unwrap();
        Svma(symbol.address())
    }

    /// A process with `image` mapped whole at `start`, as the resolver maps it.
    fn process_with(image: &Image, start: u64) -> (Process, Avma) {
        let file = FileMapping {
            start: Avma(start),
            pgoff: FileOffset(0),
            len: (image.bytes().len() as u64).next_multiple_of(4096),
        };
        let base = image.base_of(&file);
        let module = image.framehop_module("clone_like".into(), start..file.end().0, base.0);
        let mut process = Process::default();
        process.map(
            Mapping {
                file,
                base,
                image: Some(0),
                image_error: None,
                path: "/clone_like".into(),
                module: "clone_like".into(),
            },
            Some(module),
        );
        (process, base)
    }

    fn stack_of(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn an_address_no_unwind_entry_covers_ends_the_stack_on_both_sides_of_clone() {
        let dir = std::env::temp_dir().join(format!("cpiflame-clone-like-{}", std::process::id()));
        // With `.eh_frame_hdr` (the linker's default) and without it (`.eh_frame` searched).
        for (name, extra) in [
            ("with_hdr.so", &[][..]),
            ("without_hdr.so", &["-Wl,--no-eh-frame-hdr"][..]),
        ] {
            let Some(image) = assemble(&dir, name, CLONE_LIKE, extra) else {
                return;
            };
            let images = std::slice::from_ref(&image);
            let (wrapper, after, thread_start, thread_fn) = (
                symbol(&image, "wrapper"),
                symbol(&image, "after_syscall"),
                symbol(&image, "thread_start"),
                symbol(&image, "thread_fn"),
            );
            assert_eq!(image.cfi_covers(wrapper), Some(true), "{name}");
            assert_eq!(image.cfi_covers(after), Some(false), "{name}");
            assert_eq!(image.cfi_covers(Svma(after.0 + 1)), Some(false), "{name}");
            assert_eq!(image.cfi_covers(thread_start), Some(true), "{name}");
            assert_eq!(image.cfi_covers(thread_fn), Some(true), "{name}");
            // Again, from the entries found above: an entry covers its own range only.
            for (svma, covered) in [(after, false), (Svma(wrapper.0 + 1), true), (after, false)] {
                assert_eq!(image.cfi_covers(svma), Some(covered), "{name} {svma:?}");
                let table = image.cfi_overlaps(svma.0..svma.0 + 1);
                assert_eq!(table, Some(covered), "{name}: the table at {svma:?}");
            }

            let (process, base) = process_with(&image, 0x7f00_0000_0000);
            let tables = Tables {
                process: Some(&process),
                images,
            };
            let at = |svma: Svma| svma.to_avma(base);
            let sp = 0x7ffd_0000_0000;
            let walk_from = |ip: Avma, stack: &[u64]| {
                let mut out = Vec::new();
                let end = walk(
                    tables,
                    &mut HashMap::default(),
                    &mut RuleCaches::new(),
                    UnwindRegsX86_64::new(ip.0, sp, 0),
                    &stack_of(stack),
                    &mut out,
                );
                (out, end)
            };

            // The new thread after the syscall: its stack holds the function to call (and its
            // argument). framehop alone takes that for a return address, a caller that never
            // called; the walk ends at the wrapper.
            let child_stack = [at(thread_fn).0, 0x1234];
            let child_bytes = stack_of(&child_stack);
            let mut read = |addr: u64| stack_word(&child_bytes, sp, addr).map(|w| w.0);
            let mut cache = CacheX86_64::new();
            let mut guessed = process.unwinder.iter_frames(
                at(after).0,
                UnwindRegsX86_64::new(at(after).0, sp, 0),
                &mut cache,
                &mut read,
            );
            let _leaf = guessed.next();
            let guess = guessed.next().ok().flatten().map(|f| f.address());
            assert_eq!(guess, Some(at(thread_fn).0), "{name}: framehop's guess");
            let (frames, end) = walk_from(at(after), &child_stack);
            assert_eq!(
                frames,
                vec![StackFrame::Instruction(at(after))],
                "{name}: child"
            );
            assert_eq!(end, WalkEnd::Uncovered, "{name}: child");

            // The parent after the syscall: the word at its stack pointer is its caller's
            // return address, but nothing says so; it ends there too, as perf ends it.
            let caller = Avma(0x5555_0000_1234);
            let (frames, end) = walk_from(at(after), &[caller.0, 0]);
            assert_eq!(
                frames,
                vec![StackFrame::Instruction(at(after))],
                "{name}: parent"
            );
            assert_eq!(end, WalkEnd::Uncovered, "{name}: parent");

            // Before the syscall the wrapper's own entry covers it: the caller follows (here
            // thread_fn's `ret`, whose caller's return address is 0: the stack's end).
            let ret_in_thread_fn = Avma(at(thread_fn).0 + 1);
            let (frames, end) = walk_from(at(wrapper), &[ret_in_thread_fn.0, 0, 0]);
            let addresses: Vec<Avma> = frames.iter().map(|f| f.address()).collect();
            assert_eq!(addresses, vec![at(wrapper), ret_in_thread_fn], "{name}");
            assert_eq!(end, WalkEnd::Done, "{name}");

            // Where the thread starts running, `thread_start` says there is no caller.
            let (frames, end) = walk_from(at(thread_start), &[0x1234, 0]);
            assert_eq!(
                frames,
                vec![StackFrame::Instruction(at(thread_start))],
                "{name}"
            );
            assert_eq!(end, WalkEnd::Done, "{name}");

            // A function no entry touches keeps framehop's frame pointers; the wrapper, which
            // its entry covers in part, does not.
            let mut memo = HashMap::default();
            let no_cfi_fn = symbol(&image, "no_cfi_fn");
            let inside = Svma(no_cfi_fn.0 + 4);
            assert_eq!(image.cfi_covers(inside), Some(false), "{name}");
            assert_eq!(
                image.function_at(inside),
                Some(no_cfi_fn.0..no_cfi_fn.0 + 7)
            );
            assert!(!ends_stack(Some(&process), images, &mut memo, at(inside)));
            let wrapper_fn = image.function_at(after).expect("wrapper's symbol");
            assert_eq!(wrapper_fn.start, wrapper.0, "{name}");
            assert_eq!(image.cfi_overlaps(wrapper_fn), Some(true), "{name}");
            assert!(ends_stack(Some(&process), images, &mut memo, at(after)));

            // Addresses outside every mapping are not this rule's business.
            assert!(!ends_stack(Some(&process), images, &mut memo, Avma(0x1000)));
            assert!(!ends_stack(None, images, &mut memo, at(after)));
        }

        // A module without unwind tables keeps framehop's frame pointers.
        let Some(bare) = assemble(&dir, "no_cfi.so", NO_CFI, &[]) else {
            return;
        };
        let wrapper = symbol(&bare, "wrapper");
        assert_eq!(bare.cfi_covers(wrapper), None);
        let (process, base) = process_with(&bare, 0x7f00_0000_0000);
        let images = std::slice::from_ref(&bare);
        let mut memo = HashMap::default();
        assert!(!ends_stack(
            Some(&process),
            images,
            &mut memo,
            wrapper.to_avma(base)
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
