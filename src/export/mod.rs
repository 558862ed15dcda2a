//! Machine-readable output. The JSON documents are a public, versioned
//! interface (docs/json.md): fields are only ever added.

pub mod csv;
pub mod json;
