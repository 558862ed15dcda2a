//! The one tick rule: an axis offers candidate tick sets, coarse to
//! fine, and gets the finest whose labels all stay clear of each other,
//! measured with [`text_width`]. So a tick label never touches its
//! neighbour, whatever the scale (linear, log, binary bytes) or however
//! wide the figure is.

use super::text::text_width;
use crate::report::html::scale::nice_step;

/// Which way an axis runs: left to right (low is left) or bottom to top
/// (low is down).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    X,
    Y,
}

/// One labelled tick: its value, where it falls (px) and its words.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    pub value: f64,
    pub at: f64,
    pub label: String,
}

/// How much room a tick label takes: along x its width at `size` px,
/// up y one line of `size` px; and `gap` px clear between neighbours.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Room {
    pub axis: Axis,
    pub size: f64,
    pub gap: f64,
}

impl Room {
    fn extent(&self, label: &str) -> f64 {
        match self.axis {
            Axis::X => text_width(label, self.size),
            Axis::Y => self.size,
        }
    }

    fn clear(&self, a: &Tick, b: &Tick) -> bool {
        let need = (self.extent(&a.label) + self.extent(&b.label)) / 2.0 + self.gap;
        (a.at - b.at).abs() >= need
    }
}

/// The ticks of an axis: the finest of `levels` (candidate sets, coarse
/// to fine) whose labels all keep `room` from their neighbours. When none
/// does, the first value of the coarsest. `at` places a value, `label`
/// words it.
pub fn ticks(
    levels: impl IntoIterator<Item = Vec<f64>>,
    at: impl Fn(f64) -> f64,
    label: impl Fn(f64) -> String,
    room: Room,
) -> Vec<Tick> {
    let place = |values: Vec<f64>| -> Vec<Tick> {
        let mut t: Vec<Tick> = values
            .into_iter()
            .map(|value| Tick {
                value,
                at: at(value),
                label: label(value),
            })
            .collect();
        t.sort_by(|a, b| a.at.total_cmp(&b.at));
        t
    };
    let mut best: Option<Vec<Tick>> = None;
    let mut first: Option<f64> = None;
    for level in levels {
        first = first.or(level.first().copied());
        let t = place(level);
        if t.windows(2).all(|w| room.clear(&w[0], &w[1])) {
            best = Some(t);
        }
    }
    let mut kept = best.unwrap_or_else(|| place(first.into_iter().collect()));
    kept.sort_by(|a, b| a.value.total_cmp(&b.value));
    kept
}

/// No level offers more values than this: more would never fit.
const MOST: usize = 200;

/// Round values in `[lo, hi]` for a linear axis: multiples of 1, 2, 2.5
/// or 5 × 10^k, coarse to fine, each step a whole multiple of `finest`
/// (1 for counts: no 2.5 findings).
pub fn linear(lo: f64, hi: f64, finest: f64) -> Vec<Vec<f64>> {
    if !(lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    let mut step = nice_step((hi - lo).max(finest).max(f64::MIN_POSITIVE));
    let mut levels = Vec::new();
    while step >= finest * (1.0 - 1e-9) && step > 0.0 {
        // A hair of slack: 0.3 / 0.1 is 2.9999999999999996.
        let first = (lo / step - 1e-9).ceil() as i64;
        let last = (hi / step + 1e-9).floor() as i64;
        if last - first >= MOST as i64 {
            break;
        }
        let whole = step / finest;
        if (whole - whole.round()).abs() > 1e-9 {
            step = nice_step(step * 0.999 / 2.0);
            continue;
        }
        // 3 × 0.1 is 0.30000000000000004: a fine step is rounded to it.
        let places = (-step.log10()).ceil().clamp(0.0, 15.0) as i32 + 1;
        let round = |k: i64| {
            let m = 10f64.powi(places);
            let v = k as f64 * step;
            if step < 1.0 {
                (v * m).round() / m
            } else {
                v
            }
        };
        levels.push((first..=last).map(round).collect());
        step = nice_step(step * 0.999 / 2.0);
    }
    levels
}

/// Values in `[lo, hi]` for a log axis: every fourth decade, every
/// other one, each, then 2 and 5 of each, then every integer mantissa.
pub fn log(lo: f64, hi: f64) -> Vec<Vec<f64>> {
    // The decades of finite positive doubles: a domain with an end at 0
    // or infinity must not count from i32::MIN to i32::MAX.
    let decade = |x: f64| x.log10().clamp(-330.0, 310.0);
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    let (d0, d1) = (decade(lo).floor() as i32, decade(hi).ceil() as i32);
    let every = |k: i32, ms: &[f64]| -> Vec<f64> {
        (d0..=d1)
            .filter(|d| (d - d0) % k == 0)
            .flat_map(|d| ms.iter().map(move |m| m * 10f64.powi(d)))
            .filter(|v| *v >= lo * 0.999 && *v <= hi * 1.001)
            .take(MOST)
            .collect()
    };
    let pick = |ms: &[f64]| every(1, ms);
    vec![
        every(4, &[1.0]),
        every(2, &[1.0]),
        pick(&[1.0]),
        pick(&[1.0, 2.0, 5.0]),
        pick(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
    ]
}

/// Byte values in `[lo, hi]` for a byte axis: multiples of a power of
/// two (so labels read `8 MiB`, not `8388608`), coarse to fine.
pub fn binary(lo: u64, hi: u64) -> Vec<Vec<f64>> {
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    let mut step = (hi - lo)
        .max(1)
        .checked_next_power_of_two()
        .unwrap_or(1 << 63);
    let mut levels = Vec::new();
    loop {
        let (first, last) = (lo.div_ceil(step), hi / step);
        if last.saturating_sub(first) >= MOST as u64 {
            break;
        }
        levels.push((first..=last).map(|k| (k * step) as f64).collect());
        if step == 1 {
            break;
        }
        step /= 2;
    }
    levels
}

/// Every `2^j`th of the integers `lo..=hi` from `lo`, for an axis whose
/// every integer is a tick but not every one can be labelled (the powers
/// of two of a log₂ axis).
pub fn every_other(lo: u32, hi: u32) -> Vec<Vec<f64>> {
    let span = hi.saturating_sub(lo);
    (0..=span.max(1).ilog2() + 1)
        .rev()
        .map(|j| {
            let every = 1u32 << j;
            (lo..=hi)
                .filter(|e| (e - lo) % every == 0)
                .map(f64::from)
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::html::scale::{Linear, Log};
    use crate::units::{human, KIB, MIB};

    fn values(t: &[Tick]) -> Vec<f64> {
        t.iter().map(|t| t.value).collect()
    }

    const X: Room = Room {
        axis: Axis::X,
        size: 10.0,
        gap: 12.0,
    };
    const Y: Room = Room {
        axis: Axis::Y,
        size: 11.0,
        gap: 14.0,
    };

    #[test]
    fn linear_ticks_are_round_inside_and_as_many_as_fit() {
        let s = Linear::new((0.0, 187_000.0), (300.0, 100.0));
        let t = ticks(
            linear(0.0, 187_000.0, 1.0),
            |v| s.map(v),
            |v| v.to_string(),
            Y,
        );
        assert_eq!(
            values(&t),
            vec![0.0, 25_000.0, 50_000.0, 75_000.0, 100_000.0, 125_000.0, 150_000.0, 175_000.0]
        );
        let p = linear(0.0, 0.3, 0.01);
        assert!(p.iter().any(|l| l.len() == 4 && l[3] == 0.3), "{p:?}");
        // Counts: no step finer than 1.
        let c = linear(0.0, 3.0, 1.0);
        assert_eq!(c.last().unwrap(), &vec![0.0, 1.0, 2.0, 3.0]);
        assert!(linear(0.0, 12.0, 1.0)
            .iter()
            .flatten()
            .all(|v| v.fract() == 0.0));
    }

    #[test]
    fn labels_never_touch_their_neighbours() {
        let s = Linear::new((0.0, 64.0 * MIB as f64), (0.0, 300.0));
        let label = |v: f64| human(v as u64);
        let t = ticks(binary(0, 64 * MIB), |v| s.map(v), label, X);
        assert!(t.len() >= 3, "{t:?}");
        for w in t.windows(2) {
            let room = (text_width(&w[0].label, 10.0) + text_width(&w[1].label, 10.0)) / 2.0;
            assert!(w[1].at - w[0].at >= room + 12.0, "{w:?}");
        }
    }

    #[test]
    fn binary_ticks_are_multiples_of_a_power_of_two() {
        let levels = binary(0, 64 * MIB);
        assert!(levels.contains(&vec![0.0, 32.0 * MIB as f64, 64.0 * MIB as f64]));
        // The zoom around byte 32256: ±8 KiB.
        let levels = binary(24064, 40448);
        assert!(levels.contains(&vec![
            24.0 * KIB as f64,
            28.0 * KIB as f64,
            32.0 * KIB as f64,
            36.0 * KIB as f64
        ]));
        assert!(binary(0, u64::MAX).len() > 1);
        assert_eq!(binary(5, 5).last().unwrap(), &vec![5.0]);
    }

    #[test]
    fn log_ticks_are_decades_then_1_2_5_then_every_mantissa() {
        let l = Log::new((5000.0, 100_000.0), (300.0, 0.0));
        let t = ticks(log(5000.0, 100_000.0), |v| l.map(v), |v| v.to_string(), Y);
        assert_eq!(
            values(&t),
            vec![5000.0, 10_000.0, 20_000.0, 50_000.0, 100_000.0]
        );
        let wide = Log::new((100.0, 1e7), (80.0, 0.0));
        let t = ticks(log(100.0, 1e7), |v| wide.map(v), |v| v.to_string(), Y);
        assert_eq!(values(&t), vec![100.0, 1e4, 1e6]);
        let narrow = log(50_000.0, 100_000.0);
        assert_eq!(narrow.last().unwrap().len(), 6);
    }

    #[test]
    fn extreme_domains_give_few_candidates() {
        assert!(log(5e-324, f64::MAX).iter().all(|l| l.len() <= MOST));
        assert!(log(0.0, f64::INFINITY).iter().all(|l| l.len() <= MOST));
        assert!(linear(f64::NAN, 1.0, 1.0).is_empty());
        assert!(linear(0.0, 1e300, 1.0).iter().all(|l| l.len() <= MOST));
    }

    #[test]
    fn every_other_halves_down_to_every_one() {
        let l = every_other(8, 12);
        assert_eq!(l.last().unwrap(), &vec![8.0, 9.0, 10.0, 11.0, 12.0]);
        assert!(l.contains(&vec![8.0, 10.0, 12.0]));
        assert_eq!(l[0], vec![8.0]);
    }
}
