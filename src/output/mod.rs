//! Human-readable reports: tables, a one-line verdict, reasons underneath;
//! colour only on a terminal.

mod check;
mod probe;
pub mod progress;
mod stack;
pub mod style;
mod topology;

pub use check::render as check;
pub use probe::render as probe;
pub use style::Style;
pub use topology::render as topology;
