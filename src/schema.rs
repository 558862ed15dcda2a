//! What every JSON document (docs/json.md) is: the common header, then
//! the body of its kind. The same types write a document and read it
//! back, so a field is added in one place; `#[serde(default)]` on a body
//! lets a schema-1 document that lacks a later field still read.

use serde::{Deserialize, Serialize};

/// The schema version this diskalign writes and reads. Bumped only for
/// incompatible changes (never so far); additions keep it.
pub const SCHEMA_VERSION: u32 = 1;

/// The keys every document starts with.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Header {
    /// `diskalign.check`, `diskalign.topology`, `diskalign.probe`,
    /// `diskalign.compare` or `diskalign.plan`.
    pub schema: String,
    pub schema_version: u32,
    pub diskalign_version: String,
    /// The host the run was made on (uname's nodename); empty in
    /// documents older than the key.
    pub host: String,
    /// When the run started, RFC 3339 in UTC; empty in older documents.
    pub started_at: String,
}

impl Header {
    /// The header this diskalign writes for a document of `schema`.
    pub fn new(schema: &str, host: &str, started_at: String) -> Header {
        Header {
            schema: schema.to_string(),
            schema_version: SCHEMA_VERSION,
            diskalign_version: env!("CARGO_PKG_VERSION").to_string(),
            host: host.to_string(),
            started_at,
        }
    }
}

/// A document: the header, then the body's keys beside it (both
/// flattened into one JSON object).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Document<T> {
    #[serde(flatten)]
    pub header: Header,
    #[serde(flatten)]
    pub body: T,
}

impl<T: Serialize> Document<T> {
    /// The document as `--json` prints it (without the final newline).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a document serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    struct Body {
        things: Vec<u32>,
    }

    #[test]
    fn the_header_comes_first_and_reads_back() {
        let doc = Document {
            header: Header::new("diskalign.test", "db-07", "2026-11-22T21:04:35Z".into()),
            body: Body { things: vec![1] },
        };
        let text = doc.to_json();
        assert!(text.starts_with("{\n  \"schema\": \"diskalign.test\",\n  \"schema_version\": 1,"));
        let back: Document<Body> = serde_json::from_str(&text).unwrap();
        assert_eq!((back.header, back.body), (doc.header, doc.body));
    }

    #[test]
    fn a_document_missing_keys_reads_with_defaults() {
        let back: Document<Body> = serde_json::from_str(r#"{"schema":"x","new":2}"#).unwrap();
        assert_eq!(back.header.host, "");
        assert_eq!(back.body, Body::default());
    }
}
