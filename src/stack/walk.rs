//! What sits at the start of a region (a partition, a whole image, an md
//! array, an LV): an md member, a LUKS header, an LVM PV, a filesystem or
//! swap. PVs and md members are also queued for assembly across targets.

use super::assemble::Pending;
use super::map::{SharedReader, Window};
use super::registry::{LayerFormat, Magic, FORMATS};
use super::{Layer, LayerKind};
use crate::bytes::ParseError;
use crate::bytes::ReadAt;
use crate::findings::{Code, Facts, Finding};
use crate::topology::Topology;
use std::rc::Rc;

/// Where a region is: bytes `offset..offset + len` of `device`, whose
/// limits are `below`.
#[derive(Clone)]
pub struct Region {
    pub src: SharedReader,
    pub device: String,
    pub offset: u64,
    pub len: u64,
    pub below: Topology,
}

impl Region {
    /// The region as a source of its own, starting at 0.
    pub fn window(&self) -> SharedReader {
        Rc::new(Window {
            src: self.src.clone(),
            start: self.offset,
            len: self.len,
        })
    }

    pub(super) fn layer(&self, kind: LayerKind, name: impl Into<String>) -> Layer {
        Layer::new(
            kind,
            name,
            self.device.clone(),
            self.offset,
            self.len,
            self.below,
        )
    }

    /// A layer whose metadata could not be read: named, with the error.
    pub(super) fn damaged(&self, kind: LayerKind, what: &str, e: ParseError) -> Option<Layer> {
        let mut l = self.layer(kind, format!("{what} (damaged)"));
        l.findings.push(self.invalid(&e));
        Some(l)
    }

    /// A metadata error as a finding naming the device and absolute byte.
    pub(super) fn invalid(&self, e: &ParseError) -> Finding {
        let at = self.offset.saturating_add(e.offset);
        let facts = Facts {
            offset_bytes: Some(at),
            device: Some(self.device.clone()),
            region: Some(e.layer.to_string()),
            ..Facts::default()
        };
        Finding::new(
            Code::MetadataInvalid,
            format!("{} at byte {at} of {}: {}", e.layer, self.device, e.message),
        )
        .with_facts(facts)
    }
}

/// Swap space: the signature at the end of the first page (4 KiB or 64 KiB).
pub static SWAP: LayerFormat = LayerFormat {
    name: "swap",
    description: "Linux swap space",
    magics: &[
        Magic {
            offset: 4096 - 10,
            bytes: b"SWAPSPACE2",
            what: "swap space",
        },
        Magic {
            offset: 4096 - 10,
            bytes: b"SWAP-SPACE",
            what: "swap space",
        },
        Magic {
            offset: 65536 - 10,
            bytes: b"SWAPSPACE2",
            what: "swap space (64 KiB pages)",
        },
    ],
    probe: |r, src, _| has_swap(src).then(|| r.layer(LayerKind::Swap, "swap")),
};

fn has_swap(src: &dyn ReadAt) -> bool {
    [4096u64, 65536].iter().any(|&page| {
        let mut b = [0u8; 10];
        page <= src.len()
            && src.read_exact_at(&mut b, page - 10).is_ok()
            && (&b == b"SWAPSPACE2" || &b == b"SWAP-SPACE")
    })
}

/// The layer at the start of `r`, if any format of the registry recognises it.
pub fn region(r: &Region, pending: &mut Pending) -> Option<Layer> {
    let w = r.window();
    let src: &dyn ReadAt = &*w;
    FORMATS.iter().find_map(|f| (f.probe)(r, src, pending))
}
