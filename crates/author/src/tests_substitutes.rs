//! The substitutes template and `convert-template`, with the stub renderer of tests.rs. The
//! vectors are derived from opm v1.73's `alpha/template/substitutes` (code and unit tests:
//! TestRender, TestProcessSubstitution, TestBoundaryCases) and its converter.
use super::Error;
use super::template::{Kind, convert};
use super::tests::{bundle_json, channels, render, stub, text};

fn bundle_entry(v: &str) -> String {
    format!(
        "- {{schema: olm.bundle, name: op.v{v}, package: op, image: \"reg.example/op-bundle:v{v}\", properties: [{{type: olm.package, value: {{packageName: op, version: \"{v}\"}}}}]}}\n"
    )
}

/// Package `op`, channel `stable` = [1.0.0; 1.1.0 replaces 1.0.0; 1.2.0 replaces 1.1.0 with
/// a skipRange], its three bundles, and `substitutions`.
fn template(substitutions: &str) -> String {
    format!(
        "schema: olm.template.substitutes
entries:
- {{schema: olm.package, name: op, defaultChannel: stable}}
- schema: olm.channel
  package: op
  name: stable
  entries:
  - {{name: op.v1.0.0}}
  - {{name: op.v1.1.0, replaces: op.v1.0.0}}
  - {{name: op.v1.2.0, replaces: op.v1.1.0, skipRange: \">=1.0.0 <1.2.0\"}}
{}{}{}substitutions: {substitutions}
",
        bundle_entry("1.0.0"),
        bundle_entry("1.1.0"),
        bundle_entry("1.2.0")
    )
}

const REBUILD: &str = r#"{name: "reg.example/op-bundle:v1.1.0_2", base: op.v1.1.0}"#;

#[test]
fn sub1_a_rebuild_takes_the_place_of_its_base() {
    let dc = render(&template(&format!("[{REBUILD}]"))).unwrap();
    let expected = format!(
        r#"{{
    "schema": "olm.package",
    "name": "op",
    "defaultChannel": "stable"
}}
{{
    "schema": "olm.channel",
    "name": "stable",
    "package": "op",
    "entries": [
        {{
            "name": "op.v1.0.0"
        }},
        {{
            "name": "op.v1.1.0"
        }},
        {{
            "name": "op.v1.2.0",
            "replaces": "op-v1.1.0-2",
            "skips": [
                "op.v1.1.0"
            ],
            "skipRange": ">=1.0.0 <1.2.0"
        }},
        {{
            "name": "op-v1.1.0-2",
            "replaces": "op.v1.0.0",
            "skips": [
                "op.v1.1.0"
            ]
        }}
    ]
}}
{{
    "schema": "olm.bundle",
    "name": "op-v1.1.0-2",
    "package": "op",
    "image": "reg.example/op-bundle:v1.1.0_2",
    "properties": [
        {{
            "type": "olm.package",
            "value": {{
                "packageName": "op",
                "version": "1.1.0",
                "release": "2"
            }}
        }}
    ]
}}
{}{}{}"#,
        bundle_json("1.0.0"),
        bundle_json("1.1.0"),
        bundle_json("1.2.0")
    );
    assert_eq!(text(&dc, false), expected);
    let yaml = text(&dc, true);
    let channel = "---
entries:
- name: op.v1.0.0
- name: op.v1.1.0
- name: op.v1.2.0
  replaces: op-v1.1.0-2
  skipRange: '>=1.0.0 <1.2.0'
  skips:
  - op.v1.1.0
- name: op-v1.1.0-2
  replaces: op.v1.0.0
  skips:
  - op.v1.1.0
name: stable
package: op
schema: olm.channel
";
    assert!(yaml.contains(channel), "{yaml}");
}

#[test]
fn sub2_substitutions_chain_in_template_order() {
    // upstream "render with multiple substitutions": the second substitutes the first.
    let input = template(
        r#"[{name: "reg.example/op-bundle:v1.2.0_alpha", base: op.v1.1.0}, {name: "reg.example/op-bundle:v1.3.0_alpha", base: op-v1.2.0-alpha}]"#,
    )
    .replace(
        "  - {name: op.v1.2.0, replaces: op.v1.1.0, skipRange: \">=1.0.0 <1.2.0\"}\n",
        "",
    )
    .replace(&bundle_entry("1.2.0"), "");
    let dc = render(&input).unwrap();
    assert_eq!(
        channels(&dc),
        [
            "stable: op.v1.0.0; op.v1.1.0; op-v1.2.0-alpha; op-v1.3.0-alpha replaces op.v1.0.0 skips [op.v1.1.0, op-v1.2.0-alpha]"
        ]
    );
    // Entries that skipped the base skip the substitute instead.
    let input = template(&format!("[{REBUILD}]")).replace(
        "{name: op.v1.2.0, replaces: op.v1.1.0,",
        "{name: op.v1.2.0, replaces: op.v1.0.0, skips: [op.v1.1.0],",
    );
    assert_eq!(
        channels(&render(&input).unwrap()),
        [
            "stable: op.v1.0.0; op.v1.1.0; op.v1.2.0 replaces op.v1.0.0 skips [op-v1.1.0-2]; op-v1.1.0-2 replaces op.v1.0.0 skips [op.v1.1.0]"
        ]
    );
    // No substitutions: the entries as they are.
    assert_eq!(
        channels(&render(&template("[]")).unwrap()),
        ["stable: op.v1.0.0; op.v1.1.0 replaces op.v1.0.0; op.v1.2.0 replaces op.v1.1.0"]
    );
}

#[test]
fn sub3_substitution_errors() {
    let wrap = |base: &str, name: &str, e: &str| {
        format!("render: error processing substitution {base:?} -> {name:?}: {e}")
    };
    let image = "reg.example/op-bundle:v1.1.0_2";
    let cases = [
        (
            format!("[{REBUILD}, {{name: other, base: op.v1.1.0}}]"),
            r#"render: cannot reuse the same substitution base "op.v1.1.0""#.to_owned(),
        ),
        (
            format!("[{REBUILD}, {{name: \"{image}\", base: op.v1.0.0}}]"),
            format!(
                "render: cannot reuse the same substitution {image:?} for different bases (\"op.v1.1.0\" and \"op.v1.0.0\")"
            ),
        ),
        (
            "[{base: op.v1.1.0}]".to_owned(),
            wrap("op.v1.1.0", "", "substitution name cannot be empty"),
        ),
        (
            "[{name: x}]".to_owned(),
            wrap("", "x", "substitution base cannot be empty"),
        ),
        (
            "[{name: op.v1.1.0, base: op.v1.1.0}]".to_owned(),
            wrap(
                "op.v1.1.0",
                "op.v1.1.0",
                "substitution name and base cannot be the same",
            ),
        ),
        (
            format!("[{{name: \"{image}\", base: op.v9.0.0}}]"),
            wrap(
                "op.v9.0.0",
                image,
                r#"base bundle "op.v9.0.0" does not exist in catalog"#,
            ),
        ),
        (
            "[{name: \"reg.example/op-bundle:v1.0.0_2\", base: op.v1.1.0}]".to_owned(),
            wrap(
                "op.v1.1.0",
                "reg.example/op-bundle:v1.0.0_2",
                r#"base bundle "op.v1.1.0" is not less than substitute bundle "reg.example/op-bundle:v1.0.0_2""#,
            ),
        ),
        (
            "[{name: unknown, base: op.v1.1.0}]".to_owned(),
            wrap(
                "op.v1.1.0",
                "unknown",
                r#"failed to render bundle image reference "unknown": no stub for unknown"#,
            ),
        ),
        (
            // The substitute must be new to the channel: the result must still validate.
            "[{name: \"reg.example/op-bundle:v1.2.0\", base: op.v1.1.0}]".to_owned(),
            wrap(
                "op.v1.1.0",
                "reg.example/op-bundle:v1.2.0",
                "resulting config is not valid FBC: invalid index:\n├── invalid package \"op\" (entries[0]:1):\n│   └── invalid channel \"stable\" (entries[1]:1):\n│       └── channel contains one or more stranded bundles: op.v1.2.0\n├── invalid package \"op\", channel \"stable\": duplicate entry \"op.v1.2.0\" (entries[1]:1)\n└── package \"op\" has duplicate bundle \"op.v1.2.0\"",
            ),
        ),
    ];
    for (substitutions, expected) in cases {
        assert_eq!(
            render(&template(&substitutions)).unwrap_err(),
            expected,
            "{substitutions}"
        );
    }
}

#[test]
fn sub4_template_errors() {
    assert_eq!(
        Kind::Substitutes
            .render(b"schema: olm.template.basic\n", &mut stub)
            .unwrap_err(),
        Error::Invalid(
            r#"render: unable to parse template: template has unknown schema ("olm.template.basic"), should be "olm.template.substitutes""#
                .into()
        )
    );
    assert_eq!(
        render("schema: olm.template.substitutes\nentries:\n- {name: x}\n").unwrap_err(),
        "render: unable to create declarative config from entries: object '{\"name\":\"x\"}\n' is missing root schema field"
    );
    assert_eq!(
        render("schema: olm.template.substitutes\nentries: 3\n").unwrap_err(),
        "render: unable to parse template: unmarshalling template: json: cannot unmarshal number into Go struct field SubstitutesTemplateData.entries of type []*declcfg.Meta"
    );
    assert_eq!(
        render("schema: olm.template.substitutes\nentries:\n- {schema: olm.channel, name: c, package: nope, entries: []}\n")
            .unwrap_err(),
        "render: entries are not valid FBC: unknown package \"nope\" for channel \"c\""
    );
    assert_eq!(
        Kind::detect(b"schema: olm.template.substitutes\n"),
        Ok(Kind::Substitutes)
    );
}

/// Package `sub` whose channel lists only `sub.v1.0.0`, with bundles of `versions`.
fn sub_entries(versions: &[&str]) -> String {
    let mut t = "schema: olm.template.substitutes
entries:
- {schema: olm.package, name: sub, defaultChannel: stable}
- {schema: olm.channel, package: sub, name: stable, entries: [{name: sub.v1.0.0}]}
"
    .to_owned();
    for v in versions {
        t.push_str(&format!(
            "- {{schema: olm.bundle, name: sub.v{v}, package: sub, image: \"reg.example/sub-bundle:v{v}\", properties: [{{type: olm.package, value: {{packageName: sub, version: \"{v}\"}}}}]}}\n"
        ));
    }
    t + "substitutions: []\n"
}

#[test]
fn sub4_invalid_entries_say_one_problem_bare_and_several_as_a_tree() {
    // opm v1.73's ConvertToModel stops at its first problem and returns it bare.
    assert_eq!(
        render(&sub_entries(&["1.0.0", "3.0.0"])).unwrap_err(),
        r#"render: entries are not valid FBC: package "sub", bundle "sub.v3.0.0" not found in any channel entries"#
    );
    assert_eq!(
        render(&sub_entries(&["1.0.0", "3.0.0", "4.0.0"])).unwrap_err(),
        r#"render: entries are not valid FBC: invalid index:
├── package "sub", bundle "sub.v3.0.0" not found in any channel entries (entries[3]:1)
└── package "sub", bundle "sub.v4.0.0" not found in any channel entries (entries[4]:1)"#
    );
    // One problem of the model's validation stays in its tree, as opm draws it.
    assert_eq!(
        render(&sub_entries(&["1.0.0"]).replace(", defaultChannel: stable", "")).unwrap_err(),
        "render: entries are not valid FBC: invalid index:\n└── invalid package \"sub\" (entries[0]:1):\n    └── default channel must be set"
    );
}

/// An FBC stream with characters Go's encoder escapes.
const FBC: &str = r#"{"schema":"olm.package","name":"op","defaultChannel":"stable","description":"Tom & Jerry <3"}
{"schema":"olm.channel","name":"stable","package":"op","entries":[{"name":"op.v1.0.0"},{"name":"op.v2.0.0","skipRange":">=1.0.0 <2.0.0"}]}
{"schema":"olm.bundle","name":"op.v2.0.0","package":"op","image":"reg.example/op-bundle:v2.0.0","properties":[{"type":"olm.package","value":{"packageName":"op","version":"2.0.0"}}]}
"#;

#[test]
fn convert_escapes_html_in_json_as_go_does() {
    let basic = r#"{
    "schema": "olm.template.basic",
    "entries": [
        {
            "defaultChannel": "stable",
            "description": "Tom \u0026 Jerry \u003c3",
            "name": "op",
            "schema": "olm.package"
        },
        {
            "entries": [
                {
                    "name": "op.v1.0.0"
                },
                {
                    "name": "op.v2.0.0",
                    "skipRange": "\u003e=1.0.0 \u003c2.0.0"
                }
            ],
            "name": "stable",
            "package": "op",
            "schema": "olm.channel"
        },
        {
            "schema": "olm.bundle",
            "image": "reg.example/op-bundle:v2.0.0"
        }
    ]
}
"#;
    assert_eq!(convert(Kind::Basic, FBC.as_bytes(), false).unwrap(), basic);
    let substitutes = r#"{
    "schema": "olm.template.substitutes",
    "entries": [
        {
            "defaultChannel": "stable",
            "description": "Tom \u0026 Jerry \u003c3",
            "name": "op",
            "schema": "olm.package"
        },
        {
            "entries": [
                {
                    "name": "op.v1.0.0"
                },
                {
                    "name": "op.v2.0.0",
                    "skipRange": "\u003e=1.0.0 \u003c2.0.0"
                }
            ],
            "name": "stable",
            "package": "op",
            "schema": "olm.channel"
        },
        {
            "image": "reg.example/op-bundle:v2.0.0",
            "name": "op.v2.0.0",
            "package": "op",
            "properties": [
                {
                    "type": "olm.package",
                    "value": {
                        "packageName": "op",
                        "version": "2.0.0"
                    }
                }
            ],
            "schema": "olm.bundle"
        }
    ],
    "substitutions": []
}
"#;
    assert_eq!(
        convert(Kind::Substitutes, FBC.as_bytes(), false).unwrap(),
        substitutes
    );
}

#[test]
fn convert_to_yaml_sorts_keys_and_does_not_escape() {
    let basic = "---
entries:
- defaultChannel: stable
  description: Tom & Jerry <3
  name: op
  schema: olm.package
- entries:
  - name: op.v1.0.0
  - name: op.v2.0.0
    skipRange: '>=1.0.0 <2.0.0'
  name: stable
  package: op
  schema: olm.channel
- image: reg.example/op-bundle:v2.0.0
  schema: olm.bundle
schema: olm.template.basic

";
    assert_eq!(convert(Kind::Basic, FBC.as_bytes(), true).unwrap(), basic);
    // Nothing to convert: opm's nil list of entries.
    assert_eq!(
        convert(Kind::Substitutes, b"", false).unwrap(),
        "{\n    \"schema\": \"olm.template.substitutes\",\n    \"entries\": null,\n    \"substitutions\": []\n}\n"
    );
    assert_eq!(
        convert(Kind::Substitutes, b"", true).unwrap(),
        "---\nentries: null\nschema: olm.template.substitutes\nsubstitutions: []\n\n"
    );
    // A bundle without an image keeps the empty image, as opm's struct has no omitempty.
    assert_eq!(
        convert(Kind::Basic, br#"{"schema":"olm.bundle","name":"x"}"#, false).unwrap(),
        "{\n    \"schema\": \"olm.template.basic\",\n    \"entries\": [\n        {\n            \"schema\": \"olm.bundle\",\n            \"image\": \"\"\n        }\n    ]\n}\n"
    );
    assert_eq!(
        convert(Kind::Basic, b"[1]", false).unwrap_err(),
        Error::Invalid(
            "converting: json: cannot unmarshal array into Go value of type map[string]interface {}"
                .into()
        )
    );
}
