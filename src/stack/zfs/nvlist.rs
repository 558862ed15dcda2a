//! XDR-encoded name-value lists, the form ZFS keeps a vdev label's
//! configuration in (OpenZFS `module/nvpair/nvpair.c`: `nvlist_common`,
//! `nvs_xdr_nvlist`, `nvs_xdr_nvpair`, `nvs_xdr_nvp_op`,
//! `nvs_embedded_nvl_array`; the type numbers are `data_type_t` in
//! `include/sys/nvpair.h`).
//!
//! The stream: a 4-byte header (encoding 1 = XDR, the writer's endianness,
//! two reserved bytes), then the list: `i32` version (0), `u32` flags, the
//! pairs, and two zero words. A pair: `i32` encoded size (of the whole
//! pair, these two words included), `i32` decoded size (0 ends the list),
//! the name as an XDR string, `i32` type, `i32` element count, the value.
//! XDR is big-endian whatever the writer's endianness, every item padded
//! to 4 bytes; 8-bit and 16-bit values take a whole word; numeric arrays
//! carry their count again; byte arrays and string arrays do not; an
//! embedded list is the list form above without the header, a list array
//! that many lists in a row.
//!
//! Decoding never panics and never allocates by a count it read: every
//! count is checked against the bytes left before anything is read, and
//! nesting is bounded ([`MAX_DEPTH`]). Errors name the byte offset.

use crate::bytes::{be_u32, be_u64, ParseError};

/// Deepest nesting of lists decoded (OpenZFS's kernel stops at 20,
/// `nvpair_max_recursion`; a vdev label nests four or five deep).
pub const MAX_DEPTH: usize = 16;

/// `NV_ENCODE_XDR`.
const ENCODE_XDR: u8 = 1;
/// `NV_VERSION`.
const NV_VERSION: u32 = 0;

// `data_type_t`.
const BOOLEAN: u32 = 1;
const BYTE: u32 = 2;
const INT16: u32 = 3;
const UINT16: u32 = 4;
const INT32: u32 = 5;
const UINT32: u32 = 6;
const INT64: u32 = 7;
const UINT64: u32 = 8;
const STRING: u32 = 9;
const BYTE_ARRAY: u32 = 10;
const INT16_ARRAY: u32 = 11;
const UINT16_ARRAY: u32 = 12;
const INT32_ARRAY: u32 = 13;
const UINT32_ARRAY: u32 = 14;
const INT64_ARRAY: u32 = 15;
const UINT64_ARRAY: u32 = 16;
const STRING_ARRAY: u32 = 17;
const HRTIME: u32 = 18;
const NVLIST: u32 = 19;
const NVLIST_ARRAY: u32 = 20;
const BOOLEAN_VALUE: u32 = 21;
const INT8: u32 = 22;
const UINT8: u32 = 23;
const BOOLEAN_ARRAY: u32 = 24;
const INT8_ARRAY: u32 = 25;
const UINT8_ARRAY: u32 = 26;
const DOUBLE: u32 = 27;

/// One value. Signed and unsigned integers of every width are kept in
/// 64 bits, as they were written.
#[derive(Clone, Debug, PartialEq)]
pub enum NvValue {
    /// `DATA_TYPE_BOOLEAN`: the name alone (a feature in
    /// `features_for_read`).
    Flag,
    Bool(bool),
    Unsigned(u64),
    Signed(i64),
    /// `DATA_TYPE_DOUBLE`, kept as its bits.
    Double(u64),
    Str(String),
    Bytes(Vec<u8>),
    Unsigneds(Vec<u64>),
    Signeds(Vec<i64>),
    Strs(Vec<String>),
    List(NvList),
    Lists(Vec<NvList>),
}

/// A decoded list, its pairs in stream order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NvList {
    pub flags: u32,
    pub pairs: Vec<(String, NvValue)>,
}

impl NvList {
    /// The first value named `name`.
    pub fn get(&self, name: &str) -> Option<&NvValue> {
        self.pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// An unsigned or non-negative signed integer named `name`.
    pub fn u64(&self, name: &str) -> Option<u64> {
        match self.get(name)? {
            NvValue::Unsigned(x) => Some(*x),
            NvValue::Signed(x) => u64::try_from(*x).ok(),
            _ => None,
        }
    }

    pub fn str(&self, name: &str) -> Option<&str> {
        match self.get(name)? {
            NvValue::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn list(&self, name: &str) -> Option<&NvList> {
        match self.get(name)? {
            NvValue::List(l) => Some(l),
            _ => None,
        }
    }

    pub fn lists(&self, name: &str) -> Option<&[NvList]> {
        match self.get(name)? {
            NvValue::Lists(l) => Some(l),
            _ => None,
        }
    }
}

/// Decode the XDR stream `buf` (header included), which starts at byte
/// `base` of the device (for the offsets in errors). Bytes after the end
/// of the list are ignored, as libnvpair does.
pub fn decode(buf: &[u8], layer: &'static str, base: u64) -> Result<NvList, ParseError> {
    let mut d = Decoder {
        buf,
        pos: 0,
        layer,
        base,
    };
    let header = <[u8; 4]>::try_from(d.take(4, "the nvlist header")?).unwrap_or_default();
    if header[0] != ENCODE_XDR {
        return Err(d.err_at(
            0,
            format!("nvlist encoding {} where XDR (1) was expected", header[0]),
        ));
    }
    if header[1] > 1 {
        return Err(d.err_at(1, format!("nvlist endianness byte {}", header[1])));
    }
    d.list(0)
}

struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    layer: &'static str,
    base: u64,
}

/// The smallest an element can be in the stream, for checking counts
/// against the bytes left: a word; an embedded list takes four (version,
/// flags, the two end words).
const MIN_LIST: usize = 16;

impl Decoder<'_> {
    fn err_at(&self, pos: usize, m: impl Into<String>) -> ParseError {
        ParseError::new(self.layer, self.base.saturating_add(pos as u64), m)
    }

    fn left(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], ParseError> {
        if n > self.left() {
            return Err(self.err_at(
                self.pos,
                format!("{what} needs {n} bytes but only {} are left", self.left()),
            ));
        }
        let at = self.pos;
        self.pos += n;
        Ok(&self.buf[at..at + n])
    }

    fn u32(&mut self, what: &str) -> Result<u32, ParseError> {
        Ok(be_u32(self.take(4, what)?, 0))
    }

    fn u64(&mut self, what: &str) -> Result<u64, ParseError> {
        Ok(be_u64(self.take(8, what)?, 0))
    }

    /// `n` bytes padded to a whole word.
    fn padded(&mut self, n: usize, what: &str) -> Result<&[u8], ParseError> {
        let words = n.div_ceil(4).saturating_mul(4);
        Ok(&self.take(words, what)?[..n])
    }

    /// An XDR string: its length, its bytes, padding.
    fn string(&mut self, what: &str) -> Result<String, ParseError> {
        let at = self.pos;
        let len = self.u32(what)? as usize;
        if len > self.left() {
            return Err(self.err_at(
                at,
                format!(
                    "{what} claims {len} bytes but only {} are left",
                    self.left()
                ),
            ));
        }
        let b = self.padded(len, what)?;
        Ok(String::from_utf8_lossy(b).into_owned())
    }

    /// Refuse a count that cannot fit in the bytes left, before anything
    /// is read or allocated by it.
    fn check_count(&self, at: usize, n: u32, each: usize, what: &str) -> Result<usize, ParseError> {
        let n = n as usize;
        if n.checked_mul(each).is_none_or(|b| b > self.left()) {
            return Err(self.err_at(
                at,
                format!(
                    "{what} claims {n} elements of at least {each} bytes but only {} bytes are left",
                    self.left()
                ),
            ));
        }
        Ok(n)
    }

    /// An embedded list: version, flags, pairs, end.
    fn list(&mut self, depth: usize) -> Result<NvList, ParseError> {
        let at = self.pos;
        if depth > MAX_DEPTH {
            return Err(self.err_at(at, format!("nvlists nested deeper than {MAX_DEPTH}")));
        }
        let version = self.u32("the nvlist version")?;
        if version != NV_VERSION {
            return Err(self.err_at(at, format!("nvlist version {version}, not 0")));
        }
        let flags = self.u32("the nvlist flags")?;
        let mut pairs = Vec::new();
        loop {
            let start = self.pos;
            let encoded = self.u32("an nvpair's encoded size")? as usize;
            let decoded = self.u32("an nvpair's decoded size")?;
            if decoded == 0 {
                break;
            }
            // The encoded size covers the whole pair: the two sizes, the
            // name, type and count words (six words at least).
            if encoded < 24 || encoded > self.left() + 8 {
                return Err(self.err_at(
                    start,
                    format!(
                        "an nvpair claims {encoded} encoded bytes but {} are left",
                        self.left() + 8
                    ),
                ));
            }
            let name = self.string("an nvpair's name")?;
            let type_at = self.pos;
            let ty = self.u32("an nvpair's type")?;
            let nelem = self.u32("an nvpair's element count")?;
            let value = self.value(ty, nelem, type_at, depth).map_err(|mut e| {
                e.message = format!("nvpair '{name}': {}", e.message);
                e
            })?;
            let value = match value {
                Some(v) => v,
                // A type this reader does not know: skip it by its size.
                None => {
                    let end = start + encoded;
                    if end < self.pos {
                        return Err(self.err_at(
                            start,
                            format!("nvpair '{name}' of unknown type {ty} is {encoded} bytes, shorter than its own header"),
                        ));
                    }
                    self.pos = end;
                    continue;
                }
            };
            pairs.push((name, value));
        }
        Ok(NvList { flags, pairs })
    }

    /// The value of a pair of type `ty` with `nelem` elements; None for a
    /// type not known here.
    fn value(
        &mut self,
        ty: u32,
        nelem: u32,
        at: usize,
        depth: usize,
    ) -> Result<Option<NvValue>, ParseError> {
        let one = |d: &Self| {
            if nelem == 1 {
                Ok(())
            } else {
                Err(d.err_at(at, format!("type {ty} with {nelem} elements, not 1")))
            }
        };
        let v = match ty {
            BOOLEAN => {
                if nelem != 0 {
                    return Err(self.err_at(at, format!("a flag with {nelem} elements, not 0")));
                }
                NvValue::Flag
            }
            BOOLEAN_VALUE => {
                one(self)?;
                NvValue::Bool(self.u32("a boolean")? != 0)
            }
            BYTE | UINT8 | UINT16 | UINT32 => {
                one(self)?;
                NvValue::Unsigned(u64::from(self.u32("an integer")?))
            }
            INT8 | INT16 | INT32 => {
                one(self)?;
                NvValue::Signed(i64::from(self.u32("an integer")? as i32))
            }
            UINT64 | HRTIME => {
                one(self)?;
                NvValue::Unsigned(self.u64("an integer")?)
            }
            INT64 => {
                one(self)?;
                NvValue::Signed(self.u64("an integer")? as i64)
            }
            DOUBLE => {
                one(self)?;
                NvValue::Double(self.u64("a double")?)
            }
            STRING => {
                one(self)?;
                NvValue::Str(self.string("a string")?)
            }
            BYTE_ARRAY => {
                let n = self.check_count(at, nelem, 1, "a byte array")?;
                NvValue::Bytes(self.padded(n, "a byte array")?.to_vec())
            }
            BOOLEAN_ARRAY | INT8_ARRAY | UINT8_ARRAY | INT16_ARRAY | UINT16_ARRAY | INT32_ARRAY
            | UINT32_ARRAY | INT64_ARRAY | UINT64_ARRAY => {
                let wide = matches!(ty, INT64_ARRAY | UINT64_ARRAY);
                let signed = matches!(ty, INT8_ARRAY | INT16_ARRAY | INT32_ARRAY | INT64_ARRAY);
                let count_at = self.pos;
                let count = self.u32("an array's count")?;
                if count != nelem {
                    return Err(self.err_at(
                        count_at,
                        format!("an array of {nelem} elements counts {count}"),
                    ));
                }
                let n = self.check_count(count_at, count, if wide { 8 } else { 4 }, "an array")?;
                let mut xs = Vec::with_capacity(n);
                for _ in 0..n {
                    xs.push(if wide {
                        self.u64("an array element")?
                    } else {
                        u64::from(self.u32("an array element")?)
                    });
                }
                if signed {
                    // A narrow signed element is sign-extended from its word.
                    let wide_or_word = |x: u64| {
                        if wide {
                            x as i64
                        } else {
                            i64::from(x as u32 as i32)
                        }
                    };
                    NvValue::Signeds(xs.into_iter().map(wide_or_word).collect())
                } else {
                    NvValue::Unsigneds(xs)
                }
            }
            STRING_ARRAY => {
                let n = self.check_count(at, nelem, 4, "a string array")?;
                let mut xs = Vec::with_capacity(n);
                for _ in 0..n {
                    xs.push(self.string("a string array element")?);
                }
                NvValue::Strs(xs)
            }
            NVLIST => {
                one(self)?;
                NvValue::List(self.list(depth + 1)?)
            }
            NVLIST_ARRAY => {
                let n = self.check_count(at, nelem, MIN_LIST, "an nvlist array")?;
                let mut xs = Vec::new();
                for _ in 0..n {
                    xs.push(self.list(depth + 1)?);
                }
                NvValue::Lists(xs)
            }
            _ => return Ok(None),
        };
        Ok(Some(v))
    }
}

/// Writes XDR nvlists, for tests and fuzzing: the synthetic labels that
/// stand in where no tool at hand writes one (OpenZFS's pool version 5000
/// with `features_for_read`), and the lying counts of the bad-input tests.
#[derive(Default)]
pub struct Encoder {
    out: Vec<u8>,
}

impl Encoder {
    /// A stream: the XDR header (little-endian writer), then `list`.
    pub fn stream(list: &NvList) -> Vec<u8> {
        let mut e = Encoder::default();
        e.out.extend_from_slice(&[ENCODE_XDR, 1, 0, 0]);
        e.list(list);
        e.out
    }

    fn word(&mut self, x: u32) {
        self.out.extend_from_slice(&x.to_be_bytes());
    }

    fn string(&mut self, s: &str) {
        self.word(s.len() as u32);
        self.out.extend_from_slice(s.as_bytes());
        self.pad();
    }

    fn pad(&mut self) {
        while self.out.len() % 4 != 0 {
            self.out.push(0);
        }
    }

    fn list(&mut self, l: &NvList) {
        self.word(NV_VERSION);
        self.word(l.flags);
        for (name, v) in &l.pairs {
            let start = self.out.len();
            self.word(0); // encoded size, set below
            self.word(0); // decoded size, set below
            self.string(name);
            let (ty, nelem) = match v {
                NvValue::Flag => (BOOLEAN, 0),
                NvValue::Bool(_) => (BOOLEAN_VALUE, 1),
                NvValue::Unsigned(_) => (UINT64, 1),
                NvValue::Signed(_) => (INT64, 1),
                NvValue::Double(_) => (DOUBLE, 1),
                NvValue::Str(_) => (STRING, 1),
                NvValue::Bytes(b) => (BYTE_ARRAY, b.len()),
                NvValue::Unsigneds(x) => (UINT64_ARRAY, x.len()),
                NvValue::Signeds(x) => (INT64_ARRAY, x.len()),
                NvValue::Strs(x) => (STRING_ARRAY, x.len()),
                NvValue::List(_) => (NVLIST, 1),
                NvValue::Lists(x) => (NVLIST_ARRAY, x.len()),
            };
            self.word(ty);
            self.word(nelem as u32);
            match v {
                NvValue::Flag => {}
                NvValue::Bool(b) => self.word(u32::from(*b)),
                NvValue::Unsigned(x) | NvValue::Double(x) => {
                    self.out.extend_from_slice(&x.to_be_bytes())
                }
                NvValue::Signed(x) => self.out.extend_from_slice(&x.to_be_bytes()),
                NvValue::Str(s) => self.string(s),
                NvValue::Bytes(b) => {
                    self.out.extend_from_slice(b);
                    self.pad();
                }
                NvValue::Unsigneds(xs) => {
                    self.word(xs.len() as u32);
                    for x in xs {
                        self.out.extend_from_slice(&x.to_be_bytes());
                    }
                }
                NvValue::Signeds(xs) => {
                    self.word(xs.len() as u32);
                    for x in xs {
                        self.out.extend_from_slice(&x.to_be_bytes());
                    }
                }
                NvValue::Strs(xs) => xs.iter().for_each(|s| self.string(s)),
                NvValue::List(l) => self.list(l),
                NvValue::Lists(ls) => ls.iter().for_each(|l| self.list(l)),
            }
            let encoded = (self.out.len() - start) as u32;
            self.out[start..start + 4].copy_from_slice(&encoded.to_be_bytes());
            // libnvpair writes the size of its in-memory pair here; any
            // non-zero size reads back the same.
            self.out[start + 4..start + 8].copy_from_slice(&encoded.to_be_bytes());
        }
        self.word(0);
        self.word(0);
    }
}

/// Build a list from pairs (tests, fuzzing).
pub fn nvlist<const N: usize>(pairs: [(&str, NvValue); N]) -> NvList {
    NvList {
        flags: 1,
        pairs: pairs.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> NvList {
        nvlist([
            ("version", NvValue::Unsigned(5000)),
            ("name", NvValue::Str("tank".into())),
            ("flag", NvValue::Flag),
            ("b", NvValue::Bool(true)),
            ("neg", NvValue::Signed(-3)),
            ("bytes", NvValue::Bytes(vec![1, 2, 3, 4, 5])),
            ("us", NvValue::Unsigneds(vec![1, u64::MAX])),
            ("ss", NvValue::Signeds(vec![-1, 2])),
            (
                "strs",
                NvValue::Strs(vec!["a".into(), "".into(), "xyz12".into()]),
            ),
            ("d", NvValue::Double(0x4000_0000_0000_0000)),
            (
                "tree",
                NvValue::List(nvlist([(
                    "children",
                    NvValue::Lists(vec![nvlist([("id", NvValue::Unsigned(0))]), nvlist([])]),
                )])),
            ),
        ])
    }

    #[test]
    fn what_is_encoded_decodes_the_same() {
        let s = Encoder::stream(&sample());
        assert_eq!(decode(&s, "t", 0).unwrap(), sample());
        // Trailing bytes (the rest of vdev_phys) are ignored.
        let mut long = s.clone();
        long.extend_from_slice(&[0xee; 100]);
        assert_eq!(decode(&long, "t", 0).unwrap(), sample());
    }

    #[test]
    fn every_prefix_is_an_error_not_a_panic() {
        let s = Encoder::stream(&sample());
        for n in 0..s.len() - 8 {
            assert!(decode(&s[..n], "t", 0).is_err(), "prefix {n}");
        }
    }

    /// A string whose length lies, an array whose count lies, an nvlist
    /// array claiming 2^32 - 1 lists: errors at the lying word, before any
    /// allocation by the count.
    #[test]
    fn lying_counts_are_refused_at_their_byte() {
        let s = Encoder::stream(&nvlist([("name", NvValue::Str("tank".into()))]));
        // header 4, version 4, flags 4, sizes 8, name len at 20.
        let mut b = s.clone();
        b[20..24].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = decode(&b, "t", 1000).unwrap_err();
        assert_eq!(e.offset, 1020, "{e}");
        assert!(e.message.contains("4294967295"), "{e}");

        let s = Encoder::stream(&nvlist([("us", NvValue::Unsigneds(vec![7, 8]))]));
        // name "us" (4 + 4), type at 28, nelem at 32, count at 36.
        let mut b = s.clone();
        b[36..40].copy_from_slice(&3u32.to_be_bytes());
        let e = decode(&b, "t", 0).unwrap_err();
        assert_eq!(e.offset, 36, "{e}");
        let mut b = s.clone();
        b[32..36].copy_from_slice(&u32::MAX.to_be_bytes());
        b[36..40].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = decode(&b, "t", 0).unwrap_err();
        assert!(e.message.contains("4294967295 elements"), "{e}");

        let kids = nvlist([(
            "children",
            NvValue::Lists(vec![nvlist([("id", NvValue::Unsigned(0))])]),
        )]);
        let s = Encoder::stream(&kids);
        // name "children" (4 + 8): type at 32, nelem at 36.
        let mut b = s.clone();
        b[36..40].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = decode(&b, "t", 0).unwrap_err();
        assert_eq!(e.offset, 32, "{e}");
        assert!(
            e.message.contains("'children'") && e.message.contains("4294967295"),
            "{e}"
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let mut l = nvlist([("x", NvValue::Unsigned(1))]);
        for _ in 0..MAX_DEPTH {
            l = nvlist([("in", NvValue::List(l))]);
        }
        assert!(decode(&Encoder::stream(&l), "t", 0).is_ok());
        let l = nvlist([("in", NvValue::List(l))]);
        let e = decode(&Encoder::stream(&l), "t", 0).unwrap_err();
        assert!(e.message.contains("nested deeper"), "{e}");
    }

    #[test]
    fn an_unknown_type_is_skipped_by_its_size() {
        let s = Encoder::stream(&nvlist([
            ("a", NvValue::Unsigned(1)),
            ("b", NvValue::Unsigned(2)),
        ]));
        let mut b = s.clone();
        // The first pair's type word: header 4 + 8 + sizes 8 + name 8 = 28.
        b[28..32].copy_from_slice(&99u32.to_be_bytes());
        let l = decode(&b, "t", 0).unwrap();
        assert_eq!(l.pairs, vec![("b".to_string(), NvValue::Unsigned(2))]);
    }

    #[test]
    fn wrong_encoding_or_version_is_refused() {
        let mut s = Encoder::stream(&sample());
        s[0] = 0;
        assert!(decode(&s, "t", 0)
            .unwrap_err()
            .message
            .contains("encoding 0"));
        let mut s = Encoder::stream(&sample());
        s[7] = 1;
        assert!(decode(&s, "t", 0)
            .unwrap_err()
            .message
            .contains("version 1"));
    }

    #[test]
    fn random_bytes_after_a_header_never_panic() {
        let mut rng = fastrand::Rng::with_seed(40);
        let good = Encoder::stream(&sample());
        for _ in 0..3000 {
            let mut b = good.clone();
            for _ in 0..rng.usize(1..6) {
                let i = rng.usize(..b.len());
                b[i] = rng.u8(..);
            }
            let _ = decode(&b, "t", 0);
        }
    }
}
