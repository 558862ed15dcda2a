//! `--topology lbs=512,pbs=4096,min=4096,opt=33553920,ao=0`

use super::Topology;
use std::str::FromStr;

/// Fields given on the command line; the rest keep their detected value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopologyOverride {
    pub lbs: Option<u32>,
    pub pbs: Option<u32>,
    pub min: Option<u32>,
    pub opt: Option<u32>,
    pub ao: Option<i64>,
    pub discard: Option<u64>,
}

impl FromStr for TopologyOverride {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut o = TopologyOverride::default();
        let mut seen: Vec<&str> = Vec::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item.split_once('=').ok_or_else(|| {
                format!("'{item}' is not KEY=VALUE (keys: lbs, pbs, min, opt, ao, discard)")
            })?;
            // An alias counts as its key: `lbs=512,logical=4096` is a duplicate too.
            let canonical = canonical_key(key.trim()).ok_or_else(|| {
                format!(
                    "unknown topology field '{}' (keys: lbs, pbs, min, opt, ao, discard)",
                    key.trim()
                )
            })?;
            if seen.contains(&canonical) {
                return Err(format!(
                    "'{canonical}' is given twice in --topology; give each field once"
                ));
            }
            seen.push(canonical);
            let num = |v: &str| -> Result<u64, String> {
                crate::units::parse_size(v)
                    .ok_or_else(|| format!("{key}={v}: not a size in bytes (512, 4096, 4k, 1m...)"))
            };
            let small = |v: &str| -> Result<u32, String> {
                u32::try_from(num(v)?).map_err(|_| format!("{key}={v}: larger than 4 GiB"))
            };
            match canonical {
                "lbs" => o.lbs = Some(small(value)?),
                "pbs" => o.pbs = Some(small(value)?),
                "min" => o.min = Some(small(value)?),
                "opt" => o.opt = Some(small(value)?),
                "ao" => {
                    o.ao = Some(if value.trim() == "-1" {
                        -1
                    } else {
                        num(value)? as i64
                    })
                }
                _ => o.discard = Some(num(value)?),
            }
        }
        if o == TopologyOverride::default() {
            return Err(
                "empty --topology: give at least one of lbs, pbs, min, opt, ao, discard".into(),
            );
        }
        Ok(o)
    }
}

/// The field a key or its alias names.
fn canonical_key(key: &str) -> Option<&'static str> {
    Some(match key {
        "lbs" | "logical" => "lbs",
        "pbs" | "physical" => "pbs",
        "min" | "minimum" => "min",
        "opt" | "optimal" => "opt",
        "ao" | "alignment" => "ao",
        "discard" | "dg" => "discard",
        _ => return None,
    })
}

impl TopologyOverride {
    /// Apply to a detected topology and check the result is one a kernel could report.
    pub fn apply(&self, base: Topology) -> Result<Topology, String> {
        let mut t = base;
        if let Some(lbs) = self.lbs {
            t.logical_block_size = lbs;
            // A new logical size drags the unspecified smaller values up with it.
            t.physical_block_size = t.physical_block_size.max(lbs);
        }
        if let Some(pbs) = self.pbs {
            t.physical_block_size = pbs;
        }
        if let Some(min) = self.min {
            t.minimum_io_size = min;
        }
        if let Some(opt) = self.opt {
            t.optimal_io_size = opt;
        }
        if let Some(ao) = self.ao {
            t.alignment_offset = ao;
        }
        if let Some(d) = self.discard {
            t.discard_granularity = d;
        }
        // The kernel never reports a minimum I/O below the physical block.
        t.minimum_io_size = t.minimum_io_size.max(t.physical_block_size);
        t.validate()?;
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_applies() {
        let o: TopologyOverride = "lbs=512,pbs=4096,min=4096,opt=33553920,ao=0"
            .parse()
            .unwrap();
        let t = o.apply(Topology::IMAGE_DEFAULT).unwrap();
        assert_eq!(t.physical_block_size, 4096);
        assert_eq!(t.optimal_io_size, 33_553_920);
    }

    #[test]
    fn min_raised_to_pbs() {
        let o: TopologyOverride = "pbs=4k".parse().unwrap();
        let t = o.apply(Topology::IMAGE_DEFAULT).unwrap();
        assert_eq!(t.minimum_io_size, 4096);
    }

    #[test]
    fn rejects_bad_input() {
        assert!("lbs".parse::<TopologyOverride>().is_err());
        assert!("foo=1".parse::<TopologyOverride>().is_err());
        assert!("pbs=4x".parse::<TopologyOverride>().is_err());
        let dup = "lbs=512,lbs=4096".parse::<TopologyOverride>().unwrap_err();
        assert!(dup.contains("'lbs' is given twice"), "{dup}");
        assert!("lbs=512,logical=512".parse::<TopologyOverride>().is_err());
        let o: TopologyOverride = "lbs=1000".parse().unwrap();
        assert!(o.apply(Topology::IMAGE_DEFAULT).is_err());
        let o: TopologyOverride = "ao=100".parse().unwrap();
        assert!(o.apply(Topology::IMAGE_DEFAULT).is_err());
    }
}
