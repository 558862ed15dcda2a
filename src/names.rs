//! How enums spell themselves: as their serde name, so the human output,
//! CSV and the JSON schema can never drift apart.
//!
//! [`serde_name`] runs a unit variant through a serializer that only keeps
//! the `&'static str` serde hands over (the name after `rename_all` and
//! `rename`), and [`spelled_as_serde!`] gives an enum `as_str` and
//! `Display` from it.

use serde::ser::{self, Impossible, Serialize};
use std::fmt;

/// The serde name of a unit enum variant (`"usb-uas"`, `"image-default"`);
/// `"?"` for anything else, which no caller passes (a test checks each
/// spelled enum).
pub fn serde_name<T: Serialize + ?Sized>(value: &T) -> &'static str {
    value.serialize(VariantName).unwrap_or("?")
}

/// `as_str` and `Display` from the serde name, for unit-only enums.
#[macro_export]
macro_rules! spelled_as_serde {
    ($($t:ty),* $(,)?) => {$(
        impl $t {
            /// The name used in JSON, CSV and the human report.
            pub fn as_str(&self) -> &'static str {
                $crate::names::serde_name(self)
            }
        }
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

struct VariantName;

#[derive(Debug)]
struct NotAUnitVariant;

impl fmt::Display for NotAUnitVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a unit enum variant")
    }
}

impl std::error::Error for NotAUnitVariant {}

impl ser::Error for NotAUnitVariant {
    fn custom<T: fmt::Display>(_: T) -> Self {
        NotAUnitVariant
    }
}

type No = Impossible<&'static str, NotAUnitVariant>;

/// Everything but a unit variant is refused.
macro_rules! refuse {
    ($($f:ident($($a:ty),*)),* $(,)?) => {$(
        fn $f(self, $(_: $a),*) -> Result<&'static str, NotAUnitVariant> {
            Err(NotAUnitVariant)
        }
    )*};
}

impl ser::Serializer for VariantName {
    type Ok = &'static str;
    type Error = NotAUnitVariant;
    type SerializeSeq = No;
    type SerializeTuple = No;
    type SerializeTupleStruct = No;
    type SerializeTupleVariant = No;
    type SerializeMap = No;
    type SerializeStruct = No;
    type SerializeStructVariant = No;

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<&'static str, NotAUnitVariant> {
        Ok(variant)
    }

    refuse!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
    );

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<&'static str, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<&'static str, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<&'static str, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<No, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_tuple(self, _: usize) -> Result<No, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<No, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<No, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<No, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<No, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<No, NotAUnitVariant> {
        Err(NotAUnitVariant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize)]
    #[serde(rename_all = "kebab-case")]
    enum Demo {
        UsbUas,
        #[serde(rename = "4kn")]
        FourKn,
        #[allow(dead_code)]
        Data(u8),
    }

    #[test]
    fn unit_variants_spell_their_serde_name() {
        assert_eq!(serde_name(&Demo::UsbUas), "usb-uas");
        assert_eq!(serde_name(&Demo::FourKn), "4kn");
        assert_eq!(serde_name(&Demo::Data(1)), "?");
        assert_eq!(serde_name(&3u8), "?");
    }
}

/// `word` in single quotes for sh, an embedded quote closed, escaped and
/// reopened: one word whatever it holds (newlines and `$` included).
pub fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// `word` as one shell word for a command people copy: as it is when it
/// is plain, else quoted.
pub fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@,=".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        shell_quote(word)
    }
}

#[cfg(test)]
mod shell_tests {
    use super::*;

    #[test]
    fn a_word_stays_one_word() {
        assert_eq!(shell_word("/dev/sda"), "/dev/sda");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_quote("x\n$(y)"), "'x\n$(y)'");
    }
}
