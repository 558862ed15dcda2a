//! Linux md RAID: the member superblocks ([`superblock`]) and the layer
//! format that finds them; `assemble` builds the arrays.

mod superblock;

use super::format::{Found, LayerFormat, Magic, Member};
use super::region::Region;
use super::Detail;
use super::LayerKind;
use crate::bytes::ReadAt;
use serde::{Deserialize, Serialize};
pub use superblock::{places, read, MdMember, MAGIC};

const MAGIC_LE: [u8; 4] = MAGIC.to_le_bytes();

/// md members: 1.1 and 1.2 at fixed offsets; 1.0 and 0.90 sit near the end
/// (the signature scan adds those).
pub static FORMAT: LayerFormat = LayerFormat {
    magics: &[
        Magic {
            offset: 0,
            bytes: &MAGIC_LE,
            what: "md RAID superblock 1.1",
        },
        Magic {
            offset: 4096,
            bytes: &MAGIC_LE,
            what: "md RAID superblock 1.2",
        },
    ],
    probe,
    peeks: Some(peeks),
};

fn probe(r: &Region, src: &dyn ReadAt) -> Option<Found> {
    match read(src) {
        Ok(Some(m)) => {
            let mut l = r.layer(LayerKind::MdMember, member_name(&m));
            l.data_offset_bytes = Some(m.data_offset_bytes);
            l.detail = Some(Detail::Md(m.clone()));
            Some(Found {
                member: Some(Member::Md(m)),
                ..Found::from(l)
            })
        }
        Ok(None) => None,
        Err(e) => r
            .damaged(LayerKind::MdMember, "md member", e)
            .map(Found::from),
    }
}

fn member_name(m: &MdMember) -> String {
    let role = m.role.map_or("spare".to_string(), |r| format!("role {r}"));
    format!(
        "md member {role} of {} ({}, metadata {})",
        m.name.as_deref().unwrap_or(&m.array_uuid),
        m.level_name(),
        m.version
    )
}

/// An md array as assembled from the members found.
#[derive(Clone, Default, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct ArrayInfo {
    pub uuid: String,
    pub level: String,
    pub layout: u32,
    pub chunk_bytes: u64,
    pub raid_disks: u32,
    pub members: Vec<ArrayMember>,
    /// False when the level or the missing members keep diskalign from
    /// reading the array's contents.
    pub readable: bool,
}

/// One member as its own superblock describes it.
#[derive(Clone, Default, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct ArrayMember {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<u32>,
    pub device: String,
    pub offset_bytes: u64,
    /// Where the member's data starts on `device`.
    pub data_start_bytes: u64,
    pub level: i32,
    pub chunk_bytes: u64,
    pub raid_disks: u32,
    pub layout: u32,
}

/// Each superblock's magic, wherever [`places`] puts one.
fn peeks(len: u64) -> Vec<(u64, u64)> {
    places(len).into_iter().map(|(at, _)| (at, 4)).collect()
}
