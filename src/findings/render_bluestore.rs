//! The sentence of `bluestore-alloc-below-grain`, from its facts (kept
//! apart from `render`, which is at its size limit).

use super::facts::Facts;
use crate::units::exact;

/// What the unit is judged against, named by the evidence that gave it.
pub fn alloc_below_grain(f: &Facts) -> String {
    let unit = f.block_size_bytes.unwrap_or(0);
    let grain = f.grain_bytes.unwrap_or(0);
    let by = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    let what = match f.grain_source.as_deref() {
        Some("minimum-io") => format!(
            "the {grain}-byte minimum I/O size the device below prefers (an md chunk or LV stripe: on parity RAID a write of part of a chunk reads before it writes)"
        ),
        Some("declared-physical-block") => format!(
            "the {grain}-byte physical block the disk declares ({}; the kernel reports {})",
            by(&f.declared_by),
            f.physical_block_bytes.unwrap_or(0)
        ),
        Some("nvme-npwg") => {
            format!("the NVMe namespace's {grain}-byte preferred write granularity (NPWG)")
        }
        Some("measured") => format!(
            "the {grain}-byte unit a probe bracketed ({})",
            by(&f.measured_by)
        ),
        _ => format!("the device's {grain}-byte physical block"),
    };
    format!(
        "BlueStore allocates in {unit}-byte units (min_alloc_size, bfm_bytes_per_block in its label), below {what}: every allocation of one unit is a partial write of {}; the unit is fixed when the OSD is made, so the fix is to {}",
        exact(grain),
        f.fix.as_deref().unwrap_or("redeploy the OSD")
    )
}
