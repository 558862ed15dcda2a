//! What the disk itself declares, said next to the unit the probe
//! inferred ("measured 16 KiB; the device declares a preferred write
//! granularity of 16 KiB"). Nothing is said when the device declared
//! nothing that bears on a unit.

use crate::identify::Namespace;
use crate::topology::{Declared, IdentifyProtocol, Limit};
use crate::units::human;

/// The declarations that bear on the unit, in words, from the source
/// that speaks for the medium (`Declared::primary`).
pub fn declarations(says: &Declared) -> Vec<String> {
    match says.primary() {
        Some(IdentifyProtocol::Nvme) => says.nvme.as_ref().map(nvme).unwrap_or_default(),
        Some(IdentifyProtocol::Ata) => physical(says, "IDENTIFY word 106"),
        Some(IdentifyProtocol::Scsi) => {
            let mut out = physical(says, "READ CAPACITY(16)");
            if let Some(g) = says.value(Limit::MinimumIoSize) {
                out.push(format!(
                    "an optimal transfer length granularity of {} (VPD page B0h)",
                    human(g)
                ));
            }
            out
        }
        None => Vec::new(),
    }
}

fn physical(says: &Declared, field: &str) -> Vec<String> {
    says.value(Limit::PhysicalBlockSize)
        .map(|p| format!("a physical block of {} ({field})", human(p)))
        .into_iter()
        .collect()
}

/// NPWG and NPWA when NSFEAT bit 4 says they are valid, else nothing.
fn nvme(ns: &Namespace) -> Vec<String> {
    if !ns.io_opt_fields() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Some(g) = ns.blocks_bytes(ns.npwg) {
        out.push(format!(
            "a preferred write granularity of {} (NPWG)",
            human(g)
        ));
    }
    if let Some(a) = ns.blocks_bytes(ns.npwa) {
        out.push(format!(
            "a preferred write alignment of {} (NPWA)",
            human(a)
        ));
    }
    out
}

/// The clause to add to the unit statement: "; measured 16 KiB; the
/// device declares …", or None when nothing is declared.
pub fn clause(unit: Option<u64>, says: Option<&Declared>) -> Option<String> {
    let d = declarations(says?);
    if d.is_empty() {
        return None;
    }
    let measured = unit
        .map(|u| format!("measured {}; ", human(u)))
        .unwrap_or_default();
    Some(format!(
        "; {measured}the device declares {}",
        d.join(" and ")
    ))
}

#[cfg(test)]
mod tests {
    //! Synthetic Declared: made up for the test, not read from a device.
    use super::*;
    use crate::identify::Identify;
    use crate::identify::{LbaFormat, RelativePerformance};
    use crate::topology::DeclaredLimit;

    fn nvme_says(nsfeat: u8, npwg: u16, npwa: u16) -> Declared {
        Declared {
            nvme: Some(Namespace {
                nsfeat,
                npwg,
                npwa,
                lba_formats: vec![LbaFormat {
                    index: 0,
                    data_bytes: Some(4096),
                    metadata_bytes: 0,
                    relative_performance: RelativePerformance::Best,
                    in_use: true,
                }],
                ..Namespace::default()
            }),
            ..Declared::default()
        }
    }

    #[test]
    fn nvme_says_its_granularity_next_to_the_measured_unit() {
        let s = nvme_says(0x10, 3, 0);
        assert_eq!(
            clause(Some(16384), Some(&s)).as_deref(),
            Some("; measured 16 KiB; the device declares a preferred write granularity of 16 KiB (NPWG) and a preferred write alignment of 4 KiB (NPWA)")
        );
        assert_eq!(
            clause(None, Some(&s)).as_deref(),
            Some("; the device declares a preferred write granularity of 16 KiB (NPWG) and a preferred write alignment of 4 KiB (NPWA)")
        );
    }

    #[test]
    fn nothing_declared_says_nothing() {
        assert_eq!(clause(Some(16384), None), None);
        assert_eq!(clause(Some(16384), Some(&nvme_says(0x00, 3, 3))), None);
        assert_eq!(clause(Some(16384), Some(&Declared::default())), None);
    }

    #[test]
    fn an_ata_drive_declares_its_physical_sector() {
        let s = Declared {
            ata: Some(Identify::default()),
            limits: vec![DeclaredLimit {
                limit: Limit::PhysicalBlockSize,
                source: IdentifyProtocol::Ata,
                fields: "IDENTIFY word 106".into(),
                device_bytes: 4096,
                kernel_bytes: 4096,
                follows: true,
            }],
            ..Declared::default()
        };
        assert_eq!(
            clause(Some(4096), Some(&s)).as_deref(),
            Some("; measured 4 KiB; the device declares a physical block of 4 KiB (IDENTIFY word 106)")
        );
    }
}
