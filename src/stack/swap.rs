//! Linux swap space: a signature and nothing to read behind it.

use super::format::{Found, LayerFormat, Magic};
use super::LayerKind;
use crate::bytes::ReadAt;

/// Swap space: the signature at the end of the first page (4 KiB or 64 KiB).
pub static FORMAT: LayerFormat = LayerFormat {
    magics: &[
        Magic {
            offset: 4096 - 10,
            bytes: b"SWAPSPACE2",
            what: "swap space",
        },
        Magic {
            offset: 4096 - 10,
            bytes: b"SWAP-SPACE",
            what: "swap space",
        },
        Magic {
            offset: 65536 - 10,
            bytes: b"SWAPSPACE2",
            what: "swap space (64 KiB pages)",
        },
    ],
    probe: |r, src| has_swap(src).then(|| Found::from(r.layer(LayerKind::Swap, "swap"))),
    peeks: None,
};

fn has_swap(src: &dyn ReadAt) -> bool {
    [4096u64, 65536].iter().any(|&page| {
        let mut b = [0u8; 10];
        page <= src.len()
            && src.read_exact_at(&mut b, page - 10).is_ok()
            && (&b == b"SWAPSPACE2" || &b == b"SWAP-SPACE")
    })
}
