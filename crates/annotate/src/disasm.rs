//! Instruction text: x86-64 (`iced-x86`, AT&T syntax) and AArch64 (`yaxpeax-arm`, its text
//! with PC-relative targets made absolute, as objdump prints them).

/// The instruction sets annotate disassembles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    X86_64,
    Aarch64,
}

impl Isa {
    /// The recording's architecture (perf's HEADER_ARCH, `uname -m`); a file without one is
    /// taken for x86-64, as before architectures were told apart.
    pub(crate) fn of(arch: Option<&str>) -> Option<Isa> {
        match arch {
            None | Some("x86_64" | "amd64") => Some(Isa::X86_64),
            Some("aarch64" | "arm64") => Some(Isa::Aarch64),
            Some(_) => None,
        }
    }
}

/// The instructions of little-endian AArch64 `bytes` at ELF address `start`: yaxpeax-arm's
/// text, with its PC-relative operands (`$+0x88`) written as the absolute address objdump
/// prints (`adrp`'s counted from the instruction's 4 KiB page). A word that decodes to no
/// instruction is `.inst 0xWORD`, as objdump writes it.
pub(crate) fn disassemble_aarch64(start: u64, bytes: &[u8]) -> Vec<(u64, String)> {
    use yaxpeax_arch::{Decoder, U8Reader};
    use yaxpeax_arm::armv8::a64::{InstDecoder, Opcode, Operand};
    let decoder = InstDecoder::default();
    let mut out = Vec::new();
    for (k, word) in bytes.chunks_exact(4).enumerate() {
        let address = start + 4 * k as u64;
        let text = match decoder.decode(&mut U8Reader::new(word)) {
            Ok(instruction) => {
                let mut text = instruction.to_string();
                for operand in &instruction.operands {
                    let &Operand::PCOffset(offset) = operand else {
                        continue;
                    };
                    let base = match instruction.opcode {
                        Opcode::ADRP => address & !0xfff,
                        _ => address,
                    };
                    let shown = match offset < 0 {
                        true => format!("$-{:#x}", offset.unsigned_abs()),
                        false => format!("$+{offset:#x}"),
                    };
                    let target = base.wrapping_add_signed(offset);
                    text = text.replacen(&shown, &format!("{target:#x}"), 1);
                }
                text
            }
            Err(_) => {
                let word = u32::from_le_bytes(word.try_into().expect("4 bytes"));
                format!(".inst {word:#010x}")
            }
        };
        out.push((address, text));
    }
    out
}

/// The instructions of `bytes` at ELF address `start`, in AT&T syntax.
pub(crate) fn disassemble(start: u64, bytes: &[u8]) -> Vec<(u64, String)> {
    use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter};
    let mut decoder = Decoder::with_ip(64, bytes, start, DecoderOptions::NONE);
    let mut formatter = GasFormatter::new();
    // Closer to objdump's AT&T text, which perf annotate shows: lower-case hex, branch
    // targets without leading zeros.
    formatter.options_mut().set_uppercase_hex(false);
    formatter.options_mut().set_branch_leading_zeros(false);
    let mut out = Vec::new();
    while decoder.can_decode() {
        let instruction = decoder.decode();
        let mut text = String::new();
        formatter.format(&instruction, &mut text);
        out.push((instruction.ip(), text));
    }
    out
}
