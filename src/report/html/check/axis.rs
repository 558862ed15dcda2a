//! Byte axes: ticks at round binary values (so their labels read "8 MiB",
//! not "8388608"), drawn with the shared axis.

use super::super::kit;
use super::super::kit::Axis;
use super::super::kit::XAxis;
use super::super::kit::{ticks, Room};
use super::super::scale::Linear;
use super::super::svg::Figure;
use crate::units::human;

/// How a tick is labelled: in binary units (`8 MiB`), or in bytes
/// (`25632768`) where the units would round the ticks together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Labels {
    Binary,
    Bytes,
}

impl Labels {
    fn text(self, v: u64) -> String {
        match self {
            Labels::Binary => human(v),
            Labels::Bytes => v.to_string(),
        }
    }
}

/// Tick labels of a byte axis: 10 px, at least 24 px apart.
const ROOM: Room = Room {
    axis: Axis::X,
    size: 10.0,
    gap: 24.0,
};

/// An x axis of bytes at `y`: a line, ticks labelled as `labels` says
/// and `label` centred under them, as many as fit.
pub fn draw(f: &mut Figure, x: Linear, (lo, hi): (u64, u64), y: f64, labels: Labels, label: &str) {
    let t = ticks(
        kit::binary(lo, hi),
        |v| x.map(v),
        |v| labels.text(v as u64),
        ROOM,
    );
    XAxis {
        from: x.r0,
        to: x.r1,
        y,
        ticks: &t,
        minor: &[],
        size: ROOM.size,
        title: label,
    }
    .draw(f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{KIB, MIB};

    #[test]
    fn byte_ticks_are_binary_multiples_that_fit() {
        let mut f = Figure::new("f", 600.0, 100.0, "t");
        let x = Linear::new((0.0, 64.0 * MIB as f64), (20.0, 580.0));
        draw(&mut f, x, (0, 64 * MIB), 50.0, Labels::Binary, "bytes");
        let svg = f.finish();
        assert!(svg.contains(">32 MiB</text>"), "{svg}");
        assert!(svg.contains(">64 MiB</text>"), "{svg}");
        // The zoom around byte 32256: ±8 KiB, in bytes.
        let mut f = Figure::new("f", 560.0, 100.0, "t");
        let x = Linear::new((24064.0, 40448.0), (20.0, 540.0));
        draw(&mut f, x, (24064, 40448), 50.0, Labels::Bytes, "bytes");
        assert!(f.finish().contains(&format!(">{}</text>", 32 * KIB)));
    }
}
