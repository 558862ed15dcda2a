//! The numbers behind the figures: scales from data to pixels, round
//! steps and colours (the ticks are [`super::kit::ticks`]). Tested apart from the SVG.

/// A linear map of `[d0, d1]` onto `[r0, r1]` (r1 < r0 for a y axis).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Linear {
    pub d0: f64,
    pub d1: f64,
    pub r0: f64,
    pub r1: f64,
}

impl Linear {
    pub fn new(domain: (f64, f64), range: (f64, f64)) -> Linear {
        let (mut d0, mut d1) = domain;
        if !(d0.is_finite() && d1.is_finite()) {
            (d0, d1) = (0.0, 1.0);
        }
        if d0 == d1 {
            // One value: put it in the middle of a unit-wide domain.
            (d0, d1) = (d0 - 0.5, d1 + 0.5);
        }
        Linear {
            d0,
            d1,
            r0: range.0,
            r1: range.1,
        }
    }

    pub fn map(&self, x: f64) -> f64 {
        self.r0 + (x - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
    }
}

/// A log10 scale for rates that span block sizes (512 B and 64 KiB IOPS
/// differ tenfold): equal ratios are equal distances, so a 20 % penalty
/// looks the same on every line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Log {
    pub lo: f64,
    pub hi: f64,
    lin: Linear,
}

impl Log {
    pub fn new(domain: (f64, f64), range: (f64, f64)) -> Log {
        let (lo, hi) = domain;
        Log {
            lo,
            hi,
            lin: Linear::new((lo.log10(), hi.log10()), range),
        }
    }

    pub fn map(&self, x: f64) -> f64 {
        self.lin.map(x.max(self.lo * 1e-3).log10())
    }

    /// `x` held to the domain first, so a whisker past an end stops at
    /// the edge. Not `clamp`: a saved document may give a reversed domain.
    pub fn map_within(&self, x: f64) -> f64 {
        let (a, b) = (self.lo.min(self.hi), self.lo.max(self.hi));
        self.map(x.max(a).min(b))
    }

    /// The pixel range the domain maps onto.
    pub fn range(&self) -> (f64, f64) {
        (self.lin.r0, self.lin.r1)
    }
}

/// The round step (1, 2, 2.5 or 5 × 10^k) nearest above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .find(|n| *n >= f - 1e-9)
        .unwrap_or(10.0);
    nice * mag
}

/// A domain from 0 (or the data's low end) to a little above the data's
/// high end, rounded up to a tick; for IOPS and MiB/s axes.
#[cfg(test)]
pub fn zero_based(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let hi = values.filter(|v| v.is_finite()).fold(0.0, f64::max);
    if hi <= 0.0 {
        return (0.0, 1.0);
    }
    let step = nice_step(hi / 5.0);
    (0.0, (hi / step).ceil() * step)
}

/// Evenly spaced slots for categories (block sizes, offsets): `n` bands
/// across `[r0, r1]`, each with its start and width.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Band {
    pub n: usize,
    pub r0: f64,
    pub r1: f64,
}

impl Band {
    pub fn width(&self) -> f64 {
        (self.r1 - self.r0) / self.n.max(1) as f64
    }

    /// The start of band `i`.
    pub fn start(&self, i: usize) -> f64 {
        self.r0 + i as f64 * self.width()
    }

    /// The middle of band `i`.
    pub fn mid(&self, i: usize) -> f64 {
        self.start(i) + self.width() / 2.0
    }
}

/// An sRGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }

    /// Black or white, whichever reads better on this colour.
    pub fn ink(self) -> &'static str {
        let l = 0.299 * f64::from(self.0) + 0.587 * f64::from(self.1) + 0.114 * f64::from(self.2);
        if l > 140.0 {
            "#000000"
        } else {
            "#ffffff"
        }
    }
}

/// Nine stops along viridis (dark purple → blue → green → yellow), a
/// perceptually uniform scale that colour-blind readers and greyscale
/// prints can follow.
#[cfg(test)]
const VIRIDIS: [Rgb; 9] = [
    Rgb(68, 1, 84),
    Rgb(71, 44, 122),
    Rgb(59, 81, 139),
    Rgb(44, 113, 142),
    Rgb(33, 144, 141),
    Rgb(39, 173, 129),
    Rgb(92, 200, 99),
    Rgb(170, 220, 50),
    Rgb(253, 231, 37),
];

/// The viridis colour at `t` in [0, 1] (clamped; NaN gives the low end).
#[cfg(test)]
pub fn viridis(t: f64) -> Rgb {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let x = t * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |p: u8, q: u8| (f64::from(p) + (f64::from(q) - f64::from(p)) * f).round() as u8;
    Rgb(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Five stops of a diverging scale for a signed change centred on 0:
/// blue (faster) through a light neutral to red (slower). Blue against
/// red stays apart with every common colour-vision deficiency (no
/// red–green), and the two ends differ in lightness from the centre, so a
/// greyscale print still shows how far from 0 a tile is.
const DIVERGING: [Rgb; 5] = [
    Rgb(33, 102, 172),
    Rgb(146, 197, 222),
    Rgb(247, 247, 247),
    Rgb(244, 165, 130),
    Rgb(178, 24, 43),
];

/// The diverging colour at `t` in [−1, 1]: −1 blue, 0 neutral, 1 red
/// (clamped; NaN gives the neutral centre).
pub fn diverging(t: f64) -> Rgb {
    let t = if t.is_nan() { 0.0 } else { t.clamp(-1.0, 1.0) };
    let x = (t + 1.0) / 2.0 * (DIVERGING.len() - 1) as f64;
    let i = (x.floor() as usize).min(DIVERGING.len() - 2);
    let f = x - i as f64;
    let (a, b) = (DIVERGING[i], DIVERGING[i + 1]);
    let mix = |p: u8, q: u8| (f64::from(p) + (f64::from(q) - f64::from(p)) * f).round() as u8;
    Rgb(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Which edge of an axis a value lies beyond.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clip {
    Low,
    High,
}

impl Clip {
    pub fn as_str(self) -> &'static str {
        match self {
            Clip::Low => "low",
            Clip::High => "high",
        }
    }
}

impl Log {
    /// Whether `x` lies beyond an end of the domain (and is drawn at the
    /// edge by `map_within`); a value ≤ 0 lies below any log axis.
    pub fn clipped(&self, x: f64) -> Option<Clip> {
        let (a, b) = (self.lo.min(self.hi), self.lo.max(self.hi));
        if x.is_nan() {
            None
        } else if x < a * (1.0 - 1e-9) {
            Some(Clip::Low)
        } else if x > b * (1.0 + 1e-9) {
            Some(Clip::High)
        } else {
            None
        }
    }
}

/// The Okabe–Ito palette: eight colours told apart with every common
/// colour-vision deficiency, for lines and categories.
pub const CATEGORICAL: [Rgb; 8] = [
    Rgb(0, 114, 178),
    Rgb(230, 159, 0),
    Rgb(0, 158, 115),
    Rgb(204, 121, 167),
    Rgb(86, 180, 233),
    Rgb(213, 94, 0),
    Rgb(240, 228, 66),
    Rgb(0, 0, 0),
];

/// The `i`th categorical colour (cycling).
pub fn category(i: usize) -> Rgb {
    CATEGORICAL[i % CATEGORICAL.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_maps_ends_and_middle() {
        let s = Linear::new((0.0, 100.0), (300.0, 100.0));
        assert_eq!(s.map(0.0), 300.0);
        assert_eq!(s.map(100.0), 100.0);
        assert_eq!(s.map(50.0), 200.0);
    }

    #[test]
    fn a_one_value_domain_does_not_divide_by_zero() {
        let s = Linear::new((5.0, 5.0), (0.0, 10.0));
        assert_eq!(s.map(5.0), 5.0);
        let s = Linear::new((f64::NAN, 1.0), (0.0, 10.0));
        assert!(s.map(0.5).is_finite());
    }

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(0.23), 0.25);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(zero_based([0.0, 187_000.0].into_iter()), (0.0, 200_000.0));
    }

    #[test]
    fn bands_split_the_range() {
        let b = Band {
            n: 4,
            r0: 100.0,
            r1: 500.0,
        };
        assert_eq!(b.width(), 100.0);
        assert_eq!(b.start(2), 300.0);
        assert_eq!(b.mid(0), 150.0);
    }

    #[test]
    fn viridis_runs_dark_to_light_and_clamps() {
        assert_eq!(viridis(0.0), Rgb(68, 1, 84));
        assert_eq!(viridis(1.0), Rgb(253, 231, 37));
        assert_eq!(viridis(2.0), viridis(1.0));
        assert_eq!(viridis(f64::NAN), viridis(0.0));
        assert_eq!(viridis(0.0).ink(), "#ffffff");
        assert_eq!(viridis(1.0).ink(), "#000000");
        assert_eq!(Rgb(0, 114, 178).hex(), "#0072b2");
    }

    #[test]
    fn the_diverging_scale_is_centred_on_0_and_clamps() {
        assert_eq!(diverging(0.0), Rgb(247, 247, 247));
        assert_eq!(diverging(f64::NAN), diverging(0.0));
        assert_eq!(diverging(-1.0), Rgb(33, 102, 172));
        assert_eq!(diverging(1.0), Rgb(178, 24, 43));
        assert_eq!(diverging(3.0), diverging(1.0));
        assert_eq!(diverging(0.5), Rgb(244, 165, 130));
        // Symmetric distance from the centre: the ends are darker than it.
        let light = |c: Rgb| u32::from(c.0) + u32::from(c.1) + u32::from(c.2);
        assert!(light(diverging(0.8)) < light(diverging(0.2)));
        assert!(light(diverging(-0.8)) < light(diverging(-0.2)));
    }

    #[test]
    fn values_past_a_log_axis_are_clipped_low_or_high() {
        let y = Log::new((10.0, 1000.0), (300.0, 0.0));
        assert_eq!(y.clipped(5.0), Some(Clip::Low));
        assert_eq!(y.clipped(0.0), Some(Clip::Low));
        assert_eq!(y.clipped(2000.0), Some(Clip::High));
        assert_eq!(y.clipped(10.0), None);
        assert_eq!(y.clipped(f64::NAN), None);
        assert_eq!(y.map_within(5.0), y.map(10.0));
        // A reversed domain clips the same way.
        assert_eq!(
            Log::new((1000.0, 10.0), (0.0, 300.0)).clipped(5.0),
            Some(Clip::Low)
        );
    }
}
