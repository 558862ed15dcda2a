//! A descriptor's text (`# Disk DescriptorFile`, a file of its own or
//! embedded in a sparse extent): its keys and its extent lines, each
//! with the byte it starts at (`vmdk_parse_extents`).

use super::LAYER_DESCRIPTOR;
use crate::bytes::ReadAt;
use crate::image::ImageError;
use std::path::Path;

/// qemu reads a descriptor file's first 1 MiB - 1 (`vmdk_read_desc`);
/// real descriptors take a few hundred bytes (qemu writes 20 sectors at
/// most for an embedded one). A longer descriptor file is refused, not
/// cut, so no extent line is silently dropped.
pub(super) const MAX_DESCRIPTOR: u64 = (1 << 20) - 1;
/// An 8 TiB disk (VMware Workstation's largest) in 2 GiB extents.
pub(super) const MAX_EXTENTS: usize = 4096;

/// A descriptor file's bytes: all of it, refused past [`MAX_DESCRIPTOR`].
pub(super) fn read_descriptor_file(src: &dyn ReadAt, path: &Path) -> Result<Vec<u8>, ImageError> {
    if src.len() > MAX_DESCRIPTOR {
        return Err(ImageError::parse(
            path,
            LAYER_DESCRIPTOR,
            0,
            format!(
                "the file is {} bytes, longer than any descriptor ({MAX_DESCRIPTOR} at most) and not a sparse extent",
                src.len()
            ),
        ));
    }
    read_descriptor_bytes(src, path, 0, src.len())
}

pub(super) fn read_descriptor_bytes(
    src: &dyn ReadAt,
    path: &Path,
    at: u64,
    len: u64,
) -> Result<Vec<u8>, ImageError> {
    crate::bytes::read_bytes(src, LAYER_DESCRIPTOR, at, len).map_err(|e| ImageError::new(path, e))
}

/// What a descriptor says: the disk's kind, its parent, its extents.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Descriptor {
    /// `createType` and the byte its value starts at.
    pub(super) create_type: Option<(String, u64)>,
    /// `parentFileNameHint` and the byte its value starts at.
    pub(super) parent: Option<(String, u64)>,
    pub(super) extents: Vec<ExtentLine>,
}

/// One extent line: `ACCESS SECTORS TYPE ["NAME" [OFFSET]]`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ExtentLine {
    pub(super) access: Access,
    pub(super) sectors: u64,
    pub(super) kind: ExtentKind,
    /// The file's name and the byte the name starts at.
    pub(super) file: Option<(String, u64)>,
    /// A FLAT extent's first sector in its file.
    pub(super) start: u64,
    /// The byte the line starts at.
    pub(super) at: u64,
}

/// An extent line's access word. qemu reads RW lines only and skips the
/// others, shifting every later extent (`vmdk_parse_extents`; qemu 7.2
/// gives a descriptor of RW 1024, RDONLY 512, ZERO 100, RW 512 sectors a
/// size of 1536). VMware's format counts them all: an RDONLY extent reads
/// as any other, a NOACCESS one holds its place but cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Access {
    Rw,
    Rdonly,
    Noaccess,
}

/// An extent line's type word. ZERO (VMware's, skipped by qemu) reads as
/// zeros; SESPARSE is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ExtentKind {
    Flat,
    Sparse,
    Zero,
    Vmfs,
    VmfsSparse,
    SeSparse,
}

/// Parse descriptor text whose first byte is at byte `base` of its file.
/// Comments (`#`) and blank lines are skipped, `key = "value"` lines give
/// the disk's facts, lines starting with an access word are extents
/// (read only when `extents`: an embedded descriptor's extent is the file
/// itself). The text ends at its first NUL (the padding of an embedded
/// descriptor).
pub(super) fn parse_descriptor(
    text: &[u8],
    base: u64,
    extents: bool,
    path: &Path,
) -> Result<Descriptor, ImageError> {
    let text = &text[..text.iter().position(|&b| b == 0).unwrap_or(text.len())];
    let mut desc = Descriptor::default();
    let mut line_at = 0usize;
    for raw in text.split(|&b| b == b'\n') {
        let at = base + line_at as u64;
        line_at += raw.len() + 1;
        let lead = raw.iter().take_while(|b| b.is_ascii_whitespace()).count();
        let line = raw[lead..].trim_ascii_end();
        let at = at + lead as u64;
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        if let Some(access) = access_word(line) {
            if extents {
                if desc.extents.len() >= MAX_EXTENTS {
                    return Err(ImageError::parse(
                        path,
                        LAYER_DESCRIPTOR,
                        at,
                        format!("more than {MAX_EXTENTS} extent lines"),
                    ));
                }
                let extent = parse_extent(line, at, access)
                    .map_err(|(o, m)| ImageError::parse(path, LAYER_DESCRIPTOR, o, m))?;
                desc.extents.push(extent);
            }
        } else if let Some((key, value, value_at)) = key_value(line) {
            let slot = match key {
                b"createType" => &mut desc.create_type,
                b"parentFileNameHint" => &mut desc.parent,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some((lossy(value), at + value_at as u64));
            }
        }
    }
    Ok(desc)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The access word an extent line starts with.
fn access_word(line: &[u8]) -> Option<Access> {
    let word = line.split(|b| b.is_ascii_whitespace()).next()?;
    match word {
        b"RW" => Some(Access::Rw),
        b"RDONLY" => Some(Access::Rdonly),
        b"NOACCESS" => Some(Access::Noaccess),
        _ => None,
    }
}

/// `key = value` or `key = "value"`: the key, the value (unquoted) and
/// the value's position in the line.
fn key_value(line: &[u8]) -> Option<(&[u8], &[u8], usize)> {
    let eq = line.iter().position(|&b| b == b'=')?;
    let key = line[..eq].trim_ascii();
    let rest = &line[eq + 1..];
    let skip = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let start = eq + 1 + skip;
    let value = &line[start..];
    if let Some(quoted) = value.strip_prefix(b"\"") {
        let end = quoted
            .iter()
            .position(|&b| b == b'"')
            .unwrap_or(quoted.len());
        return Some((key, &quoted[..end], start + 1));
    }
    Some((key, value, start))
}

/// A line's words and quoted names, each with its position.
struct Words<'a> {
    line: &'a [u8],
    pos: usize,
}

impl<'a> Words<'a> {
    fn skip_space(&mut self) {
        while self
            .line
            .get(self.pos)
            .is_some_and(|b| b.is_ascii_whitespace())
        {
            self.pos += 1;
        }
    }

    /// The next unquoted word, if any.
    fn word(&mut self) -> Option<(&'a [u8], usize)> {
        self.skip_space();
        let start = self.pos;
        while self
            .line
            .get(self.pos)
            .is_some_and(|&b| !b.is_ascii_whitespace() && b != b'"')
        {
            self.pos += 1;
        }
        (self.pos > start).then(|| (&self.line[start..self.pos], start))
    }

    /// The next `"quoted"` name: None when the next thing is not quoted,
    /// an error when the quote does not close.
    fn quoted(&mut self) -> Result<Option<(&'a [u8], usize)>, usize> {
        self.skip_space();
        if self.line.get(self.pos) != Some(&b'"') {
            return Ok(None);
        }
        let start = self.pos + 1;
        let len = self.line[start..]
            .iter()
            .position(|&b| b == b'"')
            .ok_or(self.pos)?;
        self.pos = start + len + 1;
        Ok(Some((&self.line[start..start + len], start)))
    }
}

/// Parse one extent line (qemu's `vmdk_parse_extents`, with VMware's
/// RDONLY, NOACCESS and ZERO extents, which qemu skips; errors as
/// (byte offset, message)).
fn parse_extent(line: &[u8], at: u64, access: Access) -> Result<ExtentLine, (u64, String)> {
    let mut words = Words { line, pos: 0 };
    let pos = |p: usize| at + p as u64;
    words.word();
    let (sectors, sectors_at) = words
        .word()
        .ok_or_else(|| (at, "extent line has no size in sectors".to_string()))?;
    let sectors = decimal(sectors).ok_or_else(|| {
        (
            pos(sectors_at),
            format!(
                "extent size {:?} is not a number of sectors",
                lossy(sectors)
            ),
        )
    })?;
    let (kind_word, kind_at) = words
        .word()
        .ok_or_else(|| (at, "extent line has no extent type".to_string()))?;
    let kind = extent_kind(kind_word).ok_or_else(|| {
        (
            pos(kind_at),
            format!(
                "extent type {:?} is not FLAT, SPARSE, ZERO, VMFS, VMFSSPARSE or SESPARSE",
                lossy(kind_word)
            ),
        )
    })?;
    let file = words
        .quoted()
        .map_err(|p| (pos(p), "extent file name has no closing quote".to_string()))?
        .map(|(name, p)| (lossy(name), pos(p)));
    let start = match words.word() {
        Some((w, p)) if file.is_none() && kind != ExtentKind::Zero => {
            return Err((
                pos(p),
                format!("extent file name {:?} is not in double quotes", lossy(w)),
            ))
        }
        Some((w, p)) => Some(decimal(w).ok_or_else(|| {
            (
                pos(p),
                format!("extent offset {:?} is not a number of sectors", lossy(w)),
            )
        })?),
        None => None,
    };
    words.skip_space();
    if words.pos < line.len() {
        let rest = &line[words.pos..];
        return Err((
            pos(words.pos),
            format!("unexpected {:?} after the extent", lossy(rest)),
        ));
    }
    let kind_name = lossy(kind_word);
    let start = match (kind, &file, start) {
        (ExtentKind::Zero, None, None) => 0,
        (ExtentKind::Zero, _, _) => {
            return Err((at, "a ZERO extent names no file and no offset".to_string()))
        }
        (_, None, _) => return Err((at, format!("a {kind_name} extent needs a quoted file name"))),
        (ExtentKind::Flat, Some(_), Some(s)) => s,
        (ExtentKind::Flat, Some(_), None) => {
            return Err((
                at,
                "a FLAT extent needs its offset in sectors after the name".to_string(),
            ))
        }
        (_, Some(_), None) => 0,
        (_, Some(_), Some(_)) => {
            return Err((
                at,
                format!("a {kind_name} extent takes no offset after the name"),
            ))
        }
    };
    if file.as_ref().is_some_and(|(n, _)| n.is_empty()) {
        return Err((at, "extent file name is empty".to_string()));
    }
    Ok(ExtentLine {
        access,
        sectors,
        kind,
        file,
        start,
        at,
    })
}

fn decimal(w: &[u8]) -> Option<u64> {
    if w.is_empty() || !w.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(w).ok()?.parse().ok()
}

fn extent_kind(w: &[u8]) -> Option<ExtentKind> {
    Some(match w {
        b"FLAT" => ExtentKind::Flat,
        b"SPARSE" => ExtentKind::Sparse,
        b"ZERO" => ExtentKind::Zero,
        b"VMFS" => ExtentKind::Vmfs,
        b"VMFSSPARSE" => ExtentKind::VmfsSparse,
        b"SESPARSE" => ExtentKind::SeSparse,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::vmdk::test_support::refused;
    use crate::image::{Container, Opened};

    fn parse(text: &str) -> Result<Descriptor, ImageError> {
        parse_descriptor(text.as_bytes(), 0, true, Path::new("/d.vmdk"))
    }

    #[test]
    fn the_descriptor_parser_reads_keys_comments_quotes_and_extents() {
        let text = "# Disk DescriptorFile\r\nversion=1\r\n  # indented comment\r\n\
                    createType = \"twoGbMaxExtentFlat\"\r\n\
                    parentFileNameHint=\"/vm/my base.vmdk\"\r\n\
                    RW 4192256 FLAT \"disk name-f001.vmdk\" 0\r\n\
                    RDONLY 2048 SPARSE \"s.vmdk\"\r\n\tNOACCESS 16 VMFS \"v.vmdk\"\r\n\
                    RW 100 ZERO\r\nddb.adapterType = \"ide\"\r\n";
        let d = parse(text).unwrap();
        let at = |s: &str| text.find(s).unwrap() as u64;
        assert_eq!(
            d.create_type,
            Some(("twoGbMaxExtentFlat".into(), at("twoGb")))
        );
        assert_eq!(d.parent, Some(("/vm/my base.vmdk".into(), at("/vm/my"))));
        assert_eq!(d.extents.len(), 4);
        assert_eq!(
            d.extents[0],
            ExtentLine {
                access: Access::Rw,
                sectors: 4192256,
                kind: ExtentKind::Flat,
                file: Some(("disk name-f001.vmdk".into(), at("disk name"))),
                start: 0,
                at: at("RW 4192256"),
            }
        );
        assert_eq!(d.extents[1].access, Access::Rdonly);
        assert_eq!(
            (d.extents[2].access, d.extents[2].kind),
            (Access::Noaccess, ExtentKind::Vmfs)
        );
        assert_eq!(d.extents[2].at, at("NOACCESS"));
        assert_eq!(
            (d.extents[3].kind, d.extents[3].file.clone()),
            (ExtentKind::Zero, None)
        );
        // Text after a NUL is padding.
        assert!(parse("createType=\"x\"\n\0RW 1 FLAT")
            .unwrap()
            .extents
            .is_empty());
    }

    #[test]
    fn bad_extent_lines_are_refused_at_their_byte() {
        let cases = [
            ("RW 12x FLAT \"f\" 0", 3, "extent size \"12x\""),
            ("RW", 0, "no size"),
            ("RW 8", 0, "no extent type"),
            ("RW 8 VMFSRDM \"f\"", 5, "extent type \"VMFSRDM\""),
            ("RW 8 FLAT \"f", 10, "no closing quote"),
            ("RW 8 FLAT \"f\"", 0, "needs its offset"),
            ("RW 8 FLAT f 0", 10, "not in double quotes"),
            ("RW 8 FLAT \"f\" 0 junk", 16, "unexpected \"junk\""),
            ("RW 8 SPARSE \"f\" 3", 0, "takes no offset"),
            ("RW 8 SPARSE", 0, "needs a quoted file name"),
            ("RW 8 ZERO \"f\"", 0, "names no file"),
            ("RW 8 FLAT \"\" 0", 0, "empty"),
            ("RW 8 FLAT \"f\" -1", 14, "extent offset \"-1\""),
        ];
        for (line, col, msg) in cases {
            let text = format!("createType=\"x\"\n{line}\n");
            let e = refused(parse(&text).map(|_| unreachable_opened()), &[msg]);
            assert!(
                e.contains(&format!("VMDK descriptor at byte {}", 15 + col)),
                "{line}: {e}"
            );
        }
    }

    /// `refused` takes an open's result; a parse's is mapped to it.
    fn unreachable_opened() -> Opened {
        Opened {
            container: Container::default(),
            guest: None,
        }
    }
}
