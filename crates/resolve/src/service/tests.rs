use super::*;
use catalog::types::{Bundle, Channel, ChannelEntry, Package, Property};

/// Package `a`: a.v1 → a.v2 → a.v3 in channel `stable`.
fn package_a() -> DeclarativeConfig {
    let versions = ["1.0.0", "2.0.0", "3.0.0"];
    DeclarativeConfig {
        packages: vec![Package {
            name: "a".into(),
            default_channel: "stable".into(),
            ..Default::default()
        }],
        channels: vec![Channel {
            name: "stable".into(),
            package: "a".into(),
            entries: (1..=versions.len())
                .map(|v| ChannelEntry {
                    name: format!("a.v{v}"),
                    replaces: if v == 1 {
                        String::new()
                    } else {
                        format!("a.v{}", v - 1)
                    },
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        bundles: versions
            .iter()
            .enumerate()
            .map(|(i, version)| Bundle {
                name: format!("a.v{}", i + 1),
                package: "a".into(),
                image: format!("example.com/a-bundle:v{version}"),
                properties: vec![Property {
                    kind: "olm.package".into(),
                    value: format!(r#"{{"packageName":"a","version":"{version}"}}"#),
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// a.v1 installed and subscribed to: one step now, then one more.
fn upgrade_request() -> Request {
    serde_yaml::from_str(
        "\
mode: classic
namespace: ns
catalogs:
  - {name: cat, directory: unused}
installed:
  - {name: a.v1, version: 1.0.0}
subscriptions:
  - {name: a-stable, package: a, channel: stable, source: cat, installedCSV: a.v1}
",
    )
    .expect("a valid request")
}

fn step(from: &str, to: &str, version: &str) -> Step {
    Step {
        from: from.into(),
        to: to.into(),
        version: version.into(),
        image: format!("example.com/a-bundle:v{version}"),
    }
}

/// Every round of every resolution reads the preparation the catalog carries, made once
/// by the first of them, and answers as a catalog prepared afresh.
#[test]
fn classic_resolutions_share_the_catalogs_preparation() {
    let catalog = Catalog::of(package_a());
    assert!(catalog.prepared.get().is_none());
    let loaded = [Ok(catalog.clone())];
    let req = upgrade_request();
    let first = resolve_request(&req, &loaded).expect("resolves");
    let prepared: *const PreparedCatalog = catalog.prepared.get().expect("prepared on use");
    assert_eq!(first.results.len(), 1);
    let result = &first.results[0];
    assert_eq!(
        result
            .bundle
            .as_ref()
            .map(|b| (b.name.as_str(), b.from.as_str())),
        Some(("a.v2", "a.v1"))
    );
    assert_eq!(
        result.path,
        [step("a.v1", "a.v2", "2.0.0"), step("a.v2", "a.v3", "3.0.0")]
    );

    let again = resolve_request(&req, &loaded).expect("resolves");
    assert_eq!(again, first);
    assert!(std::ptr::eq(catalog.prepared(), prepared));
    assert_eq!(
        resolve_request(&req, &[Ok(Catalog::of(package_a()))]),
        Ok(first)
    );
}

/// v1 resolution does not read the classic preparation, so it does not pay for it.
#[test]
fn v1_resolutions_leave_the_catalog_unprepared() {
    let catalog = Catalog::of(package_a());
    let req: Request = serde_yaml::from_str(
        "\
mode: v1
catalogs:
  - {name: cat, directory: unused}
requests:
  - {name: a, packageName: a}
",
    )
    .expect("a valid request");
    let outcome = resolve_request(&req, &[Ok(catalog.clone())]).expect("resolves");
    assert_eq!(
        outcome.results[0].bundle.as_ref().map(|b| b.name.as_str()),
        Some("a.v3")
    );
    assert!(catalog.prepared.get().is_none());
}

/// A caller that loads fewer catalogs than the request names is at fault, not the request
/// (the service reports INTERNAL); a request that fails validation is the caller's mistake.
#[test]
fn errors_say_whose_fault_they_are() {
    let req = upgrade_request();
    assert_eq!(
        resolve_request(&req, &[]),
        Err(Error::Internal(
            "0 catalogs were loaded for 1 requested".into()
        ))
    );
    let mut no_namespace = upgrade_request();
    no_namespace.namespace.clear();
    assert_eq!(
        resolve_request(&no_namespace, &[Ok(Catalog::of(package_a()))]),
        Err(Error::InvalidRequest(
            "namespace: required in classic mode".into()
        ))
    );
}
