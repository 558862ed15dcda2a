//! What a device-mapper device is, from the names its creator gave it
//! (sysfs `dm/name` and `dm/uuid`, read by `sys::sysfs` into [`DmIds`]):
//! a device that exists only inside another layer (an LVM sub-LV or
//! layer device, an opened dm-crypt mapping, a partition map), a
//! multipath map (one disk reached over several paths, partitioned as a
//! disk is), or a volume of its own (an LV people use, a `dmsetup
//! create` table).

use crate::sys::DmIds;

/// Why a device-mapper device exists only inside another layer. Such a
/// device is shown in the stack of the device it is built from (the
/// kernel's `holders/`), never as a target of its own unless named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Internal {
    /// An LVM sub-LV, by the reserved string in its LV name (`_tmeta`,
    /// `_rimage`, ...).
    LvmComponent(&'static str),
    /// An LVM LV under a reserved name prefix (`pvmove`, `snapshot`).
    LvmReserved(&'static str),
    /// An LVM layer device, by the layer its uuid ends in (`real`,
    /// `cow`, `tpool`, `pool`, `tdata`, ...).
    LvmLayer(String),
    /// A mapping opened by cryptsetup (uuid `CRYPT-`: LUKS, plain,
    /// VERITY, INTEGRITY, ...).
    Crypt,
    /// Partition N of a dm device, as kpartx maps it (uuid `partN-`).
    PartitionMap(u32),
}

/// What a device-mapper device is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DmRole {
    Internal(Internal),
    /// A multipath map (uuid `mpath-`): a whole disk, partitioned (by
    /// kpartx) as one.
    Multipath,
    /// Anything else: an LV people use (linear, striped, thin, RAID,
    /// cache, a snapshot or its origin), a table made by hand.
    Volume,
}

/// The uuid prefix lvm2 gives every LV (lib/misc/lvm-string.h
/// `UUID_PREFIX`), then the LV's id: the VG's and the LV's uuids, 32
/// characters each (lib/uuid/uuid.h `ID_LEN`).
const LVM_PREFIX: &str = "LVM-";
const LVM_ID_LEN: usize = 64;

/// The strings lvm2 reserves in an LV name for the sub-LVs it makes
/// itself, and refuses in a name given by a user: lvm2
/// lib/misc/lvm-string.c `_lvname_has_reserved_component_string`
/// (`_cdata`, `_cmeta`, `_corig`, `_cpool`, `_cvol`, `_wcorig`,
/// `_mimage`, `_mlog`, `_rimage`, `_rmeta`, `_tdata`, `_tmeta`, `_vdata`,
/// `_imeta`, `_iorig`) and `_lvname_has_reserved_string` (`_pmspare`,
/// `_vorigin`). Both look for them anywhere from the name's first `_`
/// on (strstr), and so does [`lvm_component`].
const LVM_COMPONENT: [&str; 17] = [
    "_cdata", "_cmeta", "_corig", "_cpool", "_cvol", "_wcorig", "_mimage", "_mlog", "_rimage",
    "_rmeta", "_tdata", "_tmeta", "_vdata", "_imeta", "_iorig", "_pmspare", "_vorigin",
];

/// LV name prefixes lvm2 reserves for LVs it makes itself (pvmove's
/// temporary mirror, an old-style snapshot's hidden LV): lvm2
/// lib/misc/lvm-string.c `_lvname_has_reserved_prefix`.
const LVM_RESERVED_PREFIX: [&str; 2] = ["pvmove", "snapshot"];

/// What the device-mapper device named `ids` is.
pub fn dm_role(ids: &DmIds) -> DmRole {
    let uuid = ids.uuid.as_deref().unwrap_or("");
    if let Some(why) = internal(uuid, ids.name.as_deref().unwrap_or("")) {
        return DmRole::Internal(why);
    }
    if uuid.starts_with("mpath-") {
        return DmRole::Multipath;
    }
    DmRole::Volume
}

fn internal(uuid: &str, name: &str) -> Option<Internal> {
    if uuid.starts_with(LVM_PREFIX) {
        return lvm(uuid, name);
    }
    // cryptsetup lib/libdevmapper.c `DM_UUID_PREFIX`: every mapping it
    // opens is "CRYPT-<type>-...".
    if uuid.starts_with("CRYPT-") {
        return Some(Internal::Crypt);
    }
    partition_map(uuid).map(Internal::PartitionMap)
}

/// An LV's device: internal by its uuid's layer, else by its LV name.
/// lvm2 lib/misc/lvm-string.c `build_dm_uuid` (and libdm's
/// `dm_build_dm_uuid`) makes `LVM-<64-character LV id>[-<layer>]`: a
/// layer device of lib/activate/dev_manager.c (`-real` below an origin,
/// `-cow` below a snapshot, `-tpool`, `-pool`, `-vpool`, `-cvol`), and
/// since 2.02.108 (commit 667f93b7d, "uuid: add more private uuid
/// suffixes") the sub-LVs of a thin, cache or VDO pool (`-tdata`,
/// `-tmeta`, `-cdata`, `-cmeta`, `-vdata`) and a cache origin (`-real`).
/// RAID and mirror images and logs keep the bare id until 2.03.36 (commit
/// 1cef87bb3 gives them `-real`; 2.03.16's `build_dm_uuid` has them
/// commented out): their LV names say what they are.
fn lvm(uuid: &str, name: &str) -> Option<Internal> {
    if let Some(layer) = uuid.get(LVM_PREFIX.len() + LVM_ID_LEN..) {
        if let Some(layer) = layer.strip_prefix('-').filter(|l| !l.is_empty()) {
            return Some(Internal::LvmLayer(layer.to_string()));
        }
    }
    let lv = lv_name(name)?;
    if let Some(p) = LVM_RESERVED_PREFIX.iter().find(|p| lv.starts_with(*p)) {
        return Some(Internal::LvmReserved(p));
    }
    lvm_component(&lv).map(Internal::LvmComponent)
}

/// The reserved string in LV name `lv`, looked for as lvm2 does: from the
/// first `_` on.
fn lvm_component(lv: &str) -> Option<&'static str> {
    let from = &lv[lv.find('_')?..];
    LVM_COMPONENT.iter().copied().find(|s| from.contains(s))
}

/// The LV name in an LVM dm name: libdm's `dm_build_dm_name` writes
/// `<vg>-<lv>[-<layer>]` with every `-` inside a name doubled, so the
/// LV is what lies between the first and the second single `-`.
fn lv_name(dm_name: &str) -> Option<String> {
    let mut parts = vec![String::new()];
    let mut chars = dm_name.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('-', Some('-')) => {
                chars.next();
                parts.last_mut()?.push('-');
            }
            ('-', _) => parts.push(String::new()),
            (c, _) => parts.last_mut()?.push(c),
        }
    }
    parts.into_iter().nth(1).filter(|lv| !lv.is_empty())
}

/// N of a kpartx partition map, whose uuid is `part<N>-<the parent
/// map's uuid>` (multipath-tools kpartx/devmapper.c `UUID_PREFIX`
/// "part%d-"; its udev rules match `part[0-9]*`).
fn partition_map(uuid: &str) -> Option<u32> {
    let rest = uuid.strip_prefix("part")?;
    let (n, parent) = rest.split_once('-')?;
    let digits = !n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit());
    (digits && !parent.is_empty())
        .then(|| n.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A VG's and an LV's uuid, as lvm2 2.03.16 wrote them in a guest.
    const ID: &str = "lWlBztvd5yK7ZUbkIBc5hqgrt20s6z64KJNRxZuohyvbZzibUqDeYjVs3ciyepzx";

    fn ids(name: &str, uuid: &str) -> DmIds {
        DmIds {
            name: Some(name.into()),
            uuid: (!uuid.is_empty()).then(|| uuid.into()),
        }
    }

    fn lvm(name: &str, layer: &str) -> DmRole {
        let uuid = match layer {
            "" => format!("LVM-{ID}"),
            l => format!("LVM-{ID}-{l}"),
        };
        dm_role(&ids(name, &uuid))
    }

    #[test]
    fn the_lvs_people_use_are_volumes() {
        // Linear, striped, thin, RAID1's top, cache's top, a snapshot
        // origin's and the snapshot's own top device.
        for name in [
            "vg-root",
            "vg-thin",
            "vg-r1",
            "vg-cached",
            "vg-lin",
            "vg-snap",
        ] {
            assert_eq!(lvm(name, ""), DmRole::Volume, "{name}");
        }
        // Names with `_` and `-` of their own that lvm2 accepts.
        for name in ["vg-my_data", "my--vg-home_2", "vg_tmeta-data", "vg-a--b_c"] {
            assert_eq!(lvm(name, ""), DmRole::Volume, "{name}");
        }
    }

    #[test]
    fn thin_pool_devices_are_internal() {
        // As lvm2 2.03.16 names them (scenario 28): the sub-LVs carry
        // their layer in the uuid too.
        let layer = |l: &str| DmRole::Internal(Internal::LvmLayer(l.into()));
        assert_eq!(lvm("vg-pool_tmeta", "tmeta"), layer("tmeta"));
        assert_eq!(lvm("vg-pool_tdata", "tdata"), layer("tdata"));
        assert_eq!(lvm("vg-pool-tpool", "tpool"), layer("tpool"));
        assert_eq!(lvm("vg-pool", "pool"), layer("pool"));
        // Older lvm2 gave the sub-LVs the bare id: their names tell.
        let component = |s| DmRole::Internal(Internal::LvmComponent(s));
        assert_eq!(lvm("vg-pool_tmeta", ""), component("_tmeta"));
        assert_eq!(lvm("vg-pool_tdata", ""), component("_tdata"));
    }

    #[test]
    fn raid_cache_and_snapshot_devices_are_internal() {
        let component = |s| DmRole::Internal(Internal::LvmComponent(s));
        let layer = |l: &str| DmRole::Internal(Internal::LvmLayer(l.into()));
        // RAID1 images and metadata: the bare id up to 2.03.16, `-real`
        // after.
        assert_eq!(lvm("vg-r1_rimage_0", ""), component("_rimage"));
        assert_eq!(lvm("vg-r1_rmeta_1", ""), component("_rmeta"));
        assert_eq!(lvm("vg-r1_rimage_0", "real"), layer("real"));
        assert_eq!(lvm("vg-m_mimage_1", ""), component("_mimage"));
        assert_eq!(lvm("vg-m_mlog", ""), component("_mlog"));
        assert_eq!(lvm("vg-r1_rimage_0_imeta", ""), component("_rimage"));
        assert_eq!(lvm("vg-r_imeta", ""), component("_imeta"));
        // A cache LV: its origin, the pool's data and metadata (lvconvert
        // renames the pool `cpool_cpool`), a cachevol, a writecache
        // origin.
        assert_eq!(lvm("vg-cached_corig", "real"), layer("real"));
        assert_eq!(lvm("vg-cached_corig", ""), component("_corig"));
        assert_eq!(lvm("vg-cpool_cpool_cdata", "cdata"), layer("cdata"));
        assert_eq!(lvm("vg-cpool_cpool_cmeta", ""), component("_cmeta"));
        assert_eq!(lvm("vg-cpool_cpool", ""), component("_cpool"));
        assert_eq!(lvm("vg-fast_cvol", "cvol"), layer("cvol"));
        assert_eq!(lvm("vg-fast_cvol", ""), component("_cvol"));
        assert_eq!(lvm("vg-wc_wcorig", ""), component("_wcorig"));
        // A snapshot: the origin's `-real`, the snapshot's `-cow`.
        assert_eq!(lvm("vg-lin-real", "real"), layer("real"));
        assert_eq!(lvm("vg-snap-cow", "cow"), layer("cow"));
        // VDO, the pool spare, a sparse snapshot's virtual origin,
        // pvmove's mirror.
        assert_eq!(lvm("vg-vpool0-vpool", "vpool"), layer("vpool"));
        assert_eq!(lvm("vg-vpool0_vdata", ""), component("_vdata"));
        assert_eq!(lvm("vg-lvol0_pmspare", ""), component("_pmspare"));
        assert_eq!(lvm("vg-lvol1_vorigin", ""), component("_vorigin"));
        assert_eq!(
            lvm("vg-pvmove0", ""),
            DmRole::Internal(Internal::LvmReserved("pvmove"))
        );
    }

    #[test]
    fn the_vg_part_of_a_name_is_not_the_lv() {
        // A VG may be named with a reserved string; its LVs are not sub-LVs.
        assert_eq!(lvm("data_tmeta-root", ""), DmRole::Volume);
        assert_eq!(lvm("my--vg_rimage-home", ""), DmRole::Volume);
        // An LV name with a doubled hyphen before its reserved string.
        assert_eq!(
            lvm("vg-my--pool_tdata", ""),
            DmRole::Internal(Internal::LvmComponent("_tdata"))
        );
        assert_eq!(lv_name("a--b-c--d-real").as_deref(), Some("c-d"));
        assert_eq!(lv_name("novg"), None);
        assert_eq!(lv_name("vg-"), None);
    }

    #[test]
    fn a_short_or_odd_lvm_uuid_is_read_by_its_name() {
        // Not 68 characters before the layer: no layer read into it.
        assert_eq!(dm_role(&ids("vg-lv", "LVM-short")), DmRole::Volume);
        assert_eq!(
            dm_role(&ids("vg-lv", &format!("LVM-{ID}-"))),
            DmRole::Volume
        );
        assert_eq!(
            dm_role(&ids("vg-lv_tmeta", "LVM-short")),
            DmRole::Internal(Internal::LvmComponent("_tmeta"))
        );
        // A name the uuid does not make an LVM one is nobody's sub-LV.
        assert_eq!(dm_role(&ids("vg-pool_tmeta", "")), DmRole::Volume);
        assert_eq!(dm_role(&DmIds::default()), DmRole::Volume);
        // Not UTF-8 boundaries: nothing panics.
        assert_eq!(dm_role(&ids("é-é_é", "LVM-é")), DmRole::Volume);
    }

    #[test]
    fn crypt_multipath_and_partition_maps() {
        let luks = "CRYPT-LUKS2-0f3c9a4e2b8d4d5f9c1e7a6b5d4c3b2a-luks-0f3c";
        assert_eq!(
            dm_role(&ids("luks-0f3c", luks)),
            DmRole::Internal(Internal::Crypt)
        );
        assert_eq!(
            dm_role(&ids("swap", "CRYPT-PLAIN-swap")),
            DmRole::Internal(Internal::Crypt)
        );
        let wwid = "mpath-3600508b400105e210000900000490000";
        assert_eq!(dm_role(&ids("mpatha", wwid)), DmRole::Multipath);
        assert_eq!(
            dm_role(&ids("mpatha1", &format!("part1-{wwid}"))),
            DmRole::Internal(Internal::PartitionMap(1))
        );
        assert_eq!(
            dm_role(&ids("mpatha12", &format!("part12-{wwid}"))),
            DmRole::Internal(Internal::PartitionMap(12))
        );
        // Only part<digits>-<parent> is a partition map.
        for odd in ["part-x", "partx-y", "part1", "part1-", "part99999999999-x"] {
            assert_eq!(dm_role(&ids("x", odd)), DmRole::Volume, "{odd}");
        }
        // A table made by hand.
        assert_eq!(dm_role(&ids("off1", "")), DmRole::Volume);
    }
}
