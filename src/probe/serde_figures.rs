//! How the probe document writes and reads what serde cannot take as the
//! types hold it: durations as seconds, and figures JSON holds as null (a
//! NaN, an interval of one round). Every document type of the probe names
//! these by path (`#[serde(with = "crate::probe::figures::secs")]`); this
//! module imports none of them.

use serde::{Deserialize, Deserializer};

/// A figure JSON holds as null: serde_json writes a NaN or an infinite
/// value (an interval of one round) as null, so it reads back as NaN.
pub fn f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// No interval: what a missing `ci95` reads as, like a null one.
pub fn nan_pair() -> [f64; 2] {
    [f64::NAN; 2]
}

/// An interval whose ends may be null (see `f64_or_nan`).
pub fn pair_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<[f64; 2], D::Error> {
    let [lo, hi] = <[Option<f64>; 2]>::deserialize(d)?;
    Ok([lo.unwrap_or(f64::NAN), hi.unwrap_or(f64::NAN)])
}

/// A duration written in seconds.
pub mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = f64::deserialize(d)?;
        Duration::try_from_secs_f64(s).map_err(serde::de::Error::custom)
    }
}

/// An optional duration in seconds, null for none.
pub mod opt_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_f64(d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        match Option::<f64>::deserialize(d)? {
            Some(s) => Duration::try_from_secs_f64(s)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}
