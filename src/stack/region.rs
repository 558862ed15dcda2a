//! A region of a device: the bytes a layer format is probed in, and the
//! layers and findings made of them.

use super::{Layer, LayerKind};
use crate::bytes::ParseError;
use crate::bytes::{SharedReader, Window};
use crate::findings::{Code, Facts, Finding};
use crate::iolimits::Topology;
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
