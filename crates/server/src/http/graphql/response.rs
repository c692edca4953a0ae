//! The JSON envelope of a GraphQL answer, in catalogd's bytes (catalogd-graphql.md §1.6):
//! `{"data":…,"errors":[…]}`, object members sorted by key, `<`, `>` and `&` escaped,
//! floats in Go's shortest form, a trailing newline.
use super::syntax::Pos;
use catalog::json::{escape_html, write_canonical, write_string};

/// A value of the response.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Out {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Out>),
    /// Members in selection order; written sorted.
    Object(Vec<(String, Out)>),
}

/// One step of an error's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PathStep {
    Key(String),
    Index(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct GraphqlError {
    pub(super) message: String,
    pub(super) locations: Vec<Pos>,
    /// Only execution errors have one.
    pub(super) path: Option<Vec<PathStep>>,
}

impl GraphqlError {
    pub(super) fn at(message: impl Into<String>, pos: Pos) -> GraphqlError {
        GraphqlError {
            message: message.into(),
            locations: vec![pos],
            path: None,
        }
    }

    /// An error tied to no position.
    pub(super) fn general(message: impl Into<String>) -> GraphqlError {
        GraphqlError {
            message: message.into(),
            locations: Vec::new(),
            path: None,
        }
    }
}

/// The whole body: `data` (absent: `null`), then the errors if any, then `\n`.
pub(super) fn envelope(data: Option<&Out>, errors: &[GraphqlError]) -> String {
    let mut out = String::from("{\"data\":");
    match data {
        Some(data) => write(data, &mut out),
        None => out.push_str("null"),
    }
    if !errors.is_empty() {
        out.push_str(",\"errors\":[");
        for (i, error) in errors.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_error(error, &mut out);
        }
        out.push(']');
    }
    out.push_str("}\n");
    escape_html(&out).into_owned()
}

fn write_error(error: &GraphqlError, out: &mut String) {
    out.push_str("{\"message\":");
    write_string(&error.message, out);
    out.push_str(",\"locations\":[");
    for (i, pos) in error.locations.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            "{{\"line\":{},\"column\":{}}}",
            pos.line, pos.column
        ));
    }
    out.push(']');
    if let Some(path) = &error.path {
        out.push_str(",\"path\":[");
        for (i, step) in path.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match step {
                PathStep::Key(key) => write_string(key, out),
                PathStep::Index(index) => out.push_str(&index.to_string()),
            }
        }
        out.push(']');
    }
    out.push('}');
}

fn write(value: &Out, out: &mut String) {
    match value {
        Out::Null => out.push_str("null"),
        Out::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Out::Int(i) => out.push_str(&i.to_string()),
        Out::Float(f) => write_canonical(&serde_json::Value::from(*f), out),
        Out::Str(s) => write_string(s, out),
        Out::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Out::Object(members) => {
            let mut sorted: Vec<&(String, Out)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('{');
            for (i, (key, item)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_sorted_html_escaped_go_floats() {
        let data = Out::Object(vec![
            (
                "z".into(),
                Out::List(vec![Out::Int(3), Out::Float(4.5), Out::Float(2.0)]),
            ),
            ("a".into(), Out::Str("<&>\u{2028}".into())),
            (
                "m".into(),
                Out::Object(vec![("b".into(), Out::Null), ("a".into(), Out::Bool(true))]),
            ),
            ("e".into(), Out::Float(1e21)),
        ]);
        let error = GraphqlError {
            message: "m".into(),
            locations: vec![Pos {
                line: 1,
                column: 27,
            }],
            path: Some(vec![PathStep::Key("a".into()), PathStep::Index(0)]),
        };
        assert_eq!(
            envelope(Some(&data), &[error, GraphqlError::general("g")]),
            "{\"data\":{\"a\":\"\\u003c\\u0026\\u003e\\u2028\",\"e\":1e+21,\"m\":{\"a\":true,\"b\":null},\"z\":[3,4.5,2]},\"errors\":[{\"message\":\"m\",\"locations\":[{\"line\":1,\"column\":27}],\"path\":[\"a\",0]},{\"message\":\"g\",\"locations\":[]}]}\n"
        );
        assert_eq!(envelope(None, &[]), "{\"data\":null}\n");
    }
}
