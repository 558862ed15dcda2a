//! LVM2's text metadata format: `name { ... }` sections, `key = value`
//! entries, values that are integers, "strings" or `[lists]`, `#` comments.
//! A small recursive-descent parser with a depth limit; never panics.

/// One value of the metadata.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Str(String),
    List(Vec<Value>),
    Section(Section),
}

/// The entries of a section, in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Section(pub Vec<(String, Value)>);

impl Section {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    pub fn int(&self, key: &str) -> Option<i64> {
        match self.get(key)? {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
    pub fn str(&self, key: &str) -> Option<&str> {
        match self.get(key)? {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn list(&self, key: &str) -> Option<&[Value]> {
        match self.get(key)? {
            Value::List(l) => Some(l),
            _ => None,
        }
    }
    pub fn section(&self, key: &str) -> Option<&Section> {
        match self.get(key)? {
            Value::Section(s) => Some(s),
            _ => None,
        }
    }
    /// The sub-sections, with their names.
    pub fn sections(&self) -> impl Iterator<Item = (&str, &Section)> {
        self.0.iter().filter_map(|(k, v)| match v {
            Value::Section(s) => Some((k.as_str(), s)),
            _ => None,
        })
    }
}

/// Nesting deeper than this is refused (real metadata uses 5 levels).
const MAX_DEPTH: usize = 32;

/// A parse error with the byte offset in the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextError {
    pub offset: usize,
    pub message: String,
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn err<T>(&self, message: impl Into<String>) -> Result<T, TextError> {
        Err(TextError {
            offset: self.pos,
            message: message.into(),
        })
    }

    /// Skip whitespace and comments.
    fn skip(&mut self) {
        while let Some(&c) = self.s.get(self.pos) {
            if c == b'#' {
                while self.s.get(self.pos).is_some_and(|&c| c != b'\n') {
                    self.pos += 1;
                }
            } else if c.is_ascii_whitespace() || c == 0 {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip();
        self.s.get(self.pos).copied()
    }

    fn ident(&mut self) -> Result<String, TextError> {
        self.skip();
        let start = self.pos;
        while self
            .s
            .get(self.pos)
            .is_some_and(|&c| c.is_ascii_alphanumeric() || b"_.+-".contains(&c))
        {
            self.pos += 1;
        }
        if start == self.pos {
            return self.err("expected a name");
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
    }

    fn string(&mut self) -> Result<String, TextError> {
        self.pos += 1; // the opening quote
        let mut out = Vec::new();
        loop {
            match self.s.get(self.pos) {
                None => return self.err("unterminated string"),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(String::from_utf8_lossy(&out).into_owned());
                }
                Some(b'\\') => {
                    match self.s.get(self.pos + 1) {
                        Some(&c) => out.push(c),
                        None => return self.err("unterminated string"),
                    }
                    self.pos += 2;
                }
                Some(&c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn number(&mut self) -> Result<i64, TextError> {
        let start = self.pos;
        if self.s.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        while self
            .s
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_digit() || *c == b'.')
        {
            self.pos += 1;
        }
        let text = String::from_utf8_lossy(&self.s[start..self.pos]);
        // Floats appear only in fields we do not use; keep their integer part.
        let int = text.split('.').next().unwrap_or("");
        match int.parse() {
            Ok(v) => Ok(v),
            Err(_) => {
                self.pos = start;
                self.err(format!("bad number {text:?}"))
            }
        }
    }

    fn value(&mut self) -> Result<Value, TextError> {
        match self.peek() {
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    match self.peek() {
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(Value::List(items));
                        }
                        Some(b',') => self.pos += 1,
                        Some(b'[') => return self.err("nested lists are not LVM metadata"),
                        None => return self.err("unterminated list"),
                        Some(_) => items.push(self.value()?),
                    }
                }
            }
            Some(c) if c.is_ascii_digit() || c == b'-' => Ok(Value::Int(self.number()?)),
            Some(_) => self.err("expected a value"),
            None => self.err("expected a value, found the end"),
        }
    }

    fn body(&mut self, depth: usize, closing: bool) -> Result<Section, TextError> {
        if depth > MAX_DEPTH {
            return self.err("sections nested too deeply");
        }
        let mut entries = Vec::new();
        loop {
            match self.peek() {
                None if closing => return self.err("unterminated section"),
                None => return Ok(Section(entries)),
                Some(b'}') if closing => {
                    self.pos += 1;
                    return Ok(Section(entries));
                }
                Some(_) => {
                    let key = self.ident()?;
                    match self.peek() {
                        Some(b'{') => {
                            self.pos += 1;
                            let s = self.body(depth + 1, true)?;
                            entries.push((key, Value::Section(s)));
                        }
                        Some(b'=') => {
                            self.pos += 1;
                            let v = self.value()?;
                            entries.push((key, v));
                        }
                        _ => return self.err(format!("expected '=' or '{{' after {key:?}")),
                    }
                }
            }
        }
    }
}

/// Parse a whole metadata text.
pub fn parse(text: &[u8]) -> Result<Section, TextError> {
    Parser { s: text, pos: 0 }.body(0, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"vg0 {
id = "DS48LQ"
seqno = 2
status = ["RESIZEABLE", "READ"]
extent_size = 2048	# 1 Megabytes
physical_volumes {
pv0 {
pe_start = 2048
}
}
logical_volumes {
lv0 {
segment1 {
stripes = [
"pv0", 0,
"pv1", 0
]
}
}
}
}
# Generated by LVM2
contents = "Text Format \"Volume\" Group"
creation_time = 1795249337	# Sat Nov 21
"#;

    #[test]
    fn parses_real_shape() {
        let top = parse(SAMPLE.as_bytes()).unwrap();
        let vg = top.section("vg0").unwrap();
        assert_eq!(vg.int("extent_size"), Some(2048));
        assert_eq!(vg.str("id"), Some("DS48LQ"));
        let pv0 = vg
            .section("physical_volumes")
            .unwrap()
            .section("pv0")
            .unwrap();
        assert_eq!(pv0.int("pe_start"), Some(2048));
        let seg = vg
            .section("logical_volumes")
            .unwrap()
            .section("lv0")
            .unwrap()
            .section("segment1")
            .unwrap();
        assert_eq!(seg.list("stripes").unwrap().len(), 4);
        assert_eq!(top.str("contents"), Some("Text Format \"Volume\" Group"));
    }

    #[test]
    fn every_truncation_is_an_error_or_a_value_never_a_panic() {
        for n in 0..SAMPLE.len() {
            let _ = parse(&SAMPLE.as_bytes()[..n]);
        }
        assert!(parse(b"a {").is_err());
        assert!(parse(b"a = \"x").is_err());
        assert!(parse(b"a = [1, [2]]").is_err());
        let deep = "a {".repeat(100) + &"}".repeat(100);
        assert!(parse(deep.as_bytes()).is_err());
    }
}
