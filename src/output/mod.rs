//! Human-readable reports: tables, a one-line verdict, reasons underneath;
//! colour only on a terminal.

mod check;
pub mod style;
mod topology;

pub use check::render as check;
pub use style::Style;
pub use topology::render as topology;
