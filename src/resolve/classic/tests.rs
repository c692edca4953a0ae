use super::*;
use crate::catalog::types::{Bundle, Channel, ChannelEntry, DeclarativeConfig, Package, Property};

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
    let ok = resolve(&request(&dc, "a")).expect("resolves");
    assert_eq!(
        ok.iter().map(ResolvedOperator::id).collect::<Vec<_>>(),
        ["cat/ns/stable/a.v2"]
    );
    assert_eq!(ok[0].replaces, "a.v1");
    assert_eq!(ok[0].version, "2.0.0");
    assert!(ok[0].default_channel);
    assert_eq!(
        resolve(&request(&dc, "broken")),
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
    let first = resolve(&req);
    for _ in 0..20 {
        assert_eq!(resolve(&req), first);
    }
    assert_eq!(first.expect("upgrade")[0].replaces, "a.v1");
}

#[test]
fn malformed_requests_are_errors() {
    let dc = catalog();
    let mut req = request(&dc, "a");
    req.subscriptions[0].source.clear();
    assert_eq!(
        resolve(&req),
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
        resolve(&req),
        Err(ClassicError::Invalid(
            "multiple name matches for status.installedCSV of subscription ns/a-stable: a.v1, a.v1"
                .into()
        ))
    );
}
