use super::*;
use crate::decode::parse_documents;

fn catalog(yaml: &str) -> DeclarativeConfig {
    let mut dc = DeclarativeConfig::default();
    for doc in parse_documents("foo/catalog.yaml", yaml.as_bytes()).expect("test catalog parses") {
        dc.push(doc);
    }
    dc
}

fn messages(yaml: &str) -> Vec<String> {
    let err = Model::build(catalog(yaml)).expect_err("catalog should be invalid");
    err.problems.iter().map(|p| p.message.clone()).collect()
}

/// [`Model::build`] as an ingest does it: one package's documents at a time, the packages in
/// reverse order (any order must do).
fn by_package(dc: DeclarativeConfig) -> Result<Model, ValidationError> {
    let mut groups: BTreeMap<String, Documents> = BTreeMap::new();
    for p in dc.packages {
        groups.entry(p.name.clone()).or_default().packages.push(p);
    }
    for c in dc.channels {
        groups
            .entry(c.package.clone())
            .or_default()
            .channels
            .push(c);
    }
    for b in dc.bundles {
        groups.entry(b.package.clone()).or_default().bundles.push(b);
    }
    for (i, d) in dc.deprecations.into_iter().enumerate() {
        groups
            .entry(d.package.clone())
            .or_default()
            .deprecations
            .push((i, d));
    }
    let mut problems = ValidationError::default();
    let mut packages = BTreeMap::new();
    for (_, docs) in groups.into_iter().rev() {
        packages.extend(validate_packages(docs, &mut problems));
    }
    if problems.is_empty() {
        Ok(Model { packages })
    } else {
        Err(problems)
    }
}

fn package(name: &str, default_channel: &str) -> String {
    format!("---\nschema: olm.package\nname: {name}\ndefaultChannel: {default_channel}\n")
}

/// A channel; each entry is `name[>replaces][!skip1,skip2]`.
fn channel(pkg: &str, name: &str, entries: &[&str]) -> String {
    let mut out = format!("---\nschema: olm.channel\npackage: {pkg}\nname: {name}\nentries:\n");
    for e in entries {
        let (e, skips) = e.split_once('!').unwrap_or((e, ""));
        let (name, replaces) = e.split_once('>').unwrap_or((e, ""));
        out.push_str(&format!("- name: {name}\n"));
        if !replaces.is_empty() {
            out.push_str(&format!("  replaces: {replaces}\n"));
        }
        if !skips.is_empty() {
            out.push_str(&format!("  skips: [{skips}]\n"));
        }
    }
    out
}

fn bundle(pkg: &str, name: &str, version: &str) -> String {
    format!(
        "---\nschema: olm.bundle\npackage: {pkg}\nname: {name}\nimage: quay.io/test/bundle:v{}\nproperties:\n\
         - type: olm.package\n  value: {{packageName: {pkg}, version: '{version}'}}\n",
        version.replace('+', "_")
    )
}

fn valid_foo() -> String {
    [
        package("foo", "alpha"),
        channel("foo", "alpha", &["foo.v0.1.0", "foo.v0.2.0>foo.v0.1.0"]),
        channel("foo", "beta", &["foo.v0.2.0"]),
        bundle("foo", "foo.v0.1.0", "0.1.0"),
        bundle("foo", "foo.v0.2.0", "0.2.0"),
    ]
    .concat()
}

#[test]
fn a_valid_catalog_builds() {
    let dep = "---\nschema: olm.deprecations\npackage: foo\nentries:\n\
               - reference: {schema: olm.bundle, name: foo.v0.1.0}\n  message: old bundle\n\
               - reference: {schema: olm.channel, name: beta}\n  message: old channel\n\
               - reference: {schema: olm.package}\n  message: old package\n\
               ---\nschema: custom.thing\npackage: foo\n";
    let model = Model::build(catalog(&(valid_foo() + dep))).expect("valid");
    let foo = &model.packages["foo"];
    assert_eq!(foo.default_channel, "alpha");
    assert_eq!(foo.channels["alpha"].head, "foo.v0.2.0");
    assert_eq!(foo.channels["beta"].head, "foo.v0.2.0");
    assert_eq!(
        foo.channels["alpha"]
            .entries
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>(),
        ["foo.v0.1.0", "foo.v0.2.0"]
    );
    assert_eq!(foo.bundles.len(), 2);
    assert_eq!(foo.deprecation.as_deref(), Some("old package"));
    assert_eq!(
        foo.channels["beta"].deprecation.as_deref(),
        Some("old channel")
    );
    assert_eq!(
        model.bundle_deprecation("foo", "foo.v0.1.0"),
        Some("old bundle")
    );
    assert_eq!(model.bundle_deprecation("foo", "foo.v0.2.0"), None);
    assert_eq!(model.bundle_deprecation("bar", "foo.v0.2.0"), None);
    assert_eq!(foo.origin.to_string(), "foo/catalog.yaml:2");
}

#[test]
fn missing_default_channel() {
    let yaml = valid_foo().replace("defaultChannel: alpha\n", "");
    let err = Model::build(catalog(&yaml)).expect_err("invalid");
    assert_eq!(
        err.to_string(),
        "invalid index:\n└── invalid package \"foo\" (foo/catalog.yaml:2):\n    └── default channel must be set"
    );
    let yaml = package("foo", "''");
    assert_eq!(
        messages(&yaml),
        [
            "default channel must be set",
            "package must contain at least one channel"
        ]
    );
}

#[test]
fn unknown_default_channel_is_an_empty_channel() {
    let yaml = valid_foo().replace("defaultChannel: alpha", "defaultChannel: stable");
    let err = Model::build(catalog(&yaml)).expect_err("invalid");
    assert_eq!(
        err.to_string(),
        "invalid index:\n└── invalid package \"foo\" (foo/catalog.yaml:2):\n    \
         └── invalid channel \"stable\" (foo/catalog.yaml:2):\n        └── channel must contain at least one bundle"
    );
}

#[test]
fn channel_entry_naming_a_missing_bundle() {
    let yaml = valid_foo() + &channel("foo", "gamma", &["foo.v0.3.0>foo.v0.2.0", "foo.v0.0.1"]);
    assert_eq!(
        messages(&yaml),
        [
            r#"no olm.bundle blobs found in package "foo" for olm.channel entries [foo.v0.0.1 foo.v0.3.0]"#,
            "multiple channel heads found in graph: foo.v0.0.1, foo.v0.3.0",
        ]
    );
}

#[test]
fn graph_problems_are_reported_per_channel() {
    let heads = valid_foo().replace(
        "- name: foo.v0.2.0\n  replaces: foo.v0.1.0\n",
        "- name: foo.v0.2.0\n",
    );
    assert_eq!(
        messages(&heads),
        ["multiple channel heads found in graph: foo.v0.1.0, foo.v0.2.0"]
    );
    let no_head = valid_foo().replace(
        "- name: foo.v0.1.0\n",
        "- name: foo.v0.1.0\n  replaces: foo.v0.2.0\n",
    );
    assert_eq!(messages(&no_head), ["no channel head found in graph"]);
    let cycle = [
        package("foo", "alpha"),
        channel(
            "foo",
            "alpha",
            &["foo.v3>foo.v2", "foo.v2>foo.v1", "foo.v1>foo.v2"],
        ),
        bundle("foo", "foo.v1", "1.0.0"),
        bundle("foo", "foo.v2", "2.0.0"),
        bundle("foo", "foo.v3", "3.0.0"),
    ]
    .concat();
    assert_eq!(
        messages(&cycle),
        ["detected cycle in replaces chain of upgrade graph: foo.v2 -> foo.v1 -> foo.v2"]
    );
    let stranded = [
        package("foo", "alpha"),
        channel(
            "foo",
            "alpha",
            &["foo.v3>foo.v2!foo.v1", "foo.v2", "foo.v1>foo.v0", "foo.v0"],
        ),
        bundle("foo", "foo.v0", "0.0.1"),
        bundle("foo", "foo.v1", "1.0.0"),
        bundle("foo", "foo.v2", "2.0.0"),
        bundle("foo", "foo.v3", "3.0.0"),
    ]
    .concat();
    let err = Model::build(catalog(&stranded)).expect_err("invalid");
    assert_eq!(err.problems.len(), 1);
    assert_eq!(
        err.problems[0].message,
        "channel contains one or more stranded bundles: foo.v0"
    );
    assert_eq!(
        err.problems[0].path,
        [r#"package "foo""#, r#"channel "alpha""#]
    );
}

#[test]
fn duplicates_of_packages_channels_bundles_and_entries() {
    let yaml = valid_foo()
        + &package("foo", "beta")
        + &channel("foo", "beta", &["foo.v0.2.0"])
        + &bundle("foo", "foo.v0.1.0", "0.1.0");
    let err = Model::build(catalog(&yaml)).expect_err("invalid");
    assert_eq!(
        err.to_string(),
        "invalid index:\n\
         ├── duplicate package \"foo\" (foo/catalog.yaml:36)\n\
         ├── package \"foo\" has duplicate bundle \"foo.v0.1.0\" (foo/catalog.yaml:46)\n\
         └── package \"foo\" has duplicate channel \"beta\" (foo/catalog.yaml:40)"
    );
    let yaml = valid_foo().replace(
        "- name: foo.v0.1.0\n",
        "- name: foo.v0.1.0\n- name: foo.v0.1.0\n",
    );
    assert_eq!(
        messages(&yaml),
        [r#"invalid package "foo", channel "alpha": duplicate entry "foo.v0.1.0""#]
    );
}

#[test]
fn names_and_references_must_be_set_and_known() {
    let yaml = [
        valid_foo(),
        package("''", "x"),
        channel("bar", "alpha", &["bar.v1"]),
        channel("foo", "''", &["foo.v0.2.0"]),
        bundle("''", "orphan.v1", "1.0.0"),
        bundle("bar", "bar.v1", "1.0.0"),
        bundle("foo", "foo.v9", "9.0.0"),
    ]
    .concat();
    assert_eq!(
        messages(&yaml),
        [
            "config contains package with no name",
            r#"unknown package "bar" for channel "alpha""#,
            r#"package "foo" contains channel with no name"#,
            r#"package name must be set for bundle "orphan.v1""#,
            r#"unknown package "bar" for bundle "bar.v1""#,
            r#"package "foo", bundle "foo.v9" not found in any channel entries"#,
        ]
    );
}

#[test]
fn invalid_package_names() {
    let cases = [
        ("foo.bar", "[must not contain dots]"),
        (
            "Foo",
            "[a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end \
             with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')]",
        ),
    ];
    for (name, errors) in cases {
        let yaml = valid_foo().replace("foo", name);
        assert_eq!(
            messages(&yaml),
            [format!("invalid package name {name:?}: {errors}")]
        );
    }
    let long = "a".repeat(64);
    let yaml = valid_foo().replace("foo", &long);
    assert_eq!(
        messages(&yaml),
        [format!(
            "invalid package name {long:?}: [must be no more than 63 characters]"
        )]
    );
}

#[test]
fn olm_package_property_rules() {
    let none = valid_foo().replace(
        "properties:\n- type: olm.package\n  value: {packageName: foo, version: '0.1.0'}\n",
        "properties: []\n",
    );
    assert_eq!(
        messages(&none),
        [
            r#"package "foo" bundle "foo.v0.1.0" must have exactly 1 "olm.package" property, found 0"#
        ]
    );
    let two = valid_foo().replace(
        "- type: olm.package\n  value: {packageName: foo, version: '0.1.0'}\n",
        "- type: olm.package\n  value: {packageName: foo, version: '0.1.0'}\n- type: olm.package\n  value: {packageName: foo, version: '0.1.1'}\n",
    );
    assert_eq!(
        messages(&two),
        [
            r#"package "foo" bundle "foo.v0.1.0" must have exactly 1 "olm.package" property, found 2"#
        ]
    );
    let mismatch = valid_foo().replace(
        "{packageName: foo, version: '0.1.0'}",
        "{packageName: bar, version: '0.1.0'}",
    );
    assert_eq!(
        messages(&mismatch),
        [r#"package "foo" does not match "olm.package" property "bar""#]
    );
    let bad_version = valid_foo().replace("version: '0.1.0'", "version: '0.1'");
    assert_eq!(
        messages(&bad_version),
        [r#"error parsing bundle "foo.v0.1.0" version "0.1": No Major.Minor.Patch elements found"#]
    );
    let empty_version = valid_foo().replace("version: '0.1.0'", "version: ''");
    assert_eq!(
        messages(&empty_version),
        [r#"error parsing bundle "foo.v0.1.0" version "": Version string empty"#]
    );
    let patch = valid_foo().replace("version: '0.1.0'", "version: '1.0.0.1'");
    assert_eq!(
        messages(&patch),
        [
            r#"error parsing bundle "foo.v0.1.0" version "1.0.0.1": Invalid character(s) found in patch number "0.1""#
        ]
    );
}

#[test]
fn property_values_must_have_their_shape() {
    let yaml = valid_foo().replace(
        "- type: olm.package\n  value: {packageName: foo, version: '0.1.0'}\n",
        "- type: olm.package\n  value: {packageName: foo, version: '0.1.0'}\n- type: olm.gvk\n  value: foo\n\
         - type: olm.package.required\n  value: {packageName: 1}\n- type: custom\n",
    );
    assert_eq!(
        messages(&yaml),
        [
            r#"parse properties for bundle "foo.v0.1.0": parse property[1] of type "olm.gvk": json: cannot unmarshal string into Go value of type property.GVK"#,
            r#"parse properties for bundle "foo.v0.1.0": parse property[2] of type "olm.package.required": json: cannot unmarshal number into Go struct field PackageRequired.packageName of type string"#,
            r#"parse properties for bundle "foo.v0.1.0": parse property[3] of type "custom": unexpected end of JSON input"#,
        ]
    );
    let broken_package = valid_foo().replace("{packageName: foo, version: '0.1.0'}", "[foo]");
    assert_eq!(
        messages(&broken_package),
        [
            r#"parse properties for bundle "foo.v0.1.0": parse property[0] of type "olm.package": json: cannot unmarshal array into Go value of type property.Package"#
        ]
    );
}

#[test]
fn skips_and_skip_ranges() {
    let yaml = valid_foo().replace(
        "- name: foo.v0.2.0\n  replaces: foo.v0.1.0\n",
        "- name: foo.v0.2.0\n  replaces: foo.v0.1.0\n  skips: ['', foo.v0.0.9]\n  skipRange: '>=1.2'\n",
    );
    let err = Model::build(catalog(&yaml)).expect_err("invalid");
    assert_eq!(
        err.to_string(),
        "invalid index:\n└── invalid package \"foo\" (foo/catalog.yaml:2):\n    \
         └── invalid channel \"alpha\" (foo/catalog.yaml:6):\n        \
         └── invalid bundle \"foo.v0.2.0\" (foo/catalog.yaml:30):\n            \
         ├── invalid skipRange \">=1.2\": Could not parse Range \">=1.2\": Could not parse version \"1.2\" in \">=1.2\": No Major.Minor.Patch elements found (foo/catalog.yaml:6)\n            \
         └── skip[0] is empty (foo/catalog.yaml:6)"
    );
    let ok = valid_foo().replace(
        "  replaces: foo.v0.1.0\n",
        "  replaces: foo.v0.1.0\n  skipRange: '>=0.1.0 <0.2.0 || 0.0.x'\n",
    );
    Model::build(catalog(&ok)).expect("valid skipRange");
}

#[test]
fn bundle_image_or_objects_must_be_present() {
    let no_image = valid_foo().replace("image: quay.io/test/bundle:v0.1.0\n", "");
    assert_eq!(messages(&no_image), ["bundle image must be set"]);
    let with_object = no_image.replace(
        "  value: {packageName: foo, version: '0.1.0'}\n",
        "  value: {packageName: foo, version: '0.1.0'}\n- type: olm.bundle.object\n  value: {data: e30=}\n",
    );
    Model::build(catalog(&with_object)).expect("objects stand in for the image");
    // A streaming consumer moved the objects out but still counts them.
    let mut dc = catalog(&no_image);
    dc.bundles[0].external_objects = 2;
    Model::build(dc).expect("external objects stand in for the image");
}

#[test]
fn image_pull_specs_must_be_valid() {
    let yaml = valid_foo().replace(
        "image: quay.io/test/bundle:v0.1.0\n",
        "image: quay.io/Foo/bundle\nrelatedImages:\n- {name: x, image: 'a b'}\n- {name: y}\n",
    );
    assert_eq!(
        messages(&yaml),
        [
            r#"package "foo" bundle "foo.v0.1.0" image: invalid image pull spec "quay.io/Foo/bundle": invalid reference format: repository name must be lowercase"#,
            r#"package "foo" bundle "foo.v0.1.0" relatedImages[0].image: invalid image pull spec "a b": invalid reference format"#,
        ]
    );
}

#[test]
fn duplicate_versions_and_release_rules() {
    let dupes = [
        package("foo", "alpha"),
        channel(
            "foo",
            "alpha",
            &["foo.d>foo.c", "foo.c>foo.b", "foo.b>foo.a", "foo.a"],
        ),
        bundle("foo", "foo.a", "2.0.0"),
        bundle("foo", "foo.b", "1.0.0+build"),
        bundle("foo", "foo.c", "1.0.0+build"),
        bundle("foo", "foo.d", "2.0.0"),
    ]
    .concat();
    assert_eq!(
        messages(&dupes),
        [
            "duplicate versions found in bundles: [{1.0.0+build: [foo.b, foo.c]} {2.0.0: [foo.a, foo.d]}]"
        ]
    );

    let release = |name: &str, version: &str, release: &str| {
        bundle("foo", name, version).replace(
            &format!("version: '{version}'"),
            &format!("version: '{version}', release: '{release}'"),
        )
    };
    let yaml = [
        package("foo", "alpha"),
        channel(
            "foo",
            "alpha",
            &[
                "foo.x>foo-v1.0.0+b-2!foo.y",
                "foo-v1.0.0+b-2>foo.v1",
                "foo.v1",
                "foo.y",
            ],
        ),
        release("foo.v1", "1.0.0", "1"),
        // Build metadata is part of the normalized name, so only the release rule fails.
        release("foo-v1.0.0+b-2", "1.0.0+b", "2"),
        release("foo.x", "2.0.0", "01"),
        release("foo.y", "2.0.0", "a_b.toolongtoolongtoolong"),
    ]
    .concat();
    assert_eq!(
        messages(&yaml),
        [
            r#"error parsing bundle "foo.x" release "01": invalid release "01": segment 0: Numeric PreRelease version must not contain leading zeroes "01""#,
            r#"error parsing bundle "foo.y" release "a_b.toolongtoolongtoolong": invalid release "a_b.toolongtoolongtoolong": exceeds maximum length of 20 characters"#,
            "cannot use build metadata in version with a release version",
            r#"name "foo.v1" does not match normalized name "foo-v1.0.0-1""#,
        ]
    );
}

#[test]
fn deprecation_rules() {
    let dep = |package: &str, entries: &str| {
        format!("---\nschema: olm.deprecations\npackage: {package}\nentries:{entries}")
    };
    let yaml = [
        valid_foo(),
        dep("''", " []\n"),
        dep("bar", " []\n"),
        dep(
            "foo",
            "\n- reference: {name: x}\n  message: m\n\
             - reference: {schema: olm.bundle, name: foo.v9}\n  message: m\n\
             - reference: {schema: olm.channel, name: gamma}\n  message: m\n\
             - reference: {schema: olm.package, name: foo}\n  message: m\n\
             - reference: {schema: olm.thing, name: t}\n  message: m\n\
             - reference: {schema: olm.bundle, name: foo.v0.1.0}\n  message: ''\n\
             - reference: {schema: olm.bundle, name: foo.v0.1.0}\n  message: again\n\
             - reference: {schema: olm.channel, name: alpha}\n\
             - reference: {schema: olm.package}\n",
        ),
        dep("foo", " []\n"),
    ]
    .concat();
    let err = Model::build(catalog(&yaml)).expect_err("invalid");
    let messages: Vec<&str> = err.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "package name must be set for deprecation item 0",
            r#"cannot apply deprecations to an unknown package "bar""#,
            r#"schema must be set for deprecation entry [0] for package "foo""#,
            r#"cannot deprecate bundle "foo.v9" for package "foo": bundle not found"#,
            r#"cannot deprecate channel "gamma" for package "foo": channel not found"#,
            r#"package name must be empty for deprecated package "foo" (specified "foo")"#,
            r#"cannot deprecate object declcfg.PackageScopedReference{Schema:"olm.thing", Name:"t"} referenced by entry 4 for package "foo": object schema unknown"#,
            r#"duplicate deprecation entry declcfg.PackageScopedReference{Schema:"olm.bundle", Name:"foo.v0.1.0"} for package "foo""#,
            r#"expected a maximum of one deprecation per package: "foo""#,
            "invalid deprecation: message must be set",
            "invalid deprecation: message must be set",
            "invalid deprecation: message must be set",
        ]
    );
    let paths: Vec<Vec<String>> = err.problems[9..].iter().map(|p| p.path.clone()).collect();
    assert_eq!(
        paths,
        [
            vec![r#"package "foo""#.to_owned()],
            vec![
                r#"package "foo""#.to_owned(),
                r#"channel "alpha""#.to_owned()
            ],
            vec![
                r#"package "foo""#.to_owned(),
                r#"bundle "foo.v0.1.0""#.to_owned()
            ],
        ]
    );
}

/// Every rule that names documents of several packages or none: a package defined twice
/// (and once without a name), channels, bundles and deprecations of unknown or unnamed
/// packages, a deprecation numbered among all of the catalog's.
#[test]
fn one_package_at_a_time_finds_what_the_whole_catalog_does() {
    let dep = |package: &str| {
        format!(
            "---\nschema: olm.deprecations\npackage: {package}\nentries:\n- reference: {{schema: olm.package}}\n  message: gone\n"
        )
    };
    let yaml = [
        valid_foo(),
        dep("foo"),
        package("bar", "stable"),
        channel("bar", "stable", &["bar.v1", "bar.v2>bar.v1"]),
        bundle("bar", "bar.v1", "1.0.0"),
        bundle("bar", "bar.v2", "1.0.0"),
        package("foo", "beta"),
        package("''", "alpha"),
        channel("qux", "alpha", &["qux.v1"]),
        bundle("qux", "qux.v1", "1.0.0"),
        bundle("''", "nobody.v1", "1.0.0"),
        bundle("foo", "foo.v0.1.0", "0.1.0"),
        dep("''"),
        dep("bar"),
        dep("bar"),
        dep("zed"),
    ]
    .concat();
    let whole = Model::build(catalog(&yaml)).expect_err("invalid");
    let parts = by_package(catalog(&yaml)).expect_err("invalid");
    assert_eq!(parts.to_string(), whole.to_string());
    assert_eq!(parts.problems.len(), whole.problems.len());
    assert!(
        whole
            .to_string()
            .contains("package name must be set for deprecation item 1"),
        "{whole}"
    );

    let valid = valid_foo() + &dep("foo");
    assert_eq!(
        by_package(catalog(&valid)).expect("valid"),
        Model::build(catalog(&valid)).expect("valid")
    );
}

#[test]
fn csv_metadata_at_most_once() {
    let yaml = valid_foo().replace(
        "  value: {packageName: foo, version: '0.1.0'}\n",
        "  value: {packageName: foo, version: '0.1.0'}\n- type: olm.csv.metadata\n  value: {}\n- type: olm.csv.metadata\n  value: {}\n",
    );
    assert_eq!(
        messages(&yaml),
        [r#"expected at most 1 property of type "olm.csv.metadata", found 2"#]
    );
}

#[test]
fn every_problem_of_a_catalog_is_reported_as_one_tree() {
    let yaml = [
        package("foo", "alpha"),
        channel(
            "foo",
            "alpha",
            &["foo.v0.1.0", "foo.v0.2.0!''", "foo.v0.3.0>foo.v0.2.0"],
        ),
        channel("foo", "beta", &[]),
        bundle("foo", "foo.v0.1.0", "0.1.0"),
        bundle("foo", "foo.v0.2.0", "0.2").replace("image: quay.io/test/bundle:v0.2\n", ""),
        bundle("foo", "foo.v0.3.0", "0.3.0"),
        package("bar.baz", ""),
        bundle("qux", "qux.v1", "1.0.0"),
    ]
    .concat();
    let err = Model::build(catalog(&yaml)).expect_err("invalid");
    assert_eq!(
        err.to_string(),
        r#"invalid index:
├── invalid package "bar.baz" (foo/catalog.yaml:44):
│   ├── default channel must be set
│   └── package must contain at least one channel
├── invalid package "foo" (foo/catalog.yaml:2):
│   ├── invalid bundle "foo.v0.2.0" (foo/catalog.yaml:29):
│   │   └── bundle image must be set
│   ├── invalid channel "alpha" (foo/catalog.yaml:6):
│   │   ├── invalid bundle "foo.v0.2.0" (foo/catalog.yaml:29):
│   │   │   └── skip[0] is empty (foo/catalog.yaml:6)
│   │   └── multiple channel heads found in graph: foo.v0.1.0, foo.v0.3.0
│   └── invalid channel "beta" (foo/catalog.yaml:16):
│       └── channel must contain at least one bundle
├── error parsing bundle "foo.v0.2.0" version "0.2": No Major.Minor.Patch elements found (foo/catalog.yaml:29)
├── invalid package name "bar.baz": [must not contain dots] (foo/catalog.yaml:44)
└── unknown package "qux" for bundle "qux.v1" (foo/catalog.yaml:48)"#
    );
    assert_eq!(err.problems.len(), 9);
}

/// Loads real and upstream catalogs and checks that they build; skipped (loudly) when the
/// shared test data is not there.
#[test]
fn shared_catalogs_build() {
    let base = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/testdata");
    let dirs = [
        "upstream/manifests-fbc",
        "upstream/deprecations-fbc",
        "upstream/custom-schema-fbc",
        "upstream/bundlepath-fbc",
        "real/community-catalog-v4.16",
        "real/community-catalog-v4.20",
    ];
    if !std::path::Path::new(base).is_dir() {
        eprintln!("SKIPPED shared_catalogs_build: {base} is absent");
        return;
    }
    for dir in dirs {
        let path = std::path::Path::new(base).join(dir);
        let dc = crate::walk::load_dir(&path, crate::file::ReadLimits::default()).unwrap_or_else(
            |errors| {
                panic!(
                    "{dir}: {}",
                    errors
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("\n")
                )
            },
        );
        let counts = (dc.packages.len(), dc.bundles.len());
        let parts = by_package(dc.clone()).unwrap_or_else(|e| panic!("{dir}: {e}"));
        let model = Model::build(dc).unwrap_or_else(|e| panic!("{dir}: {e}"));
        assert!(parts == model, "{dir}: one package at a time differs");
        assert_eq!(model.packages.len(), counts.0, "{dir}");
        assert_eq!(
            model
                .packages
                .values()
                .map(|p| p.bundles.len())
                .sum::<usize>(),
            counts.1,
            "{dir}"
        );
        assert!(
            model
                .packages
                .values()
                .all(|p| p.channels.values().all(|c| !c.head.is_empty())),
            "{dir}"
        );
        if dir.ends_with("v4.20") {
            check_real_quirks(&model);
        }
    }
}

/// Real content that must survive loading as written.
fn check_real_quirks(model: &Model) {
    // An unquoted YAML timestamp keeps its raw text.
    let created: Vec<String> = model.packages["rabbitmq-cluster-operator"]
        .bundles
        .values()
        .flat_map(|b| &b.properties)
        .filter_map(|p| match property::parse(p) {
            Ok(Typed::CsvMetadata(meta)) => {
                meta["annotations"]["createdAt"].as_str().map(str::to_owned)
            }
            _ => None,
        })
        .collect();
    assert!(
        created.iter().any(|c| c == "2025-06-24T14:07:09"),
        "{created:?}"
    );
    // Long skips lists are kept whole, in order.
    let longest = model
        .packages
        .values()
        .flat_map(|p| p.channels.values())
        .flat_map(|c| &c.entries)
        .map(|e| e.skips.len())
        .max();
    assert!(longest >= Some(20), "{longest:?}");
}
