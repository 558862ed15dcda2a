//! A small eBPF assembler: the instructions the block programs need, with
//! forward and backward labels. Encodings after
//! include/uapi/linux/bpf_common.h and bpf.h (struct bpf_insn:
//! opcode, dst_reg in the low nibble, src_reg in the high one, a 16-bit
//! offset and a 32-bit immediate).

/// A register, r0 (return value) to r10 (frame pointer, read-only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reg(pub u8);

pub const R0: Reg = Reg(0);
pub const R1: Reg = Reg(1);
pub const R2: Reg = Reg(2);
pub const R3: Reg = Reg(3);
pub const R4: Reg = Reg(4);
pub const R5: Reg = Reg(5);
pub const R6: Reg = Reg(6);
pub const R7: Reg = Reg(7);
pub const R8: Reg = Reg(8);
pub const R9: Reg = Reg(9);
pub const FP: Reg = Reg(10);

/// struct bpf_insn, as the kernel reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub code: u8,
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

/// Memory access widths (BPF_B, BPF_W, BPF_DW; the programs read no
/// 16-bit field).
#[derive(Clone, Copy, Debug)]
pub enum Size {
    B,
    W,
    DW,
}

impl Size {
    fn bits(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::B => 0x10,
            Size::DW => 0x18,
        }
    }
}

/// 64-bit ALU operations (BPF_ALU64 class).
#[derive(Clone, Copy, Debug)]
pub enum Alu {
    Add = 0x00,
    Sub = 0x10,
    Mul = 0x20,
    Div = 0x30,
    Or = 0x40,
    And = 0x50,
    Lsh = 0x60,
    Rsh = 0x70,
    Neg = 0x80,
    Mod = 0x90,
    Xor = 0xa0,
    Mov = 0xb0,
}

/// Conditional jumps (BPF_JMP class), unsigned comparisons (the programs
/// use no strict > or <).
#[derive(Clone, Copy, Debug)]
pub enum Jmp {
    Eq = 0x10,
    Ge = 0x30,
    Ne = 0x50,
    Le = 0xb0,
}

const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
const MEM: u8 = 0x60;
/// BPF_ATOMIC mode (Linux 5.12; include/uapi/linux/bpf.h).
const ATOMIC: u8 = 0xc0;
/// BPF_FETCH | BPF_XCHG and BPF_FETCH | BPF_CMPXCHG: fully ordered.
const XCHG: i32 = 0xe1;
const CMPXCHG: i32 = 0xf1;
const IMM: u8 = 0x00;
const K: u8 = 0x00;
const X: u8 = 0x08;
const JA: u8 = 0x00;
const CALL: u8 = 0x80;
const EXIT: u8 = 0x90;
/// src_reg of a 64-bit immediate load that names a map by its fd.
const PSEUDO_MAP_FD: u8 = 1;

/// A place in the program a jump goes to.
#[derive(Clone, Copy, Debug)]
pub struct Label(usize);

/// Why a program could not be assembled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AsmError {
    #[error("label {0} is never placed")]
    Unbound(usize),
    #[error("a jump of {0} instructions does not fit")]
    TooFar(i64),
}

#[derive(Default)]
pub struct Asm {
    code: Vec<Insn>,
    targets: Vec<Option<usize>>,
    jumps: Vec<(usize, Label)>,
}

fn regs(dst: Reg, src: Reg) -> u8 {
    (dst.0 & 0x0f) | (src.0 << 4)
}

impl Asm {
    pub fn new() -> Asm {
        Asm::default()
    }

    fn push(&mut self, code: u8, dst: Reg, src: Reg, off: i16, imm: i32) {
        self.code.push(Insn {
            code,
            regs: regs(dst, src),
            off,
            imm,
        });
    }

    pub fn label(&mut self) -> Label {
        self.targets.push(None);
        Label(self.targets.len() - 1)
    }

    /// The next instruction is where `l` jumps to.
    pub fn bind(&mut self, l: Label) {
        self.targets[l.0] = Some(self.code.len());
    }

    pub fn mov(&mut self, dst: Reg, src: Reg) {
        self.alu(Alu::Mov, dst, src);
    }

    pub fn mov_imm(&mut self, dst: Reg, imm: i32) {
        self.alu_imm(Alu::Mov, dst, imm);
    }

    pub fn alu(&mut self, op: Alu, dst: Reg, src: Reg) {
        self.push(ALU64 | X | op as u8, dst, src, 0, 0);
    }

    pub fn alu_imm(&mut self, op: Alu, dst: Reg, imm: i32) {
        self.push(ALU64 | K | op as u8, dst, R0, 0, imm);
    }

    /// dst = *(size *)(base + off)
    pub fn load(&mut self, size: Size, dst: Reg, base: Reg, off: i16) {
        self.push(LDX | MEM | size.bits(), dst, base, off, 0);
    }

    /// *(size *)(base + off) = src
    pub fn store(&mut self, size: Size, base: Reg, off: i16, src: Reg) {
        self.push(STX | MEM | size.bits(), base, src, off, 0);
    }

    /// *(size *)(base + off) = imm
    pub fn store_imm(&mut self, size: Size, base: Reg, off: i16, imm: i32) {
        self.push(ST | MEM | size.bits(), base, R0, off, imm);
    }

    /// r0 = atomic compare-and-exchange of the u64 at (base + off): if
    /// it equals r0 it becomes src; r0 is what it was.
    pub fn cmpxchg(&mut self, base: Reg, off: i16, src: Reg) {
        self.push(STX | ATOMIC | Size::DW.bits(), base, src, off, CMPXCHG);
    }

    /// src = atomic exchange of the u64 at (base + off) with src.
    pub fn xchg(&mut self, base: Reg, off: i16, src: Reg) {
        self.push(STX | ATOMIC | Size::DW.bits(), base, src, off, XCHG);
    }

    /// dst = the map whose fd is `fd` (a two-slot 64-bit load).
    pub fn map(&mut self, dst: Reg, fd: i32) {
        self.push(LD | IMM | Size::DW.bits(), dst, Reg(PSEUDO_MAP_FD), 0, fd);
        self.push(0, R0, R0, 0, 0);
    }

    /// if dst OP imm goto l
    pub fn jump_imm(&mut self, op: Jmp, dst: Reg, imm: i32, l: Label) {
        self.jumps.push((self.code.len(), l));
        self.push(JMP | K | op as u8, dst, R0, 0, imm);
    }

    /// if dst OP src goto l
    pub fn jump_reg(&mut self, op: Jmp, dst: Reg, src: Reg, l: Label) {
        self.jumps.push((self.code.len(), l));
        self.push(JMP | X | op as u8, dst, src, 0, 0);
    }

    pub fn goto(&mut self, l: Label) {
        self.jumps.push((self.code.len(), l));
        self.push(JMP | JA, R0, R0, 0, 0);
    }

    pub fn call(&mut self, helper: i32) {
        self.push(JMP | CALL, R0, R0, 0, helper);
    }

    pub fn exit(&mut self) {
        self.push(JMP | EXIT, R0, R0, 0, 0);
    }

    /// The instructions, every jump resolved (relative to the next one).
    pub fn finish(mut self) -> Result<Vec<Insn>, AsmError> {
        for &(at, l) in &self.jumps {
            let target = self.targets[l.0].ok_or(AsmError::Unbound(l.0))?;
            let rel = target as i64 - at as i64 - 1;
            self.code[at].off = i16::try_from(rel).map_err(|_| AsmError::TooFar(rel))?;
        }
        Ok(self.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_the_kernel_headers() {
        let mut a = Asm::new();
        let out = a.label();
        a.load(Size::W, R1, R6, 8); // 0x61: BPF_LDX | BPF_MEM | BPF_W
        a.store_imm(Size::DW, FP, -8, 1); // 0x7a
        a.alu_imm(Alu::Add, R1, 1); // 0x07
        a.jump_imm(Jmp::Eq, R0, 0, out); // 0x15
        a.map(R1, 5);
        a.call(1);
        a.bind(out);
        a.mov_imm(R0, 0); // 0xb7
        a.exit(); // 0x95
        let code = a.finish().unwrap();
        let ops: Vec<u8> = code.iter().map(|i| i.code).collect();
        assert_eq!(ops, [0x61, 0x7a, 0x07, 0x15, 0x18, 0x00, 0x85, 0xb7, 0x95]);
        assert_eq!(code[0].regs, 0x61, "dst r1 low, src r6 high");
        assert_eq!(code[3].off, 3, "over the two-slot map load and the call");
        assert_eq!((code[4].regs, code[4].imm), (0x11, 5));
    }

    #[test]
    fn atomics_encode_like_the_kernel_headers() {
        let mut a = Asm::new();
        a.cmpxchg(R2, 0, R3); // BPF_STX | BPF_DW | BPF_ATOMIC, BPF_CMPXCHG | BPF_FETCH
        a.xchg(R0, 8, R1);
        let code = a.finish().unwrap();
        assert_eq!(
            (code[0].code, code[0].regs, code[0].imm),
            (0xdb, 0x32, 0xf1)
        );
        assert_eq!((code[1].code, code[1].off, code[1].imm), (0xdb, 8, 0xe1));
    }

    #[test]
    fn an_unplaced_label_is_an_error() {
        let mut a = Asm::new();
        let l = a.label();
        a.goto(l);
        assert_eq!(a.finish(), Err(AsmError::Unbound(0)));
    }
}
