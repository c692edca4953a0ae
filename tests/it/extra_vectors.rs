//! registry-api.md §10.4: skips, synthetic replacements and dependencies on a catalog of our own.

use crate::common::{Server, collect, fixture};
use api::*;

fn entry(channel: &str, bundle: &str, replaces: &str) -> (String, String, String, String) {
    ("foo".into(), channel.into(), bundle.into(), replaces.into())
}

fn keys(entries: Vec<ChannelEntry>) -> Vec<(String, String, String, String)> {
    let mut v: Vec<_> = entries
        .into_iter()
        .map(|e| (e.package_name, e.channel_name, e.bundle_name, e.replaces))
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn skips_synthetic_replacements_and_dependencies() {
    let server = Server::serving(&fixture("extra-vectors"), &[]).await;
    let mut c = server.client().await;
    let gvk = || ("ex.com".to_string(), "v1".to_string(), "Foo".to_string());

    let (group, version, kind) = gvk();
    let latest = collect(
        c.get_latest_channel_entries_that_provide(GetLatestProvidersRequest {
            group,
            version,
            kind,
            plural: String::new(),
        })
        .await
        .unwrap()
        .into_inner(),
    )
    .await;
    // foo.v1.5.0 is skipped but not in the channel: the latest view leaves it out.
    assert_eq!(
        keys(latest),
        [
            entry("fast", "foo.v2.0.0", ""),
            entry("stable", "foo.v2.0.0", "foo.v1.0.0"),
            entry("stable", "foo.v2.0.0", "foo.v1.1.0")
        ]
    );

    let (group, version, kind) = gvk();
    let all = collect(
        c.get_channel_entries_that_provide(GetAllProvidersRequest {
            group,
            version,
            kind,
            plural: String::new(),
        })
        .await
        .unwrap()
        .into_inner(),
    )
    .await;
    assert_eq!(
        keys(all),
        [
            entry("fast", "foo.v2.0.0", ""),
            entry("stable", "foo.v1.0.0", ""),
            entry("stable", "foo.v1.1.0", "foo.v1.0.0"),
            entry("stable", "foo.v2.0.0", "foo.v1.0.0"),
            entry("stable", "foo.v2.0.0", "foo.v1.1.0"),
            entry("stable", "foo.v2.0.0", "foo.v1.5.0"),
        ]
    );

    let replacing = collect(
        c.get_channel_entries_that_replace(GetAllReplacementsRequest {
            csv_name: "foo.v1.0.0".into(),
        })
        .await
        .unwrap()
        .into_inner(),
    )
    .await;
    // v2.0.0 skips v1.0.0 and is reported with its real replaces.
    assert_eq!(
        keys(replacing),
        [
            entry("stable", "foo.v1.1.0", "foo.v1.0.0"),
            entry("stable", "foo.v2.0.0", "foo.v1.1.0")
        ]
    );

    // Either bundle is a right answer upstream; ours is the first in index order.
    let b = c
        .get_bundle_that_replaces(GetReplacementRequest {
            csv_name: "foo.v1.0.0".into(),
            pkg_name: "foo".into(),
            channel_name: "stable".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(
        ["foo.v1.1.0", "foo.v2.0.0"].contains(&b.csv_name.as_str()),
        "{}",
        b.csv_name
    );

    let (group, version, kind) = gvk();
    let default = c
        .get_default_bundle_that_provides(GetDefaultProviderRequest {
            group,
            version,
            kind,
            plural: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(default.csv_name, "foo.v2.0.0");
    assert_eq!(default.channel_name, "stable");
    assert_eq!(default.skip_range, ">=1.0.0 <2.0.0");
    assert_eq!(
        default.dependencies,
        [Dependency {
            r#type: "olm.package".into(),
            value: r#"{"packageName":"bar","version":">=1.0.0"}"#.into()
        }]
    );
    let props: Vec<_> = default
        .properties
        .iter()
        .map(|p| (p.r#type.as_str(), p.value.as_str()))
        .collect();
    assert_eq!(
        props,
        [
            ("olm.package", r#"{"packageName":"foo","version":"2.0.0"}"#),
            (
                "olm.gvk",
                r#"{"group":"ex.com","kind":"Foo","version":"v1"}"#
            ),
            (
                "olm.package.required",
                r#"{"packageName":"bar","versionRange":">=1.0.0"}"#
            ),
            (
                "olm.constraint",
                r#"{"cel":{"rule":"true"},"failureMessage":"x"}"#
            ),
            // An unquoted 4.10 is a number, and goes through a float as upstream's does.
            ("olm.maxOpenShiftVersion", "4.1"),
        ]
    );

    let fast = c
        .get_bundle(GetBundleRequest {
            pkg_name: "foo".into(),
            channel_name: "fast".into(),
            csv_name: "foo.v2.0.0".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(fast.channel_name, "fast");
    assert_eq!(fast.skip_range, "");
    assert_eq!(fast.properties, default.properties);
}
