use super::yaml_stream::yaml_document;
use super::*;
use crate::types::*;
use serde_json::json;

fn values(data: &str) -> Vec<Raw> {
    let mut out = Vec::new();
    split_values(data.as_bytes(), &mut |raw| out.push(raw));
    out
}

fn errors(file: &str, data: &str) -> Vec<String> {
    match parse_documents(file, data.as_bytes()) {
        Ok(docs) => panic!("expected errors, got {docs:?}"),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn json_streams_are_split_with_document_lines() {
    let raw = values("\n\n  {\"schema\": \"a\"}{\"schema\":\"b\"}\n\n{\n\"schema\": \"c\"}\n");
    assert_eq!(
        raw,
        vec![
            Ok((3, json!({"schema": "a"}))),
            Ok((3, json!({"schema": "b"}))),
            Ok((5, json!({"schema": "c"}))),
        ]
    );
}

#[test]
fn malformed_json_reports_file_and_line_of_the_error() {
    // Third document: the JSON error is final.
    let data =
        "{\"schema\":\"a\"}\n{\"schema\":\"b\"}\n{\n  \"schema\": \"c\"\n  \"name\": \"x\"\n}\n";
    assert_eq!(
        errors("pkg/catalog.json", data),
        vec!["pkg/catalog.json:5: invalid JSON: expected `,` or `}` at line 5 column 3"]
    );
    // First document: YAML cannot read it either, so the JSON error stands.
    assert_eq!(
        errors("c.json", "{\"schema\": \"olm.package\" \"name\": \"x\"}"),
        vec!["c.json:1: invalid JSON: expected `,` or `}` at line 1 column 26"]
    );
}

#[test]
fn json_that_yaml_can_read_falls_back_to_yaml() {
    // A trailing comma is fine in a YAML flow mapping, and `---` documents may follow JSON.
    let raw = values("{\"schema\": \"a\",}\n---\nschema: b\n");
    assert_eq!(
        raw,
        vec![
            Ok((1, json!({"schema": "a"}))),
            Ok((3, json!({"schema": "b"})))
        ]
    );
    let raw = values("{\"schema\": \"a\"}\n---\nschema: b\n");
    assert_eq!(
        raw,
        vec![
            Ok((1, json!({"schema": "a"}))),
            Ok((3, json!({"schema": "b"})))
        ]
    );
}

#[test]
fn yaml_documents_are_split_on_separator_lines() {
    let raw = values(
        "---\n# leading comment\nschema: a\n---   # comment\n---\n\nschema: b\nn: 4.10\n--- \r\nschema: c",
    );
    assert_eq!(
        raw,
        vec![
            Ok((3, json!({"schema": "a"}))),
            Ok((7, json!({"schema": "b", "n": 4.1}))),
            Ok((10, json!({"schema": "c"}))),
        ]
    );
}

#[test]
fn blank_and_comment_only_yaml_documents_are_null() {
    let raw = values("schema: a\n---\n\n# nothing\n---\nschema: b\n");
    assert_eq!(
        raw,
        vec![
            Ok((1, json!({"schema": "a"}))),
            Ok((3, Value::Null)),
            Ok((6, json!({"schema": "b"})))
        ]
    );
    assert_eq!(
        errors("x.yaml", "schema: a\n---\n\n# nothing\n"),
        vec!["x.yaml:3: object '{}' is missing root schema field"]
    );
    assert!(values("").is_empty());
    assert!(values("---\n---\n").is_empty());
}

#[test]
fn bad_yaml_separator_is_an_error_on_its_line() {
    assert_eq!(
        errors("a.yaml", "schema: a\n--- schema: b\nname: x\n"),
        vec!["a.yaml:2: invalid Yaml document separator: schema: b"]
    );
    assert_eq!(
        errors("a.yaml", "schema: a\n----\n"),
        vec!["a.yaml:2: invalid Yaml document separator: -"]
    );
}

#[test]
fn malformed_yaml_reports_file_lines_and_later_documents_still_load() {
    let data = "schema: olm.package\nname: a\n---\nschema: olm.package\nname: b\n  bad: indent\n---\nschema: olm.package\nname: [c\n";
    let errs = errors("dir/a.yaml", data);
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(
        errs[0].starts_with("dir/a.yaml:6: invalid YAML: mapping values are not allowed in this context at line 6 column 6"),
        "{}",
        errs[0]
    );
    assert!(
        errs[1].starts_with("dir/a.yaml:10: invalid YAML: "),
        "{}",
        errs[1]
    );
}

#[test]
fn yaml_scalars_follow_the_documented_rules() {
    let raw = values(
        "schema: x\nts: 2025-06-24T14:07:09\nyes: yes\nn: 010\nf: 1.0\nbig: 123456789012345678901234567890\n1: int key\ntrue: bool key\nt: !custom tagged\nq: '4.10'\nnul: ~\n",
    );
    assert_eq!(
        raw,
        vec![Ok((
            1,
            json!({
                "schema": "x", "ts": "2025-06-24T14:07:09", "yes": "yes", "n": "010", "f": 1.0,
                "big": 1.2345678901234568e29, "1": "int key", "true": "bool key", "t": "tagged",
                "q": "4.10", "nul": null
            })
        ))]
    );
    let errs = errors("f.yaml", "schema: x\nv: .inf\n");
    assert!(
        errs[0].starts_with("f.yaml:2: invalid YAML: v: json: unsupported value: +Inf"),
        "{}",
        errs[0]
    );
    let errs = errors("f.yaml", "schema: x\n~: v\n");
    assert!(
        errs[0].starts_with("f.yaml:2: invalid YAML: unsupported map key: null"),
        "{}",
        errs[0]
    );
}

#[test]
fn non_object_documents_and_every_bad_document_are_reported() {
    let data = "- a\n---\nschema: olm.package\nname: ok\n---\nname: no-schema\n---\nschema: olm.bundle\nimage: 3\n";
    assert_eq!(
        errors("b.yaml", data),
        vec![
            "b.yaml:1: json: cannot unmarshal array into Go value of type map[string]interface {}",
            r#"b.yaml:6: object '{"name":"no-schema"}' is missing root schema field"#,
            "b.yaml:8: parse bundle: json: cannot unmarshal number into Go struct field Bundle.image of type string",
        ]
    );
    assert_eq!(
        errors(
            "d.json",
            "{\"schema\":\"olm.package\",\"Schema\":\"olm.package\"}"
        ),
        vec![r#"d.json:1: duplicate keys for key "schema": [Schema schema]"#]
    );
}

#[test]
fn documents_carry_their_origin() {
    let docs = parse_documents(
        "p/c.yaml",
        b"---\nschema: olm.package\nname: p\n---\nschema: custom\nx: 1\n",
    )
    .expect("valid documents");
    let origins: Vec<String> = docs
        .iter()
        .map(|d| match d {
            Document::Package(p) => p.origin.to_string(),
            Document::Meta(m) => m.origin.to_string(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(origins, ["p/c.yaml:2", "p/c.yaml:5"]);
}

#[test]
fn load_error_display() {
    let e = |file: &str, line| {
        LoadError {
            file: file.into(),
            line,
            message: "m".into(),
        }
        .to_string()
    };
    assert_eq!(e("a/b.json", 3), "a/b.json:3: m");
    assert_eq!(e("a/b.json", 0), "a/b.json: m");
    assert_eq!(e("", 0), "m");
}

#[test]
fn lifting_long_scalars_never_changes_the_result() {
    let b64 = "eyJhIjoxfQ".repeat(40);
    let docs = [
        // Lifted: plain values of simple keys, in sequences too.
        format!(
            "schema: olm.bundle\nproperties:\n- type: olm.bundle.object\n  value:\n    data: {b64}==\nicon:\n  base64data: {b64}\r\n"
        ),
        // Not restorable: inside a block scalar, and a plain scalar continued on the next line.
        format!("schema: x\ndescription: |\n  data: {b64}\n"),
        format!("schema: x\nv:\n  data: {b64}\n    continued\n"),
        // Marker text already in the document.
        format!("schema: x\na: {b64}\nb: __olm_registry_lifted_scalar_0\n"),
    ];
    for doc in docs {
        let direct = parse_yaml(doc.as_bytes()).expect("valid YAML");
        assert_eq!(yaml_document(doc.as_bytes(), 1), Ok((1, direct)), "{doc}");
    }
    // Errors are still reported against the original text.
    let bad = format!("schema: x\nv: {b64}\n  bad: indent\n");
    let (line, message) = yaml_document(bad.as_bytes(), 5).expect_err("invalid");
    assert_eq!(line, 7, "{message}");
}

#[test]
fn nesting_past_the_limit_is_refused_by_every_reader() {
    let deep = |levels: usize| "[".repeat(levels) + &"]".repeat(levels);
    let at_limit = format!("{{\"schema\":\"x\",\"v\":{}}}", deep(MAX_DEPTH - 1));
    assert!(parse_documents("c.json", at_limit.as_bytes()).is_ok());
    // The 100th `[` is in column 118; serde_json has looked one further when it is empty.
    for (levels, column) in [(MAX_DEPTH, 119), (100_000, 118)] {
        let json = format!("{{\"schema\":\"x\",\"v\":{}}}", deep(levels));
        assert_eq!(
            errors("c.json", &json),
            [format!(
                "c.json:1: invalid JSON: nesting deeper than 100 levels at line 1 column {column}"
            )]
        );
        // Past the fast reader's subset (a multi-line flow collection), libyaml speaks.
        let yaml = format!("schema: x\nv: [\n{}]\n", deep(levels.min(200)));
        assert_eq!(
            errors("c.yaml", &yaml),
            ["c.yaml:3: invalid YAML: nesting deeper than 100 levels"]
        );
        assert_eq!(
            yaml_to_json(yaml.as_bytes()),
            Err("nesting deeper than 100 levels".to_owned())
        );
    }
    assert_eq!(
        errors("c.yaml", &format!("schema: x\nv: {}\n", deep(100_000))),
        ["c.yaml:2: invalid YAML: nesting deeper than 100 levels"]
    );
    // One level per line: libyaml's events stop it at the line of level 101.
    let lines = format!(
        "schema: x\nv: [\n{}{}]\n",
        "[\n".repeat(100_000),
        "]".repeat(100_000)
    );
    assert_eq!(
        errors("c.yaml", &lines),
        ["c.yaml:101: invalid YAML: nesting deeper than 100 levels"]
    );
    // An alias adds the depth of what it names (reported where that is written).
    let alias = format!("schema: x\na: &a {}\nb: [*a]\n", deep(MAX_DEPTH - 1));
    assert_eq!(
        errors("c.yaml", &alias),
        ["c.yaml:2: invalid YAML: nesting deeper than 100 levels"]
    );
}

#[test]
fn yaml_manifests_convert_to_json() {
    assert_eq!(
        yaml_to_json(b"kind: Foo\nspec: {a: 1}\n---\nkind: Bar\n"),
        Ok(json!({"kind": "Foo", "spec": {"a": 1}}))
    );
    assert!(yaml_to_json(b"kind: [").is_err());
}
