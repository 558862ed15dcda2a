//! The kernel's BTF (/sys/kernel/btf/vmlinux), read for what the typed
//! raw tracepoint programs need: the byte offsets of a few struct members
//! (`bio.bi_iter.bi_sector`, `request.cmd_flags`, ...), enumerator values
//! (`REQ_OP_WRITE`, `__REQ_PREFLUSH`) and the type ids of the tracepoints'
//! `btf_trace_*` typedefs, which a program names when it is loaded. The
//! format is include/uapi/linux/btf.h's: a header, then the type section
//! (each `struct btf_type` followed by data of its kind) and the string
//! section. Pure and total: any bytes give a `Btf` or an error, never a
//! panic, and no count read from the bytes sizes an allocation unchecked
//! (fuzz target `btf`).

/// BTF_MAGIC, in the machine's byte order.
const MAGIC: u16 = 0xeb9f;
/// The largest vmlinux BTF read (a distribution kernel's is 5-6 MiB).
pub const MAX_BYTES: u64 = 64 << 20;

// BTF_KIND_*.
const INT: u32 = 1;
const PTR: u32 = 2;
const ARRAY: u32 = 3;
const STRUCT: u32 = 4;
const UNION: u32 = 5;
const ENUM: u32 = 6;
const FWD: u32 = 7;
const TYPEDEF: u32 = 8;
const VOLATILE: u32 = 9;
const CONST: u32 = 10;
const RESTRICT: u32 = 11;
const FUNC: u32 = 12;
const FUNC_PROTO: u32 = 13;
const VAR: u32 = 14;
const DATASEC: u32 = 15;
const FLOAT: u32 = 16;
const DECL_TAG: u32 = 17;
const TYPE_TAG: u32 = 18;
const ENUM64: u32 = 19;

/// Why the bytes are not BTF this reader can use.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BtfError {
    #[error("not BTF (magic {0:#06x})")]
    Magic(u16),
    #[error("the header or a section lies outside the {0} bytes")]
    Bounds(usize),
    #[error("type {id} is cut short")]
    Cut { id: usize },
    #[error("type {id} has unknown kind {kind}")]
    Kind { id: usize, kind: u32 },
}

/// One type: its kind, name, `size_or_type` and where its kind's data is.
#[derive(Clone, Copy, Debug)]
struct Type {
    kind: u32,
    name_off: u32,
    vlen: u32,
    kind_flag: bool,
    size_or_type: u32,
    /// Offset of the data after `struct btf_type`, in the type section.
    data: usize,
}

/// A parsed BTF blob.
#[derive(Debug)]
pub struct Btf {
    types: Vec<Type>,
    type_data: Vec<u8>,
    strings: Vec<u8>,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// The bytes of kind data that follow a type of `kind` with `vlen` items.
fn data_len(kind: u32, vlen: u32) -> Option<usize> {
    let v = vlen as usize;
    Some(match kind {
        INT | VAR | DECL_TAG => 4,
        PTR | FWD | TYPEDEF | VOLATILE | CONST | RESTRICT | FUNC | FLOAT | TYPE_TAG => 0,
        ARRAY => 12,
        STRUCT | UNION | DATASEC | ENUM64 => 12 * v,
        ENUM | FUNC_PROTO => 8 * v,
        _ => return None,
    })
}

/// A struct member: its byte offset within the outermost struct and
/// its size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    pub offset: usize,
    pub size: usize,
}

impl Btf {
    /// Parse a BTF blob (`/sys/kernel/btf/vmlinux`).
    pub fn parse(b: &[u8]) -> Result<Btf, BtfError> {
        let bounds = BtfError::Bounds(b.len());
        let magic = u16_at(b, 0).ok_or(bounds.clone())?;
        if magic != MAGIC {
            return Err(BtfError::Magic(magic));
        }
        let field = |at| u32_at(b, at).map(|v| v as usize).ok_or(bounds.clone());
        let (hdr_len, type_off, type_len, str_off, str_len) =
            (field(4)?, field(8)?, field(12)?, field(16)?, field(20)?);
        let section = |off: usize, len: usize| {
            let start = hdr_len.checked_add(off)?;
            b.get(start..start.checked_add(len)?)
        };
        let type_data = section(type_off, type_len).ok_or(bounds.clone())?;
        let strings = section(str_off, str_len).ok_or(bounds)?;
        let mut types = Vec::new();
        let mut at = 0;
        while at < type_data.len() {
            let id = types.len() + 1;
            let cut = BtfError::Cut { id };
            let (name_off, info, size_or_type) = (
                u32_at(type_data, at).ok_or(cut.clone())?,
                u32_at(type_data, at + 4).ok_or(cut.clone())?,
                u32_at(type_data, at + 8).ok_or(cut.clone())?,
            );
            let (kind, vlen) = ((info >> 24) & 0x1f, info & 0xffff);
            let len = data_len(kind, vlen).ok_or(BtfError::Kind { id, kind })?;
            let data = at + 12;
            if data + len > type_data.len() {
                return Err(cut);
            }
            types.push(Type {
                kind,
                name_off,
                vlen,
                kind_flag: info >> 31 == 1,
                size_or_type,
                data,
            });
            at = data + len;
        }
        Ok(Btf {
            types,
            type_data: type_data.to_vec(),
            strings: strings.to_vec(),
        })
    }

    fn name(&self, off: u32) -> &[u8] {
        let rest = self.strings.get(off as usize..).unwrap_or(&[]);
        let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        &rest[..end]
    }

    fn ty(&self, id: u32) -> Option<&Type> {
        self.types.get((id as usize).checked_sub(1)?)
    }

    fn word(&self, at: usize) -> u32 {
        u32_at(&self.type_data, at).unwrap_or(0)
    }

    /// The id of the type of `kind` named `name`.
    fn find(&self, kind: u32, name: &str) -> Option<u32> {
        self.types
            .iter()
            .position(|t| t.kind == kind && self.name(t.name_off) == name.as_bytes())
            .map(|i| i as u32 + 1)
    }

    /// The id of the typedef `name` (`btf_trace_block_rq_issue`).
    pub fn typedef(&self, name: &str) -> Option<u32> {
        self.find(TYPEDEF, name)
    }

    /// `id` with typedefs and qualifiers taken off (a bounded chain).
    fn resolve(&self, mut id: u32) -> Option<&Type> {
        for _ in 0..32 {
            let t = self.ty(id)?;
            match t.kind {
                TYPEDEF | VOLATILE | CONST | RESTRICT | TYPE_TAG => id = t.size_or_type,
                _ => return Some(t),
            }
        }
        None
    }

    /// The size in bytes of the type `id` (a pointer's is 8).
    fn size_of(&self, id: u32) -> Option<usize> {
        let t = self.resolve(id)?;
        match t.kind {
            PTR => Some(8),
            INT | ENUM | STRUCT | UNION | FLOAT | ENUM64 => Some(t.size_or_type as usize),
            _ => None,
        }
    }

    /// The member `name` of the struct or union `t`, looked for in its
    /// anonymous members too: (its offset in bytes from `t`, its type).
    fn member_of(&self, t: &Type, name: &[u8], depth: usize) -> Option<(usize, u32)> {
        if depth > 8 || !matches!(t.kind, STRUCT | UNION) {
            return None;
        }
        for i in 0..t.vlen as usize {
            let at = t.data + 12 * i;
            let (name_off, ty, off) = (self.word(at), self.word(at + 4), self.word(at + 8));
            let bits = if t.kind_flag { off & 0x00ff_ffff } else { off };
            if bits % 8 != 0 || (t.kind_flag && off >> 24 != 0) {
                continue; // a bitfield: not what is read here
            }
            let here = bits as usize / 8;
            let member_name = self.name(name_off);
            if member_name == name {
                return Some((here, ty));
            }
            if member_name.is_empty() {
                if let Some(inner) = self.resolve(ty) {
                    if let Some((o, ty)) = self.member_of(inner, name, depth + 1) {
                        return Some((here + o, ty));
                    }
                }
            }
        }
        None
    }

    /// The member at `path` of `struct NAME` (`["bi_iter", "bi_sector"]`):
    /// its offset from the struct's start and its size.
    pub fn member(&self, strukt: &str, path: &[&str]) -> Option<Member> {
        let mut t = self.ty(self.find(STRUCT, strukt)?)?;
        let mut offset = 0;
        let mut ty = 0;
        for (i, part) in path.iter().enumerate() {
            let (o, next) = self.member_of(t, part.as_bytes(), 0)?;
            offset += o;
            ty = next;
            if i + 1 < path.len() {
                t = self.resolve(next)?;
            }
        }
        Some(Member {
            offset,
            size: self.size_of(ty)?,
        })
    }

    /// The value of the enumerator `name`, in any enum.
    pub fn enumerator(&self, name: &str) -> Option<i64> {
        for t in self
            .types
            .iter()
            .filter(|t| t.kind == ENUM || t.kind == ENUM64)
        {
            let step = if t.kind == ENUM { 8 } else { 12 };
            for i in 0..t.vlen as usize {
                let at = t.data + step * i;
                if self.name(self.word(at)) != name.as_bytes() {
                    continue;
                }
                let lo = self.word(at + 4);
                return Some(if t.kind == ENUM {
                    lo as i32 as i64
                } else {
                    (u64::from(self.word(at + 8)) << 32 | u64::from(lo)) as i64
                });
            }
        }
        None
    }
}

/// The running kernel's BTF, when /sys/kernel/btf/vmlinux exists.
pub fn vmlinux() -> Result<Btf, String> {
    use std::io::Read;
    let path = "/sys/kernel/btf/vmlinux";
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_BYTES).read_to_end(&mut bytes))
        .map_err(|e| format!("{path}: {e}"))?;
    Btf::parse(&bytes).map_err(|e| format!("{path}: {e}"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small BTF blob, as the kernel writes one: `int` (4 bytes),
    /// `struct bvec_iter { u64 bi_sector; u32 bi_size; }`,
    /// `struct bio { void *bi_next; struct bvec_iter bi_iter; union {
    /// u32 bi_opf; }; }` (the union anonymous), a pointer, a typedef
    /// `btf_trace_block_bio_queue` and `enum req_op { REQ_OP_WRITE = 1 }`.
    pub(crate) fn blob() -> Vec<u8> {
        let mut strings = vec![0u8];
        let mut name = |s: &str| {
            let off = strings.len() as u32;
            strings.extend_from_slice(s.as_bytes());
            strings.push(0);
            off
        };
        let names: Vec<u32> = [
            "int",
            "u64",
            "bvec_iter",
            "bi_sector",
            "bi_size",
            "bio",
            "bi_next",
            "bi_iter",
            "bi_opf",
            "btf_trace_block_bio_queue",
            "req_op",
            "REQ_OP_WRITE",
        ]
        .iter()
        .map(|s| name(s))
        .collect();
        let mut t = Vec::new();
        let head = |t: &mut Vec<u8>, name: u32, kind: u32, vlen: u32, size: u32| {
            for w in [name, kind << 24 | vlen, size] {
                t.extend_from_slice(&w.to_ne_bytes());
            }
        };
        let words = |t: &mut Vec<u8>, w: &[u32]| {
            for v in w {
                t.extend_from_slice(&v.to_ne_bytes());
            }
        };
        head(&mut t, names[0], INT, 0, 4); // 1: int
        words(&mut t, &[32]);
        head(&mut t, names[1], INT, 0, 8); // 2: u64
        words(&mut t, &[64]);
        head(&mut t, names[2], STRUCT, 2, 16); // 3: struct bvec_iter
        words(&mut t, &[names[3], 2, 0, names[4], 1, 64]);
        head(&mut t, 0, UNION, 1, 4); // 4: union { int bi_opf; }
        words(&mut t, &[names[8], 1, 0]);
        head(&mut t, names[5], STRUCT, 3, 32); // 5: struct bio
        words(&mut t, &[names[6], 6, 0, names[7], 3, 64, 0, 4, 192]);
        head(&mut t, 0, PTR, 0, 0); // 6: void *
        head(&mut t, names[9], TYPEDEF, 0, 6); // 7: typedef
        head(&mut t, names[10], ENUM, 1, 4); // 8: enum req_op
        words(&mut t, &[names[11], 1]);
        let mut b = Vec::new();
        b.extend_from_slice(&MAGIC.to_ne_bytes());
        b.extend_from_slice(&[1, 0]); // version, flags
        for w in [
            24u32,
            0,
            t.len() as u32,
            t.len() as u32,
            strings.len() as u32,
        ] {
            b.extend_from_slice(&w.to_ne_bytes());
        }
        b.extend_from_slice(&t);
        b.extend_from_slice(&strings);
        b
    }

    #[test]
    fn members_enumerators_and_typedefs() {
        let btf = Btf::parse(&blob()).unwrap();
        assert_eq!(
            btf.member("bio", &["bi_iter", "bi_sector"]),
            Some(Member { offset: 8, size: 8 })
        );
        assert_eq!(
            btf.member("bio", &["bi_iter", "bi_size"]),
            Some(Member {
                offset: 16,
                size: 4
            })
        );
        assert_eq!(
            btf.member("bio", &["bi_opf"]),
            Some(Member {
                offset: 24,
                size: 4
            }),
            "found in an anonymous union"
        );
        assert_eq!(
            btf.member("bio", &["bi_next"]),
            Some(Member { offset: 0, size: 8 })
        );
        assert_eq!(btf.member("bio", &["nosuch"]), None);
        assert_eq!(btf.member("request", &["q"]), None);
        assert_eq!(btf.typedef("btf_trace_block_bio_queue"), Some(7));
        assert_eq!(btf.enumerator("REQ_OP_WRITE"), Some(1));
        assert_eq!(btf.enumerator("REQ_OP_READ"), None);
    }

    #[test]
    fn bad_blobs_are_errors() {
        let b = blob();
        assert_eq!(Btf::parse(&[]).unwrap_err(), BtfError::Bounds(0));
        assert!(matches!(Btf::parse(&b[..30]), Err(BtfError::Bounds(_))));
        let mut wrong = b.clone();
        wrong[0] ^= 1;
        assert!(matches!(Btf::parse(&wrong), Err(BtfError::Magic(_))));
        let mut kind = b.clone();
        kind[24 + 7] = 30; // the first type's kind byte
        assert!(matches!(
            Btf::parse(&kind),
            Err(BtfError::Kind { id: 1, .. })
        ));
        for cut in 0..b.len() {
            let _ = Btf::parse(&b[..cut]);
        }
    }
}
