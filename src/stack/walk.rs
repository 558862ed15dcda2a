//! What sits at the start of a region (a partition, a whole image, an md
//! array, an LV): an md member, a LUKS header, an LVM PV, a filesystem or
//! swap. PVs and md members are also queued for assembly across targets.

use super::assemble::{MdHandle, Pending, PvHandle};
use super::map::{Source, Window};
use super::{fs, limits, luks, lvm, md, Layer, LayerKind, PvInfo};
use crate::bytes::ParseError;
use crate::bytes::ReadAt;
use crate::findings::{Code, Finding};
use crate::topology::Topology;
use std::rc::Rc;

/// Where a region is: bytes `offset..offset + len` of `device`, whose
/// limits are `below`.
#[derive(Clone)]
pub struct Region {
    pub src: Source,
    pub device: String,
    pub offset: u64,
    pub len: u64,
    pub below: Topology,
}

impl Region {
    /// The region as a source of its own, starting at 0.
    pub fn window(&self) -> Source {
        Rc::new(Window {
            src: self.src.clone(),
            start: self.offset,
            len: self.len,
        })
    }

    fn layer(&self, kind: LayerKind, name: impl Into<String>) -> Layer {
        Layer::new(
            kind,
            name,
            self.device.clone(),
            self.offset,
            self.len,
            self.below,
        )
    }

    /// A metadata error as a finding naming the device and absolute byte.
    fn invalid(&self, e: &ParseError) -> Finding {
        Finding::new(
            Code::MetadataInvalid,
            format!(
                "{} at byte {} of {}: {}",
                e.layer,
                self.offset.saturating_add(e.offset),
                self.device,
                e.message
            ),
        )
    }
}

fn has_swap(src: &dyn ReadAt) -> bool {
    [4096u64, 65536].iter().any(|&page| {
        let mut b = [0u8; 10];
        page <= src.len()
            && src.read_exact_at(&mut b, page - 10).is_ok()
            && (&b == b"SWAPSPACE2" || &b == b"SWAP-SPACE")
    })
}

/// The layer at the start of `r`, if anything is recognised there.
pub fn region(r: &Region, pending: &mut Pending) -> Option<Layer> {
    let w = r.window();
    let src: &dyn ReadAt = &*w;
    let damaged = |kind, what: &str, e: ParseError| {
        let mut l = r.layer(kind, format!("{what} (damaged)"));
        l.findings.push(r.invalid(&e));
        Some(l)
    };
    match md::read(src) {
        Ok(Some(m)) => {
            let mut l = r.layer(LayerKind::MdMember, md_name(&m));
            l.data_offset_bytes = Some(m.data_offset_bytes);
            l.md = Some(m.clone());
            pending.mds.push(MdHandle {
                member: m,
                region: r.clone(),
            });
            return Some(l);
        }
        Ok(None) => {}
        Err(e) => return damaged(LayerKind::MdMember, "md member", e),
    }
    match luks::read(src) {
        Ok(Some(h)) => {
            let mut l = r.layer(LayerKind::Luks, format!("LUKS{} {}", h.version, h.uuid));
            l.data_offset_bytes = Some(h.payload_offset_bytes);
            let payload = r.offset + h.payload_offset_bytes;
            l.exposes = Some(limits::crypt(&r.below, payload, h.sector_size));
            l.luks = Some(h);
            return Some(l);
        }
        Ok(None) => {}
        Err(e) => return damaged(LayerKind::Luks, "LUKS header", e),
    }
    match lvm::read(src) {
        Ok(Some(pv)) => {
            let mut l = r.layer(LayerKind::LvmPv, format!("PV {}", pv.label.uuid));
            l.data_offset_bytes = Some(pv.pe_start);
            l.pv = Some(PvInfo {
                uuid: pv.label.uuid.clone(),
                vg: pv.vg().map(|v| v.name.clone()),
                pe_start_bytes: pv.pe_start,
            });
            if let Err(e) = &pv.vg {
                l.findings.push(r.invalid(e));
            }
            pending.pvs.push(PvHandle {
                found: pv,
                region: r.clone(),
            });
            return Some(l);
        }
        Ok(None) => {}
        Err(e) => return damaged(LayerKind::LvmPv, "PV label", e),
    }
    match fs::read(src) {
        Ok(Some(f)) => {
            let mut l = r.layer(LayerKind::Filesystem, f.kind.as_str());
            l.filesystem = Some(f);
            return Some(l);
        }
        Ok(None) => {}
        Err(e) => return damaged(LayerKind::Filesystem, e.layer, e),
    }
    has_swap(src).then(|| r.layer(LayerKind::Swap, "swap"))
}

fn md_name(m: &md::MdMember) -> String {
    let role = m.role.map_or("spare".to_string(), |r| format!("role {r}"));
    format!(
        "md member {role} of {} ({}, metadata {})",
        m.name.as_deref().unwrap_or(&m.array_uuid),
        m.level_name(),
        m.version
    )
}
