//! A tracepoint's tracefs `format` file, parsed: its name, id and fields
//! (declaration, offset, size, signedness), and the offsets of the fields
//! the block tracepoints are counted by. The text is what
//! kernel/trace/trace_events.c (`f_show`) prints; a field line reads
//! `field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;`. Pure and total: any
//! text gives a format or an error, never a panic (fuzz target
//! `trace_format`).

/// The largest raw record a BPF program may read through its context:
/// PERF_MAX_TRACE_SIZE in include/linux/trace_events.h (2048 before
/// Linux 5.x raised it; the smaller bound holds everywhere).
pub const MAX_RECORD: usize = 2048;

/// Fields beyond this many are refused (a block event has about ten).
const MAX_FIELDS: usize = 256;

/// One `field:` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The C declaration, e.g. `char rwbs[10]`.
    pub decl: String,
    /// The name, without an array suffix: `rwbs`.
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
}

/// A whole `format` file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFormat {
    pub name: String,
    /// The `ID:` line (the same number as the event's `id` file).
    pub id: Option<u32>,
    pub fields: Vec<Field>,
}

/// Why a format file could not be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("line {line}: {what}")]
    Line { line: usize, what: String },
    #[error("more than {MAX_FIELDS} fields")]
    TooManyFields,
    #[error("no field `{0}`")]
    Missing(&'static str),
    #[error("field `{name}` has size {size}, expected {expected}")]
    Size {
        name: &'static str,
        size: usize,
        expected: usize,
    },
    #[error("field `{name}` ends at byte {end}, beyond a record's {MAX_RECORD}")]
    Beyond { name: &'static str, end: usize },
}

/// Parse a `format` file. Lines other than `name:`, `ID:` and `field:`
/// (the blank separator, `format:`, `print fmt:`) are skipped.
pub fn parse(text: &str) -> Result<EventFormat, FormatError> {
    let mut f = EventFormat::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let bad = |what: &str| FormatError::Line {
            line: i + 1,
            what: what.to_string(),
        };
        if let Some(v) = line.strip_prefix("name:") {
            f.name = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("ID:") {
            f.id = Some(v.trim().parse().map_err(|_| bad("ID is not a number"))?);
        } else if line.starts_with("field:") {
            if f.fields.len() == MAX_FIELDS {
                return Err(FormatError::TooManyFields);
            }
            f.fields.push(parse_field(line).map_err(bad)?);
        } else if line.starts_with("print fmt:") {
            break;
        }
    }
    Ok(f)
}

/// `field:char rwbs[10];\toffset:28;\tsize:10;\tsigned:0;`
fn parse_field(line: &str) -> Result<Field, &'static str> {
    let mut parts = line.split(';').map(str::trim).filter(|p| !p.is_empty());
    let decl = parts
        .next()
        .and_then(|p| p.strip_prefix("field:"))
        .ok_or("no declaration")?
        .trim();
    let (mut offset, mut size, mut signed) = (None, None, false);
    for p in parts {
        let (key, value) = p.split_once(':').ok_or("a part without `:`")?;
        let num = || value.trim().parse::<usize>().map_err(|_| "not a number");
        match key.trim() {
            "offset" => offset = Some(num()?),
            "size" => size = Some(num()?),
            "signed" => signed = num()? != 0,
            _ => {}
        }
    }
    Ok(Field {
        name: field_name(decl).ok_or("no field name")?.to_string(),
        decl: decl.to_string(),
        offset: offset.ok_or("no offset")?,
        size: size.ok_or("no size")?,
        signed,
    })
}

/// The declared name: the last word, without an array suffix.
fn field_name(decl: &str) -> Option<&str> {
    let last = decl.split_whitespace().last()?;
    let name = last.split('[').next()?;
    let ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    ok.then_some(name)
}

impl EventFormat {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// The block tracepoints diskalign counts (include/trace/events/block.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Event {
    BioQueue,
    BioRemap,
    Split,
    BackMerge,
    FrontMerge,
    RqIssue,
    RqComplete,
}

impl Event {
    pub const ALL: [Event; 7] = [
        Event::BioQueue,
        Event::BioRemap,
        Event::Split,
        Event::BackMerge,
        Event::FrontMerge,
        Event::RqIssue,
        Event::RqComplete,
    ];

    /// The tracepoint's name under events/block/.
    pub fn name(self) -> &'static str {
        match self {
            Event::BioQueue => "block_bio_queue",
            Event::BioRemap => "block_bio_remap",
            Event::Split => "block_split",
            Event::BackMerge => "block_bio_backmerge",
            Event::FrontMerge => "block_bio_frontmerge",
            Event::RqIssue => "block_rq_issue",
            Event::RqComplete => "block_rq_complete",
        }
    }

    /// block_split has `new_sector` instead of a length.
    fn has_length(self) -> bool {
        self != Event::Split
    }
}

/// Where a field is in the raw record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub offset: usize,
    pub size: usize,
}

impl Slot {
    fn bytes<const N: usize>(self, raw: &[u8]) -> Option<[u8; N]> {
        let end = self.offset.checked_add(N)?;
        raw.get(self.offset..end)?.try_into().ok()
    }
    pub fn u32_in(self, raw: &[u8]) -> Option<u32> {
        self.bytes::<4>(raw).map(u32::from_ne_bytes)
    }
    pub fn u64_in(self, raw: &[u8]) -> Option<u64> {
        self.bytes::<8>(raw).map(u64::from_ne_bytes)
    }
    /// Naturally aligned, as a BPF program's context loads must be.
    fn aligned(self) -> bool {
        self.size == 0 || self.offset % self.size.min(8) == 0
    }
}

/// The fields one event is counted by. For `block_bio_remap`, `dev` and
/// `sector` are the lower device's and `old` holds the upper one's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub event: Event,
    pub dev: Slot,
    pub sector: Slot,
    pub nr_sector: Option<Slot>,
    /// The first two bytes of `rwbs` (blk_fill_rwbs in block/blk-core.c).
    pub rwbs: Slot,
    pub old_dev: Option<Slot>,
    pub old_sector: Option<Slot>,
    /// `common_pid`: the task the event ran in (user space reads it; the
    /// programs ask the kernel instead).
    pub pid: Option<Slot>,
    /// `comm`: the task's name, where the event records it
    /// (block_bio_queue, block_split: `current->comm`).
    pub comm: Option<Slot>,
}

/// A record's counted fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub dev: u32,
    pub sector: u64,
    /// 512-byte sectors; `block_split`, which has none, reads as 1.
    pub nr_sector: u32,
    pub rwbs: [u8; 2],
    /// `block_bio_remap`'s upper device and sector.
    pub old: Option<(u32, u64)>,
    /// The task the event ran in (`common_pid`), 0 where absent.
    pub pid: u32,
    pub comm: Option<[u8; 16]>,
}

fn slot(f: &EventFormat, name: &'static str, size: usize) -> Result<Slot, FormatError> {
    let field = f.field(name).ok_or(FormatError::Missing(name))?;
    let ok = if name == "rwbs" {
        field.size >= size
    } else {
        field.size == size
    };
    if !ok {
        return Err(FormatError::Size {
            name,
            size: field.size,
            expected: size,
        });
    }
    let end = field.offset.saturating_add(field.size);
    if end > MAX_RECORD {
        return Err(FormatError::Beyond { name, end });
    }
    Ok(Slot {
        offset: field.offset,
        size,
    })
}

/// An optional field of `size` bytes that ends within a record.
fn optional(f: &EventFormat, name: &str, size: usize) -> Option<Slot> {
    let field = f.field(name)?;
    let ok = field.size == size && field.offset.saturating_add(size) <= MAX_RECORD;
    ok.then_some(Slot {
        offset: field.offset,
        size,
    })
}

/// The counted fields of `event` in its format: `dev` (dev_t, 4 bytes),
/// `sector` (sector_t, 8), `nr_sector` (4), `rwbs` (at least 2), and for
/// the remap `old_dev` and `old_sector`.
pub fn layout(event: Event, f: &EventFormat) -> Result<Layout, FormatError> {
    let remap = event == Event::BioRemap;
    Ok(Layout {
        event,
        dev: slot(f, "dev", 4)?,
        sector: slot(f, "sector", 8)?,
        nr_sector: if event.has_length() {
            Some(slot(f, "nr_sector", 4)?)
        } else {
            None
        },
        rwbs: slot(f, "rwbs", 2)?,
        old_dev: if remap {
            Some(slot(f, "old_dev", 4)?)
        } else {
            None
        },
        old_sector: if remap {
            Some(slot(f, "old_sector", 8)?)
        } else {
            None
        },
        pid: optional(f, "common_pid", 4),
        comm: optional(f, "comm", 16),
    })
}

impl Layout {
    /// Every slot naturally aligned: the BPF programs read the context at
    /// these offsets (the verifier refuses unaligned context loads).
    pub fn aligned(&self) -> bool {
        [Some(self.dev), Some(self.sector), self.nr_sector]
            .into_iter()
            .chain([self.old_dev, self.old_sector])
            .flatten()
            .all(Slot::aligned)
    }

    /// The counted fields of a raw record; None when it is too short.
    pub fn decode(&self, raw: &[u8]) -> Option<Record> {
        let nr_sector = match self.nr_sector {
            Some(s) => s.u32_in(raw)?,
            None => 1,
        };
        let old = match (self.old_dev, self.old_sector) {
            (Some(d), Some(s)) => Some((d.u32_in(raw)?, s.u64_in(raw)?)),
            _ => None,
        };
        Some(Record {
            dev: self.dev.u32_in(raw)?,
            sector: self.sector.u64_in(raw)?,
            nr_sector,
            rwbs: self.rwbs.bytes::<2>(raw)?,
            old,
            pid: self.pid.and_then(|p| p.u32_in(raw)).unwrap_or(0),
            comm: self.comm.and_then(|c| c.bytes::<16>(raw)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As Linux 6.18 prints events/block/block_bio_remap/format.
    pub(crate) const REMAP: &str = "name: block_bio_remap\nID: 2091\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n\tfield:dev_t old_dev;\toffset:28;\tsize:4;\tsigned:0;\n\tfield:sector_t old_sector;\toffset:32;\tsize:8;\tsigned:0;\n\tfield:char rwbs[10];\toffset:40;\tsize:10;\tsigned:0;\n\nprint fmt: \"%d,%d %s %llu + %u <- (%d,%d) %llu\", ((unsigned int) ((REC->dev) >> 20))\n";

    const SPLIT: &str = "name: block_split\nID: 2092\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:sector_t new_sector;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:char rwbs[10];\toffset:32;\tsize:10;\tsigned:0;\n\tfield:char comm[16];\toffset:42;\tsize:16;\tsigned:0;\n";

    #[test]
    fn parses_the_kernels_remap_format() {
        let f = parse(REMAP).unwrap();
        assert_eq!(f.name, "block_bio_remap");
        assert_eq!(f.id, Some(2091));
        assert_eq!(f.fields.len(), 10);
        let rwbs = f.field("rwbs").unwrap();
        assert_eq!(
            (rwbs.decl.as_str(), rwbs.offset, rwbs.size),
            ("char rwbs[10]", 40, 10)
        );
        assert!(f.field("common_pid").unwrap().signed);
        let l = layout(Event::BioRemap, &f).unwrap();
        assert_eq!(
            l.old_sector,
            Some(Slot {
                offset: 32,
                size: 8
            })
        );
        assert_eq!(
            l.rwbs,
            Slot {
                offset: 40,
                size: 2
            }
        );
        assert!(l.aligned());
    }

    #[test]
    fn decodes_a_raw_remap_record() {
        let l = layout(Event::BioRemap, &parse(REMAP).unwrap()).unwrap();
        let mut raw = vec![0u8; 52];
        raw[8..12].copy_from_slice(&((7u32 << 20) | 3).to_ne_bytes());
        raw[16..24].copy_from_slice(&2057u64.to_ne_bytes());
        raw[24..28].copy_from_slice(&8u32.to_ne_bytes());
        raw[28..32].copy_from_slice(&((259u32 << 20) | 1).to_ne_bytes());
        raw[32..40].copy_from_slice(&8u64.to_ne_bytes());
        raw[40..43].copy_from_slice(b"WS\0");
        let r = l.decode(&raw).unwrap();
        assert_eq!(
            (r.dev, r.sector, r.nr_sector, r.rwbs),
            ((7 << 20) | 3, 2057, 8, *b"WS")
        );
        assert_eq!(r.old, Some(((259 << 20) | 1, 8)));
        assert_eq!(l.decode(&raw[..41]), None, "a short record is no record");
    }

    #[test]
    fn split_has_no_length() {
        let l = layout(Event::Split, &parse(SPLIT).unwrap()).unwrap();
        assert_eq!(l.nr_sector, None);
        assert_eq!(
            layout(Event::BioQueue, &parse(SPLIT).unwrap()),
            Err(FormatError::Missing("nr_sector"))
        );
    }

    #[test]
    fn bad_formats_are_errors() {
        assert!(matches!(
            parse("ID: x"),
            Err(FormatError::Line { line: 1, .. })
        ));
        assert!(parse("field:int a;\toffset:;\tsize:4;").is_err());
        assert!(parse("field:;offset:0;size:4").is_err());
        assert!(parse("field:int a;\tsize:4;").is_err());
        let f = parse("field:int dev;\toffset:8;\tsize:8;").unwrap();
        assert!(matches!(
            layout(Event::BioQueue, &f),
            Err(FormatError::Size { .. })
        ));
        let f = parse("field:dev_t dev;\toffset:4096;\tsize:4;").unwrap();
        assert!(matches!(
            layout(Event::BioQueue, &f),
            Err(FormatError::Beyond { .. })
        ));
        let big = format!("field:dev_t dev;\toffset:{};\tsize:4;", usize::MAX);
        assert!(matches!(
            layout(Event::BioQueue, &parse(&big).unwrap()),
            Err(FormatError::Beyond { .. })
        ));
    }

    #[test]
    fn unaligned_fields_are_seen() {
        let text = REMAP.replace("offset:32;", "offset:30;");
        let l = layout(Event::BioRemap, &parse(&text).unwrap()).unwrap();
        assert!(!l.aligned());
    }
}
