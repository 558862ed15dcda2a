//! `--topology lbs=512,pbs=4096,min=4096,opt=33553920,ao=0`

use crate::iolimits::LimitError;
use crate::iolimits::Topology;
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
    /// A flash card's allocation unit: judged as removable flash's.
    pub erase: Option<u64>,
}

/// Why a `--topology` value was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OverrideError {
    #[error("'{0}' is not KEY=VALUE (keys: lbs, pbs, min, opt, ao, discard, erase)")]
    NotKeyValue(String),
    #[error("unknown topology field '{0}' (keys: lbs, pbs, min, opt, ao, discard, erase)")]
    UnknownField(String),
    #[error("'{0}' is given twice in --topology; give each field once")]
    Duplicate(&'static str),
    #[error("{key}={value}: not a size in bytes (512, 4096, 4k, 1m...)")]
    NotASize { key: String, value: String },
    #[error("{key}={value}: larger than 4 GiB")]
    TooLarge { key: String, value: String },
    #[error("empty --topology: give at least one of lbs, pbs, min, opt, ao, discard, erase")]
    Empty,
}

impl FromStr for TopologyOverride {
    type Err = OverrideError;

    fn from_str(s: &str) -> Result<Self, OverrideError> {
        let mut o = TopologyOverride::default();
        let mut seen: Vec<&str> = Vec::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| OverrideError::NotKeyValue(item.to_string()))?;
            // An alias counts as its key: `lbs=512,logical=4096` is a duplicate too.
            let canonical = canonical_key(key.trim())
                .ok_or_else(|| OverrideError::UnknownField(key.trim().to_string()))?;
            if seen.contains(&canonical) {
                return Err(OverrideError::Duplicate(canonical));
            }
            seen.push(canonical);
            let named = |v: &str| (key.to_string(), v.to_string());
            let num = |v: &str| -> Result<u64, OverrideError> {
                crate::units::parse_size(v).ok_or_else(|| {
                    let (key, value) = named(v);
                    OverrideError::NotASize { key, value }
                })
            };
            let small = |v: &str| -> Result<u32, OverrideError> {
                u32::try_from(num(v)?).map_err(|_| {
                    let (key, value) = named(v);
                    OverrideError::TooLarge { key, value }
                })
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
                "erase" => o.erase = Some(num(value)?),
                _ => o.discard = Some(num(value)?),
            }
        }
        if o == TopologyOverride::default() {
            return Err(OverrideError::Empty);
        }
        Ok(o)
    }
}

/// The fields given, as `--topology` takes them back (`lbs=512,pbs=4096`,
/// in bytes, canonical keys): a command printed for the user to run
/// (`check`'s `next:`) repeats the what-if it was judged under.
impl std::fmt::Display for TopologyOverride {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fields = [
            ("lbs", self.lbs.map(i64::from)),
            ("pbs", self.pbs.map(i64::from)),
            ("min", self.min.map(i64::from)),
            ("opt", self.opt.map(i64::from)),
            ("ao", self.ao),
            ("discard", self.discard.and_then(|d| i64::try_from(d).ok())),
            ("erase", self.erase.and_then(|d| i64::try_from(d).ok())),
        ];
        let given: Vec<String> = fields
            .iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
            .collect();
        f.write_str(&given.join(","))
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
        "erase" | "au" | "erase_unit" => "erase",
        _ => return None,
    })
}

impl TopologyOverride {
    /// Whether the fields given could be a kernel's at all: applied over
    /// the least demanding device (plain blocks of the `lbs` given, else
    /// 512), where every field not given asks the least of them.
    pub fn check(&self) -> Result<(), LimitError> {
        self.apply(Topology::plain(self.lbs.unwrap_or(512)))
            .map(|_| ())
    }

    /// Apply to a detected topology and check the result is one a kernel could report.
    pub fn apply(&self, base: Topology) -> Result<Topology, LimitError> {
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
        if let Some(e) = self.erase {
            t.erase_unit_bytes = e;
            t.removable_flash = e > 0;
        }
        // The kernel never reports a minimum I/O below the physical block.
        t.minimum_io_size = t.minimum_io_size.max(t.physical_block_size);
        t.validate()?;
        Ok(t)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_override_prints_as_it_is_read_back() {
        for spec in [
            "lbs=512,pbs=4096,min=4096,opt=33553920",
            "pbs=4k,ao=-1",
            "discard=1m",
            "erase=12m",
        ] {
            let o: TopologyOverride = spec.parse().unwrap();
            assert_eq!(o.to_string().parse::<TopologyOverride>().unwrap(), o, "{o}");
        }
        let o: TopologyOverride = "physical=4k,ao=3584".parse().unwrap();
        assert_eq!(o.to_string(), "pbs=4096,ao=3584");
    }

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
        assert_eq!(dup, OverrideError::Duplicate("lbs"));
        assert!(dup.to_string().contains("'lbs' is given twice"), "{dup}");
        assert_eq!(
            "lbs=512,logical=512".parse::<TopologyOverride>(),
            Err(OverrideError::Duplicate("lbs"))
        );
        let o: TopologyOverride = "lbs=1000".parse().unwrap();
        assert!(o.apply(Topology::IMAGE_DEFAULT).is_err());
        let o: TopologyOverride = "ao=100".parse().unwrap();
        assert!(o.apply(Topology::IMAGE_DEFAULT).is_err());
    }

    /// What no device could have is refused on its own; what depends on
    /// the device (pbs=512 under a 4 KiB logical block) is not.
    #[test]
    fn checks_what_needs_no_device() {
        for bad in [
            "pbs=3000",
            "lbs=1000",
            "min=1000",
            "ao=100",
            "lbs=4096,pbs=512",
        ] {
            let o: TopologyOverride = bad.parse().unwrap();
            assert!(o.check().is_err(), "{bad}");
        }
        for good in [
            "pbs=512",
            "lbs=4096",
            "ao=3584",
            "opt=33553920",
            "lbs=4096,ao=8192",
        ] {
            let o: TopologyOverride = good.parse().unwrap();
            assert!(o.check().is_ok(), "{good}");
        }
        let o: TopologyOverride = "pbs=512".parse().unwrap();
        assert!(o.apply(Topology::plain(4096)).is_err());
    }
}
