//! The request body as catalogd decodes it (catalogd-graphql.md §1.2–§1.3): one JSON value,
//! a record whose only member read is `query`, matched case-insensitively (the last match
//! wins); `variables`, `operationName` and the rest are ignored, as is text after the value.
use serde::Deserializer as _;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};

/// The body is not the JSON record catalogd wants.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct InvalidBody;

/// The `query` of a body: empty when the record has none (or the body is `null`).
pub(super) fn query_of(body: &[u8]) -> Result<String, InvalidBody> {
    // Go's decoder reads invalid UTF-8 as U+FFFD.
    let text = String::from_utf8_lossy(body);
    let mut values = serde_json::Deserializer::from_str(&text);
    values.deserialize_any(Record).map_err(|_| InvalidBody)
}

struct Record;

impl<'de> Visitor<'de> for Record {
    type Value = String;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object with a string member \"query\"")
    }

    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Ok(String::new())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<String, A::Error> {
        let mut query = String::new();
        while let Some(key) = members.next_key::<String>()? {
            if key.eq_ignore_ascii_case("query") {
                // `null` leaves the member as it was, as Go's decoder does.
                if let Some(value) = members.next_value::<Option<String>>()? {
                    query = value;
                }
            } else {
                members.next_value::<IgnoredAny>()?;
            }
        }
        Ok(query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_decode_as_catalogds() {
        let q = |body: &str| query_of(body.as_bytes());
        assert_eq!(q(r#"{"query":"{ a }"}"#), Ok("{ a }".into()));
        assert_eq!(q(r#"{"QUERY":"x","variables":{"n":2}}"#), Ok("x".into()));
        assert_eq!(q(r#"{"query":"a","Query":"b"}"#), Ok("b".into()));
        assert_eq!(q(r#"{"query":"a","query":null}"#), Ok("a".into()));
        assert_eq!(q(r#"{"query":"a"} trailing {"#), Ok("a".into()));
        for empty in ["{}", "null", r#"{"query":null}"#, r#"{"query":""}"#] {
            assert_eq!(q(empty), Ok(String::new()), "{empty}");
        }
        for invalid in [
            "",
            "  ",
            "{invalid json",
            r#"{"query": 5}"#,
            "[]",
            "\"q\"",
            "5",
            r#"{"query":"a""#,
        ] {
            assert_eq!(q(invalid), Err(InvalidBody), "{invalid}");
        }
        assert_eq!(query_of(b"{\"query\":\"a\xffb\"}"), Ok("a\u{fffd}b".into()));
    }
}
