//! What each finding code means to the rules and the output beyond its
//! text, severity and summary (the `codes!` table): one row per code in an
//! exhaustive match, so a new code does not compile until its row says
//! whether it is a partition's placement, a cause layers above inherit, a
//! layer's start, damage, something left incomplete, or a note on how the
//! target was read. The rules and the output read these, never lists of
//! their own.

use super::Code;

/// The attributes of one code; `NONE` for a code with none of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meaning {
    /// Decides a partition's placement verdict (`partitions[].status`):
    /// where it starts and ends, and the kernel's own marker.
    pub placement: bool,
    /// A partition's start finding that the layers inside it inherit
    /// (check::inherit): the cause a layer on its own grid names.
    pub start_cause: bool,
    /// A layer's data start finding, dropped when the layer below explains
    /// it (check::inherit).
    pub layer_start: bool,
    /// As an error, the layout or metadata is broken (status `damaged`,
    /// not `misaligned`), said in the target's verdict in these words.
    pub damage: Option<&'static str>,
    /// As info, what it is about could not be followed (status
    /// `incomplete`); the human stack tree shows it without -v.
    pub incomplete: bool,
    /// A note on how the target was read: shown without -v.
    pub how_read: bool,
}

const NONE: Meaning = Meaning {
    placement: false,
    start_cause: false,
    layer_start: false,
    damage: None,
    incomplete: false,
    how_read: false,
};

/// A partition start that decides its placement and is a cause above it.
const START: Meaning = Meaning {
    placement: true,
    start_cause: true,
    ..NONE
};

const PLACEMENT: Meaning = Meaning {
    placement: true,
    ..NONE
};

const LAYER_START: Meaning = Meaning {
    layer_start: true,
    ..NONE
};

const INCOMPLETE: Meaning = Meaning {
    incomplete: true,
    ..NONE
};

const HOW_READ: Meaning = Meaning {
    how_read: true,
    ..NONE
};

const fn damage(words: &'static str) -> Meaning {
    Meaning {
        damage: Some(words),
        ..NONE
    }
}

impl Code {
    /// What this code means to the rules and the output (see `Meaning`).
    pub const fn meaning(self) -> Meaning {
        match self {
            Code::StartMisaligned
            | Code::StartNot4k
            | Code::StartNotOptimal
            | Code::StartNotEraseUnit => START,
            // Info: a cause of nothing worse than info above it.
            Code::StartNot1Mib => Meaning {
                start_cause: true,
                ..NONE
            },
            Code::StartNotPreferredWrite
            | Code::EndNot4k
            | Code::EndNotPhysical
            | Code::SizeNot4k
            | Code::KernelReportsMisaligned
            | Code::ZoneMisalignedStart
            | Code::ZoneMisalignedEnd => PLACEMENT,
            Code::LayerStartMisaligned
            | Code::LayerStartNotEraseUnit
            | Code::LayerStartNot4k
            | Code::LayerStartNotOptimal
            | Code::LayerStartNot1Mib => LAYER_START,
            Code::GptPrimaryInvalid => damage("primary GPT damaged (the backup was used)"),
            Code::GptBackupInvalid => damage("backup GPT damaged"),
            Code::PartitionOverlap => damage("partitions overlap"),
            Code::PartitionOutsideDisk => damage("a partition leaves the disk"),
            Code::PartitionInvalid => damage("an invalid partition entry"),
            Code::ProtectiveMbrWithoutGpt => damage("a protective MBR without its GPT"),
            Code::MetadataInvalid => damage("layer metadata damaged"),
            Code::FsBeyondPartition => damage("a volume larger than its partition"),
            Code::LvmPvMissing
            | Code::MdMemberMissing
            | Code::LayerNotFollowed
            | Code::ImageEncrypted => INCOMPLETE,
            Code::TableNotRead
            | Code::TopologyUnknown
            | Code::ImageSizePartialSector
            | Code::EraseUnitMeasured
            | Code::HostNotJudged
            | Code::MultipathPath => HOW_READ,
            Code::StartNotDiscard
            | Code::EndNotEraseUnit
            | Code::FsDataNotSdBoundary
            | Code::LayoutNotPortable
            | Code::ToolsDisagree
            | Code::TableSectorSizeMismatch
            | Code::HybridMbr
            | Code::NvmeFormat4kAvailable
            | Code::KernelOffsetDiffers
            | Code::NodeBlockSizeDiffers
            | Code::KernelTableDiffers
            | Code::ZoneTableIgnored
            | Code::ZoneExtentMisaligned
            | Code::ZoneFsNotZoned
            | Code::OptimalIoSuspicious
            | Code::MinimumIoSuspicious
            | Code::NonPowerOfTwoIo
            | Code::Hidden4kSuspected
            | Code::IoctlSysfsMismatch
            | Code::LayerStartNotPreferredWrite
            | Code::LvmStripeMisaligned
            | Code::LvmExtentMisaligned
            | Code::MdChunkBelowPhysical
            | Code::MdMembersInconsistent
            | Code::LuksContentsUnchecked
            | Code::BcacheBlockSize
            | Code::ZfsAshiftBelowPhysical
            | Code::ZfsAshiftAbovePhysical
            | Code::BluestoreAllocBelowGrain
            | Code::LuksSectorSize
            | Code::LuksSectorBelowDeclared
            | Code::FsBlockBelowPhysical
            | Code::FsSectionNotEraseUnit
            | Code::FsHiddenSectors
            | Code::FsBackupBootSector
            | Code::FsStripeHintsMissing
            | Code::FsStripeHintsMismatch
            | Code::ImageUnitStraddle
            | Code::HostMisaligned
            | Code::StraddlingIo
            | Code::SubPhysicalWrites
            | Code::SplitIo
            | Code::ZoneCrossingWrites
            | Code::ThinChunkBelowStripe
            | Code::ThinDataStart
            | Code::ThinFsHintsChunk => NONE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Severity;

    #[test]
    fn damage_is_an_error_and_incomplete_is_info_by_default() {
        for &c in Code::ALL {
            let m = c.meaning();
            if m.damage.is_some() {
                assert_eq!(c.default_severity(), Severity::Error, "{c}");
            }
            if m.incomplete || m.how_read {
                assert_eq!(c.default_severity(), Severity::Info, "{c}");
            }
            // A start is either a partition's or a layer's.
            assert!(!(m.start_cause && m.layer_start), "{c}");
        }
    }

    #[test]
    fn every_layer_start_code_is_spelled_layer_start() {
        for &c in Code::ALL {
            if c.meaning().layer_start {
                assert!(c.as_str().starts_with("layer-start-"), "{c}");
            }
            if c.meaning().start_cause {
                assert!(c.as_str().starts_with("start-"), "{c}");
            }
        }
    }
}
