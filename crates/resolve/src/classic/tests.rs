use super::*;
use crate::solver::SolveError;
use catalog::types::{Bundle, Channel, ChannelEntry, DeclarativeConfig, Gvk, Package, Property};

fn entry(name: &str, replaces: &str) -> ChannelEntry {
    ChannelEntry {
        name: name.into(),
        replaces: replaces.into(),
        ..Default::default()
    }
}

/// Package `a` with a proper chain, package `broken` with two heads.
fn catalog() -> DeclarativeConfig {
    let bundle = |package: &str, name: &str, version: &str| Bundle {
        name: name.into(),
        package: package.into(),
        properties: vec![Property {
            kind: "olm.package".into(),
            value: format!(r#"{{"packageName":"{package}","version":"{version}"}}"#),
        }],
        ..Default::default()
    };
    let channel = |package: &str, entries| Channel {
        name: "stable".into(),
        package: package.into(),
        entries,
        ..Default::default()
    };
    DeclarativeConfig {
        packages: ["a", "broken"]
            .map(|name| Package {
                name: name.into(),
                default_channel: "stable".into(),
                ..Default::default()
            })
            .into(),
        channels: vec![
            channel("a", vec![entry("a.v1", ""), entry("a.v2", "a.v1")]),
            channel("broken", vec![entry("b.v1", ""), entry("b.v2", "")]),
        ],
        bundles: vec![
            bundle("a", "a.v1", "1.0.0"),
            bundle("a", "a.v2", "2.0.0"),
            bundle("broken", "b.v1", "1.0.0"),
            bundle("broken", "b.v2", "2.0.0"),
        ],
        ..Default::default()
    }
}

fn request<'a>(dc: &'a DeclarativeConfig, package: &str) -> ClassicRequest<'a> {
    ClassicRequest {
        namespace: "ns".into(),
        catalogs: vec![CatalogSource {
            name: "cat".into(),
            namespace: "ns".into(),
            priority: 0,
            content: dc,
        }],
        subscriptions: vec![Subscription {
            name: format!("{package}-stable"),
            package: package.into(),
            channel: "stable".into(),
            source: "cat".into(),
            source_namespace: "ns".into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn channel_errors_only_for_consulted_channels() {
    let dc = catalog();
    let ok = resolve_namespace(&request(&dc, "a")).expect("resolves");
    assert_eq!(
        ok.iter().map(ResolvedOperator::id).collect::<Vec<_>>(),
        ["cat/ns/stable/a.v2"]
    );
    assert_eq!(ok[0].replaces, "a.v1");
    assert_eq!(ok[0].version, "2.0.0");
    assert!(ok[0].default_channel);
    assert_eq!(
        resolve_namespace(&request(&dc, "broken")),
        Err(ClassicError::Invalid(
            r#"a unique replacement chain within a channel is required to determine the relative order between channel entries, but 2 replacement chains were found in channel "stable" of package "broken": b.v1, b.v2"#.into()
        ))
    );
}

#[test]
fn answers_are_deterministic() {
    let dc = catalog();
    let mut req = request(&dc, "a");
    req.installed.push(InstalledCsv {
        name: "a.v1".into(),
        version: "1.0.0".into(),
        ..Default::default()
    });
    req.subscriptions[0].installed_csv = "a.v1".into();
    let first = resolve_namespace(&req);
    for _ in 0..20 {
        assert_eq!(resolve_namespace(&req), first);
    }
    assert_eq!(first.expect("upgrade")[0].replaces, "a.v1");
}

#[test]
fn malformed_requests_are_errors() {
    let dc = catalog();
    let mut req = request(&dc, "a");
    req.subscriptions[0].source.clear();
    assert_eq!(
        resolve_namespace(&req),
        Err(ClassicError::Invalid(
            "subscription a-stable must name its source catalog and the catalog's namespace".into()
        ))
    );
    let mut req = request(&dc, "a");
    let csv = InstalledCsv {
        name: "a.v1".into(),
        ..Default::default()
    };
    req.installed = vec![csv.clone(), csv];
    req.subscriptions[0].installed_csv = "a.v1".into();
    assert_eq!(
        resolve_namespace(&req),
        Err(ClassicError::Invalid(
            "multiple name matches for status.installedCSV of subscription ns/a-stable: a.v1, a.v1"
                .into()
        ))
    );
}

/// A small deterministic generator (xorshift) for the catalogs below.
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Packages `p0..` with one or two channels of up to four versions; each version provides
/// its package's API (the last ones a second version of it), and may require another
/// package's API or a version range of another package, or be deprecated.
fn random_catalog(r: &mut Random) -> DeclarativeConfig {
    let packages = 2 + r.below(4);
    let mut dc = DeclarativeConfig::default();
    for p in 0..packages {
        let package = format!("p{p}");
        let versions = 1 + r.below(4);
        let mut entries = Vec::new();
        for v in 1..=versions {
            let name = format!("{package}.v{v}");
            let api_version = if v > 2 { "v2" } else { "v1" };
            let mut properties = vec![
                Property {
                    kind: "olm.package".into(),
                    value: format!(r#"{{"packageName":"{package}","version":"{v}.0.0"}}"#),
                },
                Property {
                    kind: "olm.gvk".into(),
                    value: format!(r#"{{"group":"g","kind":"K{p}","version":"{api_version}"}}"#),
                },
            ];
            let other = r.below(packages);
            match r.below(5) {
                0 | 1 if other != p => properties.push(Property {
                    kind: "olm.gvk.required".into(),
                    value: format!(
                        r#"{{"group":"g","kind":"K{other}","version":"v{}"}}"#,
                        1 + r.below(2)
                    ),
                }),
                2 if other != p => properties.push(Property {
                    kind: "olm.package.required".into(),
                    value: format!(
                        r#"{{"packageName":"p{other}","versionRange":"<{}.0.0"}}"#,
                        1 + r.below(4)
                    ),
                }),
                3 if r.below(3) == 0 => properties.push(Property {
                    kind: "olm.deprecated".into(),
                    value: "{}".into(),
                }),
                _ => {}
            }
            let previous = if v > 1 {
                format!("{package}.v{}", v - 1)
            } else {
                String::new()
            };
            entries.push(ChannelEntry {
                name: name.clone(),
                replaces: previous,
                skip_range: if r.below(4) == 0 {
                    format!("<{v}.0.0")
                } else {
                    String::new()
                },
                ..Default::default()
            });
            dc.bundles.push(Bundle {
                name,
                package: package.clone(),
                properties,
                ..Default::default()
            });
        }
        let mut channels = vec![Channel {
            name: "stable".into(),
            package: package.clone(),
            entries: entries.clone(),
            ..Default::default()
        }];
        if versions > 1 && r.below(2) == 0 {
            // A shorter channel without the newest version.
            entries.pop();
            channels.push(Channel {
                name: "candidate".into(),
                package: package.clone(),
                entries,
                ..Default::default()
            });
        }
        dc.channels.extend(channels);
        dc.packages.push(Package {
            name: package,
            default_channel: "stable".into(),
            ..Default::default()
        });
    }
    dc
}

/// Subscriptions to some packages, some with an installed version, and now and then an
/// installed CSV no subscription owns.
fn random_request<'a>(r: &mut Random, dc: &'a DeclarativeConfig) -> ClassicRequest<'a> {
    let mut req = request(dc, "p0");
    req.subscriptions.clear();
    for package in &dc.packages {
        if r.below(3) == 0 {
            continue;
        }
        let mut s = Subscription {
            name: format!("{}-sub", package.name),
            package: package.name.clone(),
            channel: ["", "stable", "candidate"][r.below(3)].into(),
            source: "cat".into(),
            source_namespace: "ns".into(),
            ..Default::default()
        };
        let versions = dc
            .bundles
            .iter()
            .filter(|b| b.package == package.name)
            .count();
        if r.below(2) == 0 {
            let v = 1 + r.below(versions);
            let name = format!("{}.v{v}", package.name);
            let properties = dc
                .bundles
                .iter()
                .find(|b| b.name == name)
                .map(|b| b.properties.clone());
            req.installed.push(InstalledCsv {
                name: name.clone(),
                version: format!("{v}.0.0"),
                phase: "Succeeded".into(),
                properties,
                ..Default::default()
            });
            s.installed_csv = name;
        }
        req.subscriptions.push(s);
    }
    if r.below(3) == 0 {
        let p = r.below(dc.packages.len());
        req.installed.push(InstalledCsv {
            name: format!("other.p{p}"),
            version: "1.0.0".into(),
            phase: "Succeeded".into(),
            required_apis: vec![Gvk {
                group: "g".into(),
                version: "v1".into(),
                kind: format!("K{p}"),
            }],
            ..Default::default()
        });
    }
    req
}

/// The lazy search against the whole problem solved by the reference search, on many small
/// random namespaces: same selection, and unsatisfiable exactly when the reference is.
#[test]
fn lazy_search_selects_what_the_full_problem_selects() {
    let mut r = Random(0x9e37_79b9_7f4a_7c15);
    let (mut satisfiable, mut unsatisfiable) = (0, 0);
    for _ in 0..400 {
        let dc = random_catalog(&mut r);
        let req = random_request(&mut r, &dc);
        let prepared = PreparedCatalog::new(&dc);
        let universe = Universe::build(&req, &[&prepared]).expect("valid request");
        let built = match Builder::build(&universe, &req) {
            Ok(built) => built,
            Err(e) => panic!("unexpected hard error {e}"),
        };
        let (problem, entries) = built.problem(&req);
        let full = solver::solve(&problem).map(|ids| {
            ids.iter()
                .filter_map(|id| entries.get(id).copied())
                .collect::<Vec<_>>()
        });
        let lazy = solver::lazy::solve(&built).expect("no solver failure");
        match (lazy, full) {
            (Some(selected), Ok(full)) => {
                assert_eq!(built.selected_entries(&selected), full);
                satisfiable += 1;
            }
            (None, Err(SolveError::Unsatisfiable { .. })) => unsatisfiable += 1,
            (lazy, full) => panic!("lazy {lazy:?} but full {full:?}"),
        }
    }
    // Both outcomes are exercised.
    assert!(
        satisfiable > 100 && unsatisfiable > 20,
        "{satisfiable} / {unsatisfiable}"
    );
}

#[test]
fn prepared_catalogs_answer_as_cold_resolution() {
    let mut r = Random(7);
    for _ in 0..50 {
        let dc = random_catalog(&mut r);
        let req = random_request(&mut r, &dc);
        let prepared = PreparedCatalog::new(&dc);
        assert_eq!(
            resolve_prepared(&req, &[&prepared]),
            resolve_namespace(&req)
        );
    }
    let dc = catalog();
    assert_eq!(
        resolve_prepared(&request(&dc, "a"), &[]),
        Err(ClassicError::Invalid(
            "0 prepared catalogs given for 1 catalog sources".into()
        ))
    );
}

#[test]
fn prepared_catalogs_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<PreparedCatalog>();
}

/// A catalog listed twice under one name: fine while only one copy is reachable, a
/// duplicate identifier once both are.
#[test]
fn colliding_identifiers_are_reported() {
    let dc = catalog();
    let mut req = request(&dc, "a");
    req.catalogs.push(req.catalogs[0].clone());
    let ok = resolve_namespace(&req).expect("one copy reachable");
    assert_eq!(
        ok.iter().map(ResolvedOperator::id).collect::<Vec<_>>(),
        ["cat/ns/stable/a.v2"]
    );
    req.installed.push(InstalledCsv {
        name: "x".into(),
        properties: Some(vec![Property {
            kind: "olm.package.required".into(),
            value: r#"{"packageName":"a","versionRange":">=1.0.0"}"#.into(),
        }]),
        ..Default::default()
    });
    assert_eq!(
        resolve_namespace(&req),
        Err(ClassicError::Invalid(
            r#"duplicate identifier "cat/ns/stable/a.v2" in input"#.into()
        ))
    );
}

fn property(kind: &str, value: &str) -> Property {
    Property {
        kind: kind.into(),
        value: value.into(),
    }
}

const GVK_X: &str = r#"{"group":"x.io","kind":"X","version":"v1"}"#;

/// Adds `package` with the single (default) channel `stable` holding `entries`, and the
/// bundles named after them with the given version and further properties.
fn add_package(
    dc: &mut DeclarativeConfig,
    package: &str,
    entries: Vec<ChannelEntry>,
    bundles: &[(&str, Vec<Property>)],
) {
    dc.packages.push(Package {
        name: package.into(),
        default_channel: "stable".into(),
        ..Default::default()
    });
    for (e, (version, more)) in entries.iter().zip(bundles) {
        let mut properties = vec![property(
            "olm.package",
            &format!(r#"{{"packageName":"{package}","version":"{version}"}}"#),
        )];
        properties.extend(more.iter().cloned());
        dc.bundles.push(Bundle {
            name: e.name.clone(),
            package: package.into(),
            properties,
            ..Default::default()
        });
    }
    dc.channels.push(Channel {
        name: "stable".into(),
        package: package.into(),
        entries,
        ..Default::default()
    });
}

/// Channel `stable` of package `foo`: `foo.v1.0.0`, then `foo.v2.0.0`, which replaces and
/// skips it (a z-stream head); package `bar` requires API X.
fn skipping_head() -> DeclarativeConfig {
    let mut dc = catalog();
    let head = ChannelEntry {
        skips: vec!["foo.v1.0.0".into()],
        ..entry("foo.v2.0.0", "foo.v1.0.0")
    };
    add_package(
        &mut dc,
        "foo",
        vec![entry("foo.v1.0.0", ""), head],
        &[("1.0.0", vec![]), ("2.0.0", vec![])],
    );
    add_package(
        &mut dc,
        "bar",
        vec![entry("bar.v1", "")],
        &[("1.0.0", vec![property("olm.gvk.required", GVK_X)])],
    );
    dc
}

/// OLM narrows a subscription's channel to its startingCSV before ordering the channel, so
/// an entry that the head skips, or one of a channel with two heads, can be started from.
#[test]
fn starting_csv_may_name_a_skipped_entry() {
    let dc = skipping_head();
    let mut req = request(&dc, "foo");
    req.subscriptions[0].starting_csv = "foo.v1.0.0".into();
    let got = resolve_namespace(&req).expect("resolves");
    assert_eq!(
        got.iter()
            .map(|op| (op.id(), op.starting_csv.clone(), op.replaces.clone()))
            .collect::<Vec<_>>(),
        [(
            "cat/ns/stable/foo.v1.0.0".to_owned(),
            Some("foo.v1.0.0".to_owned()),
            String::new()
        )]
    );
    let mut req = request(&dc, "broken");
    req.subscriptions[0].starting_csv = "b.v2".into();
    let got = resolve_namespace(&req).expect("resolves");
    assert_eq!(
        got.iter().map(ResolvedOperator::id).collect::<Vec<_>>(),
        ["cat/ns/stable/b.v2"]
    );
}

/// A subscription to `bar` (which requires X) beside two installed CSVs of package `foo`
/// that provide X, `foo.v1.0.0` owned by a subscription and `foo-extra.v1.0.0` unowned.
fn installed_providers_of_x(dc: &DeclarativeConfig) -> ClassicRequest<'_> {
    let mut req = request(dc, "bar");
    let installed = |name: &str| InstalledCsv {
        name: name.into(),
        version: "1.0.0".into(),
        replaces: "foo.v0".into(),
        properties: Some(vec![
            property("olm.gvk", GVK_X),
            property("olm.package", r#"{"packageName":"foo","version":"1.0.0"}"#),
        ]),
        ..Default::default()
    };
    req.installed = vec![installed("foo.v1.0.0"), installed("foo-extra.v1.0.0")];
    req.subscriptions.push(Subscription {
        name: "foo-stable".into(),
        package: "foo".into(),
        channel: "stable".into(),
        source: "cat".into(),
        source_namespace: "ns".into(),
        installed_csv: "foo.v1.0.0".into(),
        ..Default::default()
    });
    req
}

/// Two installed CSVs of package `foo` provide X, which `bar.v1` requires: OLM orders them
/// like a channel without upgrade edges, fails to, and fails the namespace.
#[test]
fn installed_providers_of_one_package_cannot_be_ordered() {
    let dc = skipping_head();
    let mut req = installed_providers_of_x(&dc);
    assert_eq!(
        resolve_namespace(&req),
        Err(ClassicError::Invalid(
            r#"a unique replacement chain within a channel is required to determine the relative order between channel entries, but 2 replacement chains were found in channel "" of package "foo": foo.v1.0.0, foo-extra.v1.0.0"#.into()
        ))
    );
    // One installed provider per package orders fine: the unowned one stays and provides X
    // while the owned one upgrades.
    req.installed[1].properties.as_mut().expect("annotated")[1] = property(
        "olm.package",
        r#"{"packageName":"other","version":"1.0.0"}"#,
    );
    let got = resolve_namespace(&req).expect("resolves");
    assert_eq!(
        got.iter().map(ResolvedOperator::id).collect::<Vec<_>>(),
        ["cat/ns/stable/bar.v1", "cat/ns/stable/foo.v2.0.0"]
    );
}

/// An installed CSV whose annotation names two packages belongs to the last one, as in OLM.
/// `foo-extra.v1.0.0` listing `foo` then `other` is of package `other`, so no channel
/// ordering of `foo` fails; both properties still make it unique within `foo`, so it cannot
/// stay beside `foo.v1.0.0`. Listed the other way round it is of `foo` again.
#[test]
fn installed_csv_takes_the_last_package_property() {
    let dc = skipping_head();
    let mut req = installed_providers_of_x(&dc);
    let other = property(
        "olm.package",
        r#"{"packageName":"other","version":"1.0.0"}"#,
    );
    let properties = req.installed[1].properties.as_mut().expect("annotated");
    properties.push(other);
    assert_eq!(
        resolve_namespace(&req),
        Err(ClassicError::Unsatisfiable(SolveError::Unsatisfiable {
            messages: vec![
                "@existing/ns//foo-extra.v1.0.0, @existing/ns//foo.v1.0.0 and cat/ns/stable/foo.v2.0.0 originate from package foo".into(),
                "clusterserviceversion foo-extra.v1.0.0 exists and is not referenced by a subscription".into(),
                "subscription foo-stable exists".into(),
                "subscription foo-stable requires at least one of cat/ns/stable/foo.v2.0.0 or @existing/ns//foo.v1.0.0".into(),
            ]
        }))
    );
    req.installed[1]
        .properties
        .as_mut()
        .expect("annotated")
        .swap(1, 2);
    assert_eq!(
        resolve_namespace(&req),
        Err(ClassicError::Invalid(
            r#"a unique replacement chain within a channel is required to determine the relative order between channel entries, but 2 replacement chains were found in channel "" of package "foo": foo.v1.0.0, foo-extra.v1.0.0"#.into()
        ))
    );
}

/// A malformed requirement of a reachable bundle fails the namespace with OLM's words (the
/// raw Go decoding error for legacy requirement types), not as an unsatisfiable result.
#[test]
fn malformed_requirements_fail_the_namespace_in_olms_words() {
    for (requirement, message) in [
        (
            property("olm.gvk.required", r#"{"group":1}"#),
            "json: cannot unmarshal number into Go struct field .group of type string",
        ),
        (
            property("olm.constraint", r#"{"gvk":{"group":"x.io"}"#),
            "parse olm.constraint: unexpected EOF",
        ),
    ] {
        let mut dc = skipping_head();
        let bar = dc.bundles.iter_mut().find(|b| b.name == "bar.v1");
        bar.expect("bar").properties[1] = requirement;
        assert_eq!(
            resolve_namespace(&request(&dc, "bar")),
            Err(ClassicError::Invalid(message.into()))
        );
    }
}

/// Each subscription is looked at even when another cannot be: OLM reports every hard
/// error, once, as one aggregate.
#[test]
fn hard_errors_of_several_subscriptions_are_all_reported() {
    let mut dc = catalog();
    add_package(
        &mut dc,
        "broken2",
        vec![entry("c.v1", ""), entry("c.v2", "")],
        &[("1.0.0", vec![]), ("2.0.0", vec![])],
    );
    let mut req = request(&dc, "broken");
    let again = req.subscriptions[0].clone();
    req.subscriptions.push(again);
    req.subscriptions.push(Subscription {
        name: "broken2-stable".into(),
        package: "broken2".into(),
        ..req.subscriptions[0].clone()
    });
    let chains = |package: &str, heads: &str| {
        format!(
            r#"a unique replacement chain within a channel is required to determine the relative order between channel entries, but 2 replacement chains were found in channel "stable" of package "{package}": {heads}"#
        )
    };
    assert_eq!(
        resolve_namespace(&req),
        Err(ClassicError::Invalid(format!(
            "[{}, {}]",
            chains("broken", "b.v1, b.v2"),
            chains("broken2", "c.v1, c.v2")
        )))
    );
}
