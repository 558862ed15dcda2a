//! The cluster map's shape (`Geometry`: cluster size, L2 entry width,
//! the unit a read is split at, where a compressed cluster's bytes are)
//! and where one unit of the guest reads from (`Place`).

/// `QCOW_EXTL2_SUBCLUSTERS_PER_CLUSTER`.
pub(super) const SUBCLUSTERS: u64 = 32;
/// `QCOW2_COMPRESSED_SECTOR_SIZE`: compressed sizes count these.
const COMPRESSED_SECTOR: u64 = 512;

/// The cluster map's shape: cluster size and L2 entry width.
#[derive(Clone, Copy, Debug)]
pub(super) struct Geometry {
    pub(super) cluster_bits: u32,
    /// Extended L2 entries: 128 bits, 32 subclusters (spec, "Extended L2
    /// Entries").
    pub(super) extended: bool,
}

impl Geometry {
    pub(super) fn cluster_bytes(self) -> u64 {
        1 << self.cluster_bits
    }
    pub(super) fn cluster_mask(self) -> u64 {
        self.cluster_bytes() - 1
    }
    pub(super) fn entry_bytes(self) -> u64 {
        if self.extended {
            16
        } else {
            8
        }
    }
    /// Entries in one L2 table (one cluster).
    pub(super) fn l2_entries(self) -> u64 {
        self.cluster_bytes() / self.entry_bytes()
    }
    /// Guest bytes one L1 entry maps: a full L2 table of clusters.
    pub(super) fn l1_span(self) -> u64 {
        self.l2_entries() << self.cluster_bits
    }
    /// The unit a guest read is split at: the subcluster with extended L2
    /// entries (each has its own state), else the cluster.
    pub(super) fn unit_bytes(self) -> u64 {
        if self.extended {
            self.cluster_bytes() / SUBCLUSTERS
        } else {
            self.cluster_bytes()
        }
    }
    /// Where a compressed cluster's data is and how many bytes it may take
    /// (qcow2-cluster.c `qcow2_parse_compressed_l2_entry`, with qcow2.c's
    /// `csize_shift`, `csize_mask`): the low `62 - (cluster_bits - 8)` bits
    /// are the host byte, the bits above up to 61 count the 512-byte
    /// sectors after the one holding that byte.
    pub(super) fn compressed(self, entry: u64) -> (u64, u64) {
        let shift = 62 - (self.cluster_bits - 8);
        let offset = entry & ((1 << shift) - 1);
        let sectors = ((entry >> shift) & ((1 << (self.cluster_bits - 8)) - 1)) + 1;
        let bytes = sectors * COMPRESSED_SECTOR - (offset % COMPRESSED_SECTOR);
        (offset, bytes)
    }
}

/// Where one unit of the guest reads from (qcow2.h
/// `qcow2_get_subcluster_type`, qcow2.c `qcow2_co_preadv_part`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// A zero cluster or subcluster.
    Zeros,
    /// Unallocated: the backing file, or zeros.
    Backing,
    /// Allocated: this byte of the data file (the image file itself when
    /// there is no external one).
    Host(u64),
    /// A compressed cluster: its descriptor (the entry without its flag
    /// bits) and the byte of its L2 entry.
    Compressed { descriptor: u64, entry_at: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_descriptors_follow_the_cluster_size() {
        let g = Geometry {
            cluster_bits: 16,
            extended: false,
        };
        // x = 62 - 8 = 54: offset in bits 0-53, sectors in 54-61.
        let entry = 3u64 << 54 | 1000;
        assert_eq!(g.compressed(entry), (1000, 4 * 512 - 1000 % 512));
        let g = Geometry {
            cluster_bits: 21,
            extended: false,
        };
        assert_eq!(g.compressed(0x3fff_ffff_ffff_ffff).1, 8192 * 512 - 511);
    }
}
