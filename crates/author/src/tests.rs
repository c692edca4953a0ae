//! The template vectors of catalog-templates.md §6, with the spec's bundle-renderer stub in
//! place of registry pulls (as upstream's tests do); the commands around them are tested
//! end to end in tests/author.rs.
use super::Error;
use super::mermaid::{MermaidOptions, write_mermaid};
use super::template::{Kind, convert};
use catalog::write::{write_json, write_yaml};
use catalog::{Bundle, DeclarativeConfig, Property};

/// `reg.example/<pkg>-bundle:v<V>` renders to `<pkg>.v<V>`, or for package `a` (upstream's
/// fixtures) `a-v<V>`. `…:v<V>_<R>` renders to `<pkg>-v<V>-<R>` with release `R`
/// (the name opm requires of a bundle with a release), as upstream's substitutes tests do.
pub(crate) fn stub(image: &str) -> Result<Vec<Bundle>, String> {
    let (repo, tag) = image
        .rsplit_once(":v")
        .ok_or(format!("no stub for {image}"))?;
    let package = repo
        .trim_start_matches("reg.example/")
        .trim_end_matches("-bundle");
    let (name, value) = match tag.split_once('_') {
        Some((version, release)) => (
            format!("{package}-v{version}-{release}"),
            format!(r#"{{"packageName":"{package}","version":"{version}","release":"{release}"}}"#),
        ),
        None if package == "a" => (
            format!("a-v{tag}"),
            format!(r#"{{"packageName":"{package}","version":"{tag}"}}"#),
        ),
        None => (
            format!("{package}.v{tag}"),
            format!(r#"{{"packageName":"{package}","version":"{tag}"}}"#),
        ),
    };
    Ok(vec![Bundle {
        name,
        package: package.into(),
        image: image.into(),
        properties: vec![Property {
            kind: "olm.package".into(),
            value,
        }],
        ..Default::default()
    }])
}

pub(crate) fn render(input: &str) -> Result<DeclarativeConfig, String> {
    let kind = Kind::detect(input.as_bytes()).map_err(|e| e.to_string())?;
    kind.render(input.as_bytes(), &mut stub)
        .map_err(|e| e.to_string())
}

pub(crate) fn text(dc: &DeclarativeConfig, yaml: bool) -> String {
    let mut out = Vec::new();
    if yaml {
        write_yaml(dc, &mut out).unwrap();
    } else {
        write_json(dc, &mut out).unwrap();
    }
    String::from_utf8(out).unwrap()
}

/// Channels as `name: entry[ replaces][ skips…]; …` lines, for the long vectors.
pub(crate) fn channels(dc: &DeclarativeConfig) -> Vec<String> {
    dc.channels
        .iter()
        .map(|c| {
            let entries: Vec<String> = c
                .entries
                .iter()
                .map(|e| {
                    let mut s = e.name.clone();
                    if !e.replaces.is_empty() {
                        s += &format!(" replaces {}", e.replaces);
                    }
                    if !e.skips.is_empty() {
                        s += &format!(" skips [{}]", e.skips.join(", "));
                    }
                    s
                })
                .collect();
            format!("{}: {}", c.name, entries.join("; "))
        })
        .collect()
}

pub(crate) fn bundle_json(v: &str) -> String {
    format!(
        r#"{{
    "schema": "olm.bundle",
    "name": "op.v{v}",
    "package": "op",
    "image": "reg.example/op-bundle:v{v}",
    "properties": [
        {{
            "type": "olm.package",
            "value": {{
                "packageName": "op",
                "version": "{v}"
            }}
        }}
    ]
}}
"#
    )
}

const B1: &str = r#"schema: olm.template.basic
entries:
- {schema: olm.package, name: op, defaultChannel: stable}
- schema: olm.channel
  package: op
  name: stable
  entries: [{name: op.v1.0.0}, {name: op.v1.1.0, replaces: op.v1.0.0}]
- {schema: olm.bundle, image: "reg.example/op-bundle:v1.1.0"}
- {schema: olm.bundle, image: "reg.example/op-bundle:v1.0.0"}
"#;

#[test]
fn b1_basic_renders_stubs_sorted_by_name() {
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
            "name": "op.v1.1.0",
            "replaces": "op.v1.0.0"
        }}
    ]
}}
{}{}"#,
        bundle_json("1.0.0"),
        bundle_json("1.1.0")
    );
    assert_eq!(text(&render(B1).unwrap(), false), expected);
}

#[test]
fn b2_basic_errors() {
    for extra in [
        "package: op",
        "properties: [{type: x, value: 1}]",
        "relatedImages: [{image: x}]",
    ] {
        let input = B1.replace(
            r#"- {schema: olm.bundle, image: "reg.example/op-bundle:v1.0.0"}"#,
            &format!(r#"- {{schema: olm.bundle, image: "reg.example/op-bundle:v1.0.0", {extra}}}"#),
        );
        assert_eq!(
            render(&input).unwrap_err(),
            "unexpected fields present in basic template bundle"
        );
    }
    let input = "schema: olm.template.basic\nentries:\n- {name: x}\n";
    assert_eq!(
        render(input).unwrap_err(),
        "object '{\"name\":\"x\"}\n' is missing root schema field"
    );
    assert_eq!(
        Kind::Basic.render(S1.as_bytes(), &mut stub).unwrap_err(),
        Error::Invalid(
            r#"template has unknown schema ("olm.semver"), should be "olm.template.basic""#.into()
        )
    );
}

#[test]
fn b3_detection() {
    assert_eq!(
        Kind::detect(b"schema: olm.unknown\n").unwrap_err(),
        Error::Invalid("unknown template schema: olm.unknown".into())
    );
    assert_eq!(
        Kind::detect(b"bundles: []\n").unwrap_err(),
        Error::Invalid("template input missing required 'schema' field".into())
    );
    assert!(
        Kind::detect(b"schema: [unclosed\n")
            .unwrap_err()
            .to_string()
            .starts_with("decoding template input: ")
    );
    assert_eq!(
        Kind::detect(br#"{"Schema": "olm.semver", "stable": {"bundles": []}}"#),
        Ok(Kind::Semver)
    );
}

#[test]
fn b4_convert_template_basic() {
    let input = format!(
        "{}\n{}\n{}",
        r#"{"schema":"olm.package","name":"op","defaultChannel":"stable"}"#,
        r#"{"schema":"olm.channel","name":"stable","package":"op","entries":[{"name":"op.v1.0.0"}]}"#,
        bundle_json("1.0.0")
    );
    let expected = r#"{
    "schema": "olm.template.basic",
    "entries": [
        {
            "defaultChannel": "stable",
            "name": "op",
            "schema": "olm.package"
        },
        {
            "entries": [
                {
                    "name": "op.v1.0.0"
                }
            ],
            "name": "stable",
            "package": "op",
            "schema": "olm.channel"
        },
        {
            "schema": "olm.bundle",
            "image": "reg.example/op-bundle:v1.0.0"
        }
    ]
}
"#;
    assert_eq!(
        convert(Kind::Basic, input.as_bytes(), false).unwrap(),
        expected
    );
}

const S1: &str = r#"schema: olm.semver
candidate: {bundles: [{image: "reg.example/op-bundle:v1.0.0"}, {image: "reg.example/op-bundle:v1.0.1"}, {image: "reg.example/op-bundle:v1.1.0"}]}
stable:    {bundles: [{image: "reg.example/op-bundle:v1.0.0"}, {image: "reg.example/op-bundle:v1.0.1"}]}
"#;

#[test]
fn s1_minor_channels_by_default() {
    let bundles: String = ["1.0.0", "1.0.1", "1.1.0"]
        .iter()
        .map(|v| {
            format!(
                "---\nimage: reg.example/op-bundle:v{v}\nname: op.v{v}\npackage: op\nproperties:\n- type: olm.package\n  value:\n    packageName: op\n    version: {v}\nschema: olm.bundle\n"
            )
        })
        .collect();
    let expected = format!(
        "---
defaultChannel: stable-v1.0
name: op
schema: olm.package
---
entries:
- name: op.v1.0.0
- name: op.v1.0.1
  skips:
  - op.v1.0.0
name: candidate-v1.0
package: op
schema: olm.channel
---
entries:
- name: op.v1.1.0
  replaces: op.v1.0.1
  skips:
  - op.v1.0.0
name: candidate-v1.1
package: op
schema: olm.channel
---
entries:
- name: op.v1.0.0
- name: op.v1.0.1
  skips:
  - op.v1.0.0
name: stable-v1.0
package: op
schema: olm.channel
{bundles}"
    );
    assert_eq!(text(&render(S1).unwrap(), true), expected);
}

#[test]
fn s2_both_streams_and_preference() {
    let both = S1.replace(
        "schema: olm.semver\n",
        "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: true\n",
    );
    let dc = render(&both).unwrap();
    assert_eq!(
        channels(&dc),
        [
            "candidate-v1: op.v1.0.0; op.v1.0.1 skips [op.v1.0.0]; op.v1.1.0 replaces op.v1.0.1 skips [op.v1.0.0]",
            "candidate-v1.0: op.v1.0.0; op.v1.0.1 skips [op.v1.0.0]",
            "candidate-v1.1: op.v1.1.0 replaces op.v1.0.1 skips [op.v1.0.0]",
            "stable-v1: op.v1.0.0; op.v1.0.1 skips [op.v1.0.0]",
            "stable-v1.0: op.v1.0.0; op.v1.0.1 skips [op.v1.0.0]",
        ]
    );
    assert_eq!(dc.packages[0].default_channel, "stable-v1.0");
    let major = both.replace(
        "generateMinorChannels: true\n",
        "generateMinorChannels: true\ndefaultChannelTypePreference: major\n",
    );
    assert_eq!(
        render(&major).unwrap().packages[0].default_channel,
        "stable-v1"
    );

    let cross = stable_template(
        "op",
        &["1.2.0", "1.2.3", "1.3.0", "2.0.0", "2.0.1"],
        true,
        false,
    );
    let dc = render(&cross).unwrap();
    assert_eq!(
        channels(&dc),
        [
            "stable-v1: op.v1.2.0; op.v1.2.3 skips [op.v1.2.0]; op.v1.3.0 replaces op.v1.2.3 skips [op.v1.2.0]",
            "stable-v2: op.v2.0.0; op.v2.0.1 skips [op.v2.0.0]",
        ]
    );
    assert_eq!(dc.packages[0].default_channel, "stable-v2");
}

fn stable_template(package: &str, versions: &[&str], major: bool, minor: bool) -> String {
    let images: Vec<String> = versions
        .iter()
        .map(|v| format!("{{image: \"reg.example/{package}-bundle:v{v}\"}}"))
        .collect();
    format!(
        "schema: olm.semver\ngenerateMajorChannels: {major}\ngenerateMinorChannels: {minor}\nstable: {{bundles: [{}]}}\n",
        images.join(", ")
    )
}

const S3_VERSIONS: [&str; 16] = [
    "0.1.0",
    "0.1.1",
    "1.1.0",
    "1.2.1",
    "1.3.1-alpha",
    "1.3.1-beta",
    "1.3.1",
    "1.4.1-beta1",
    "1.4.1-beta2",
    "1.4.1",
    "2.1.0",
    "2.1.1",
    "2.3.1",
    "2.3.2",
    "3.1.0",
    "3.1.1",
];

const S3_MINOR: [&str; 8] = [
    "stable-v0.1: a-v0.1.0; a-v0.1.1 skips [a-v0.1.0]",
    "stable-v1.1: a-v1.1.0",
    "stable-v1.2: a-v1.2.1 replaces a-v1.1.0",
    "stable-v1.3: a-v1.3.1-alpha; a-v1.3.1-beta; a-v1.3.1 replaces a-v1.2.1 skips [a-v1.1.0, a-v1.3.1-alpha, a-v1.3.1-beta]",
    "stable-v1.4: a-v1.4.1-beta1; a-v1.4.1-beta2; a-v1.4.1 replaces a-v1.3.1 skips [a-v1.1.0, a-v1.2.1, a-v1.3.1-alpha, a-v1.3.1-beta, a-v1.4.1-beta1, a-v1.4.1-beta2]",
    "stable-v2.1: a-v2.1.0; a-v2.1.1 skips [a-v2.1.0]",
    "stable-v2.3: a-v2.3.1; a-v2.3.2 replaces a-v2.1.1 skips [a-v2.1.0, a-v2.3.1]",
    "stable-v3.1: a-v3.1.0; a-v3.1.1 skips [a-v3.1.0]",
];

const S3_MAJOR: [&str; 4] = [
    "stable-v0: a-v0.1.0; a-v0.1.1 skips [a-v0.1.0]",
    "stable-v1: a-v1.1.0; a-v1.2.1 replaces a-v1.1.0; a-v1.3.1-alpha; a-v1.3.1-beta; a-v1.3.1 replaces a-v1.2.1 skips [a-v1.1.0, a-v1.3.1-alpha, a-v1.3.1-beta]; a-v1.4.1-beta1; a-v1.4.1-beta2; a-v1.4.1 replaces a-v1.3.1 skips [a-v1.1.0, a-v1.2.1, a-v1.3.1-alpha, a-v1.3.1-beta, a-v1.4.1-beta1, a-v1.4.1-beta2]",
    "stable-v2: a-v2.1.0; a-v2.1.1 skips [a-v2.1.0]; a-v2.3.1; a-v2.3.2 replaces a-v2.1.1 skips [a-v2.1.0, a-v2.3.1]",
    "stable-v3: a-v3.1.0; a-v3.1.1 skips [a-v3.1.0]",
];

#[test]
fn s3_generate_channels() {
    let minor = render(&stable_template("a", &S3_VERSIONS, false, true)).unwrap();
    assert_eq!(channels(&minor), S3_MINOR);
    assert_eq!(minor.packages[0].default_channel, "stable-v3.1");

    let major = render(&stable_template("a", &S3_VERSIONS, true, false)).unwrap();
    assert_eq!(channels(&major), S3_MAJOR);
    assert_eq!(major.packages[0].default_channel, "stable-v3");

    let both = render(&stable_template("a", &S3_VERSIONS, true, true)).unwrap();
    let mut union: Vec<&str> = S3_MINOR.iter().chain(&S3_MAJOR).copied().collect();
    union.sort_by_key(|line| line.split_once(':').unwrap().0);
    assert_eq!(channels(&both), union);
    assert_eq!(both.packages[0].default_channel, "stable-v3.1");
    let pref_major =
        stable_template("a", &S3_VERSIONS, true, true) + "defaultChannelTypePreference: major\n";
    assert_eq!(
        render(&pref_major).unwrap().packages[0].default_channel,
        "stable-v3"
    );
}

#[test]
fn s4_last_edge_is_an_archetype_change() {
    let input = r#"schema: olm.semver
generateMajorChannels: true
candidate: {bundles: [{image: "reg.example/a-bundle:v2.3.2"}]}
stable: {bundles: [{image: "reg.example/a-bundle:v1.1.0"}, {image: "reg.example/a-bundle:v1.2.1"}, {image: "reg.example/a-bundle:v1.3.1"}, {image: "reg.example/a-bundle:v2.1.0"}, {image: "reg.example/a-bundle:v2.1.1"}, {image: "reg.example/a-bundle:v2.3.1"}]}
"#;
    assert_eq!(
        channels(&render(input).unwrap()),
        [
            "candidate-v2: a-v2.3.2",
            "stable-v1: a-v1.1.0; a-v1.2.1 replaces a-v1.1.0; a-v1.3.1 replaces a-v1.2.1 skips [a-v1.1.0]",
            "stable-v2: a-v2.1.0; a-v2.1.1 skips [a-v2.1.0]; a-v2.3.1 replaces a-v2.1.1 skips [a-v2.1.0]",
        ]
    );
    let single = render(&stable_template("a", &["1.1.0"], true, false)).unwrap();
    assert_eq!(channels(&single), ["stable-v1: a-v1.1.0"]);
}

#[test]
fn s5_default_channel_quirk() {
    let both = stable_template("op", &["3.0.0", "3.1.0"], true, true)
        + "defaultChannelTypePreference: major\n";
    assert_eq!(
        render(&both).unwrap().packages[0].default_channel,
        "stable-v3.1"
    );
    let major = stable_template("op", &["3.0.0", "3.1.0"], true, false);
    assert_eq!(
        render(&major).unwrap().packages[0].default_channel,
        "stable-v3"
    );
    let input = r#"schema: olm.semver
candidate: {bundles: [{image: "reg.example/op-bundle:v1.0.0"}, {image: "reg.example/op-bundle:v2.0.0"}]}
fast: {bundles: [{image: "reg.example/op-bundle:v1.0.0"}]}
"#;
    assert_eq!(
        render(input).unwrap().packages[0].default_channel,
        "fast-v1.0"
    );
}

#[test]
fn s6_semver_errors() {
    let err = |input: &str| render(input).unwrap_err();
    assert_eq!(
        err("schema: olm.semver\ninvalid: x\n"),
        r#"render: unable to read file: error unmarshaling JSON: while decoding JSON: json: unknown field "invalid""#
    );
    let prefix = "render: unable to read file: schema attribute mismatch: DefaultChannelTypePreference set to ";
    assert_eq!(
        err(
            "schema: olm.semver\ngenerateMajorChannels: true\ndefaultChannelTypePreference: minor\n"
        ),
        format!("{prefix}'minor' doesn't make sense if not generating minor-version channels")
    );
    assert_eq!(
        err(
            "schema: olm.semver\ngenerateMinorChannels: true\ndefaultChannelTypePreference: major\n"
        ),
        format!("{prefix}'major' doesn't make sense if not generating major-version channels")
    );
    assert_eq!(
        err("schema: olm.semver\ndefaultChannelTypePreference: foo\n"),
        "render: unable to read file: unknown DefaultChannelTypePreference: \"foo\"\nValid values are 'major' or 'minor'"
    );
    let build = stable_template(
        "op",
        &[
            "1.3.1-alpha",
            "1.3.1-alpha+2001Jan21",
            "1.3.1-alpha+2003May06",
        ],
        false,
        true,
    );
    assert_eq!(
        err(&build),
        "render: unable to post-process bundle info: encountered bundle versions which differ only by build metadata, which cannot be ordered: [bundle version \"1.3.1-alpha+2001Jan21\" cannot be compared to \"1.3.1-alpha\", bundle version \"1.3.1-alpha+2003May06\" cannot be compared to \"1.3.1-alpha\"]"
    );
    assert_eq!(
        err(&stable_template("op", &["1.0.0", "1.0.0"], false, true)),
        r#"render: unable to post-process bundle info: duplicate bundle name "op.v1.0.0""#
    );
    assert_eq!(
        err("schema: olm.semver\n"),
        "render: no bundles specified or no bundles could be rendered"
    );
    assert_eq!(
        err(
            "schema: olm.semver\nstable: {bundles: [{image: \"reg.example/op-bundle:v1.0.0\"}, {image: \"reg.example/other-bundle:v1.0.0\"}]}\n"
        ),
        r#"render: unable to post-process bundle info: bundle "other" does not belong to this package: "op""#
    );
    assert_eq!(
        err("schema: olm.semver\nstable: {bundles: [{image: \"reg.example/op-bundle:vbad\"}]}\n"),
        r#"render: unable to post-process bundle info: bundle "op.vbad" has invalid version "bad": No Major.Minor.Patch elements found"#
    );
    assert_eq!(
        Kind::Semver.render(B1.as_bytes(), &mut stub).unwrap_err(),
        Error::Invalid(
            r#"render: unable to read file: error unmarshaling JSON: while decoding JSON: json: unknown field "entries""#.into()
        )
    );
    assert_eq!(
        err("Schema: olm.semver\nGenerateMajorChannels: yes\n"),
        "render: unable to read file: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go struct field SemverTemplateData.generateMajorChannels of type bool"
    );
}

#[test]
fn m5_render_template_as_mermaid() {
    let dc = render(S1).unwrap();
    let graph = write_mermaid(
        &dc,
        &MermaidOptions {
            v0_semantics: true,
            ..Default::default()
        },
    )
    .unwrap();
    let expected = r#"graph LR
  classDef deprecated fill:#E8960F
  classDef skipped stroke:#FF0000,stroke-width:4px
  classDef deprecatedskipped fill:#E8960F,stroke:#FF0000,stroke-width:4px
  %% package "op"
  subgraph "op"
    %% channel "candidate-v1.0"
    subgraph op-candidate-v1.0["candidate-v1.0"]
      op-candidate-v1.0-op.v1.0.1["op.v1.0.1"]
      op-candidate-v1.0-op.v1.0.0["op.v1.0.0"]-- skip --> op-candidate-v1.0-op.v1.0.1["op.v1.0.1"]
      op-candidate-v1.0-op.v1.0.0["op.v1.0.0"]
    end
    %% channel "candidate-v1.1"
    subgraph op-candidate-v1.1["candidate-v1.1"]
      op-candidate-v1.1-op.v1.1.0["op.v1.1.0"]
      op-candidate-v1.1-op.v1.0.0["op.v1.0.0"]-- skip --> op-candidate-v1.1-op.v1.1.0["op.v1.1.0"]
      op-candidate-v1.1-op.v1.0.1["op.v1.0.1"]-- replace --> op-candidate-v1.1-op.v1.1.0["op.v1.1.0"]
    end
    %% channel "stable-v1.0"
    subgraph op-stable-v1.0["stable-v1.0"]
      op-stable-v1.0-op.v1.0.1["op.v1.0.1"]
      op-stable-v1.0-op.v1.0.0["op.v1.0.0"]-- skip --> op-stable-v1.0-op.v1.0.1["op.v1.0.1"]
      op-stable-v1.0-op.v1.0.0["op.v1.0.0"]
    end
  end
class op-candidate-v1.0-op.v1.0.0,op-stable-v1.0-op.v1.0.0 skipped
"#;
    assert_eq!(graph.text, expected);
}
