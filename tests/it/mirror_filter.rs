//! Catalog filtering for `mirror` (issue #5 item 2): the exact packages, channels, entries and
//! bundles each ImageSetConfiguration filter keeps, the errors, and the `--dry-run` report.
//! Every filtered catalog is checked to validate.

use catalog::file::ReadLimits;
use catalog::model::Model;
use catalog::semver::Version;
use catalog::types::*;
use catalog::walk::load_dir;
use mirror::config::Operators;
use mirror::filter::{DroppedChannel, FilterError, FilterProblem, Filtered, Reason, filter};

fn catalog() -> DeclarativeConfig {
    load_dir(
        &crate::common::fixture("mirror/catalog"),
        ReadLimits::default(),
    )
    .unwrap()
}

/// An `operators[]` entry, as the configuration file spells it.
fn op(yaml: &str) -> Operators {
    serde_yaml::from_str(&format!("catalog: registry.example.com/catalog:v1\n{yaml}")).unwrap()
}

fn run(yaml: &str) -> Filtered {
    let f = filter(&catalog(), &op(yaml)).unwrap_or_else(|e| panic!("{e}"));
    if let Err(e) = Model::build(f.config.clone()) {
        panic!("the filtered catalog does not validate: {e}");
    }
    f
}

fn fail(yaml: &str) -> FilterError {
    filter(&catalog(), &op(yaml)).unwrap_err()
}

/// `package/channel: entry entry …` per kept channel, then `bundles: …`, in output order.
fn kept(dc: &DeclarativeConfig) -> Vec<String> {
    let mut out: Vec<String> = dc
        .channels
        .iter()
        .map(|c| {
            let names: Vec<&str> = c.entries.iter().map(|e| e.name.as_str()).collect();
            format!("{}/{}: {}", c.package, c.name, names.join(" "))
        })
        .collect();
    let bundles: Vec<&str> = dc.bundles.iter().map(|b| b.name.as_str()).collect();
    out.push(format!("bundles: {}", bundles.join(" ")));
    out
}

fn default_channels(dc: &DeclarativeConfig) -> Vec<(&str, &str)> {
    dc.packages
        .iter()
        .map(|p| (p.name.as_str(), p.default_channel.as_str()))
        .collect()
}

fn entry<'a>(dc: &'a DeclarativeConfig, channel: &str, name: &str) -> &'a ChannelEntry {
    dc.channels
        .iter()
        .filter(|c| c.name == channel)
        .flat_map(|c| &c.entries)
        .find(|e| e.name == name)
        .unwrap()
}

fn others(dc: &DeclarativeConfig) -> Vec<&str> {
    dc.others.iter().map(|m| m.name.as_str()).collect()
}

fn deprecated(dc: &DeclarativeConfig) -> Vec<String> {
    dc.deprecations
        .iter()
        .flat_map(|d| {
            d.entries.iter().map(move |e| {
                format!("{} {} {}", d.package, e.reference.schema, e.reference.name)
                    .trim_end()
                    .to_owned()
            })
        })
        .collect()
}

#[test]
fn no_packages_keeps_the_head_of_every_channel_of_every_package() {
    let f = run("");
    assert_eq!(
        kept(&f.config),
        [
            "cache-operator/stable: cache-operator.v1.3.0",
            "cache-operator/fast: cache-operator.v1.4.0",
            "queue-operator/alpha: queue-operator.v0.2.0",
            "queue-operator/beta: queue-operator.v0.3.0-rc.1",
            "bundles: cache-operator.v1.3.0 cache-operator.v1.4.0 queue-operator.v0.2.0 queue-operator.v0.3.0-rc.1",
        ]
    );
    assert_eq!(
        default_channels(&f.config),
        [("cache-operator", "stable"), ("queue-operator", "alpha")]
    );
    // Edges to bundles that were not kept stay (OLM upgrades by name); repeated skips go.
    let head = entry(&f.config, "stable", "cache-operator.v1.3.0");
    assert_eq!(
        (
            head.replaces.as_str(),
            head.skips.as_slice(),
            head.skip_range.as_str()
        ),
        (
            "cache-operator.v1.2.0",
            ["cache-operator.v1.2.1".to_owned()].as_slice(),
            ">=1.2.0 <1.3.0"
        )
    );
    assert_eq!(
        entry(&f.config, "fast", "cache-operator.v1.4.0").skips,
        ["cache-operator.v1.3.5"]
    );
    // cache-operator.v1.0.0's entry goes with its bundle; queue-operator's only entry did too.
    assert_eq!(
        deprecated(&f.config),
        [
            "cache-operator olm.package",
            "cache-operator olm.channel fast",
            "cache-operator olm.bundle cache-operator.v1.3.0",
        ]
    );
    assert_eq!(others(&f.config), ["gold", "silver", "maintenance"]);
}

#[test]
fn full_keeps_everything_with_repeated_skips_removed() {
    let f = run("full: true");
    let mut expected = catalog();
    for c in &mut expected.channels {
        for e in &mut c.entries {
            e.skips.dedup();
        }
    }
    assert_eq!(f.config, expected);
    assert_eq!(
        entry(&f.config, "stable", "cache-operator.v1.3.0").skips,
        ["cache-operator.v1.2.1"]
    );
}

#[test]
fn full_with_packages_keeps_those_packages_whole() {
    let f = run("full: true\npackages:\n- name: queue-operator");
    assert_eq!(
        kept(&f.config),
        [
            "queue-operator/alpha: queue-operator.v0.1.0 queue-operator.v0.2.0",
            "queue-operator/beta: queue-operator.v0.3.0-rc.1",
            "bundles: queue-operator.v0.1.0 queue-operator.v0.2.0 queue-operator.v0.3.0-rc.1",
        ]
    );
    assert_eq!(
        deprecated(&f.config),
        ["queue-operator olm.bundle queue-operator.v0.1.0"]
    );
    // Custom documents go with their package; one that names no package stays.
    assert_eq!(others(&f.config), ["silver", "maintenance"]);

    let f = run("full: true\npackages:\n- name: cache-operator\n  channels:\n  - name: stable");
    assert_eq!(
        kept(&f.config),
        [
            "cache-operator/stable: cache-operator.v1.0.0 cache-operator.v1.1.0 cache-operator.v1.2.0 cache-operator.v1.2.1 cache-operator.v1.3.0",
            "bundles: cache-operator.v1.0.0 cache-operator.v1.1.0 cache-operator.v1.2.0 cache-operator.v1.2.1 cache-operator.v1.3.0",
        ]
    );
}

#[test]
fn a_listed_package_keeps_the_heads_of_its_channels() {
    let f = run("packages:\n- name: cache-operator");
    assert_eq!(
        kept(&f.config),
        [
            "cache-operator/stable: cache-operator.v1.3.0",
            "cache-operator/fast: cache-operator.v1.4.0",
            "bundles: cache-operator.v1.3.0 cache-operator.v1.4.0",
        ]
    );
    assert_eq!(default_channels(&f.config), [("cache-operator", "stable")]);
    assert_eq!(others(&f.config), ["gold", "maintenance"]);
}

#[test]
fn listed_channels_keep_their_heads_and_drop_the_others() {
    let f = run("packages:\n- name: cache-operator\n  channels:\n  - name: stable");
    assert_eq!(
        kept(&f.config),
        [
            "cache-operator/stable: cache-operator.v1.3.0",
            "bundles: cache-operator.v1.3.0",
        ]
    );
    // The channel `fast` is gone, and with it its deprecation entry.
    assert_eq!(
        deprecated(&f.config),
        [
            "cache-operator olm.package",
            "cache-operator olm.bundle cache-operator.v1.3.0",
        ]
    );
}

#[test]
fn package_min_version_follows_replaces_and_in_range_skips_in_every_channel() {
    let f = run("packages:\n- name: cache-operator\n  minVersion: 1.1.0");
    assert_eq!(
        kept(&f.config),
        [
            "cache-operator/stable: cache-operator.v1.1.0 cache-operator.v1.2.0 cache-operator.v1.2.1 cache-operator.v1.3.0",
            "cache-operator/fast: cache-operator.v1.2.0 cache-operator.v1.3.0 cache-operator.v1.4.0",
            "bundles: cache-operator.v1.1.0 cache-operator.v1.2.0 cache-operator.v1.2.1 cache-operator.v1.3.0 cache-operator.v1.4.0",
        ]
    );
    let stable = &f.report.packages[0].channels[0];
    let reasons: Vec<(&str, &Reason)> = stable
        .bundles
        .iter()
        .map(|b| (b.name.as_str(), &b.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            ("cache-operator.v1.3.0", &Reason::InRange),
            ("cache-operator.v1.2.0", &Reason::InRange),
            ("cache-operator.v1.1.0", &Reason::InRange),
            (
                "cache-operator.v1.2.1",
                &Reason::SkippedBy("cache-operator.v1.3.0".into())
            ),
        ]
    );
    // The lowest kept entry still names its unmirrored predecessor.
    assert_eq!(
        entry(&f.config, "stable", "cache-operator.v1.1.0").replaces,
        "cache-operator.v1.0.0"
    );
}

#[test]
fn package_max_version_moves_the_head_down_in_every_channel() {
    let f = run("packages:\n- name: cache-operator\n  maxVersion: 1.2.0");
    assert_eq!(
        kept(&f.config),
        [
            "cache-operator/stable: cache-operator.v1.0.0 cache-operator.v1.1.0 cache-operator.v1.2.0",
            "cache-operator/fast: cache-operator.v1.2.0",
            "bundles: cache-operator.v1.0.0 cache-operator.v1.1.0 cache-operator.v1.2.0",
        ]
    );
    let heads: Vec<&str> = f.report.packages[0]
        .channels
        .iter()
        .map(|c| c.head.as_str())
        .collect();
    assert_eq!(heads, ["cache-operator.v1.2.0", "cache-operator.v1.2.0"]);
    assert_eq!(
        deprecated(&f.config),
        [
            "cache-operator olm.package",
            "cache-operator olm.channel fast",
            "cache-operator olm.bundle cache-operator.v1.0.0",
        ]
    );
}

#[test]
fn a_channel_range_applies_to_that_channel_only() {
    let f = run(
        "packages:\n- name: cache-operator\n  channels:\n  - name: stable\n    minVersion: 1.1.0\n    maxVersion: 1.2.0\n  - name: fast",
    );
    assert_eq!(
        kept(&f.config),
        [
            "cache-operator/stable: cache-operator.v1.1.0 cache-operator.v1.2.0",
            "cache-operator/fast: cache-operator.v1.4.0",
            "bundles: cache-operator.v1.1.0 cache-operator.v1.2.0 cache-operator.v1.4.0",
        ]
    );
}

#[test]
fn a_range_below_a_skipping_head_keeps_the_head_as_a_bridge() {
    // Only v1.2.1 is in range, and only v1.3.0 (out of range) leads to it.
    let f = run(
        "packages:\n- name: cache-operator\n  channels:\n  - name: stable\n    minVersion: 1.2.1\n    maxVersion: 1.2.9",
    );
    assert_eq!(
        kept(&f.config),
        [
            "cache-operator/stable: cache-operator.v1.2.1 cache-operator.v1.3.0",
            "bundles: cache-operator.v1.2.1 cache-operator.v1.3.0",
        ]
    );
    let reasons: Vec<Reason> = f.report.packages[0].channels[0]
        .bundles
        .iter()
        .map(|b| b.reason.clone())
        .collect();
    assert_eq!(
        reasons,
        [
            Reason::Bridge,
            Reason::SkippedBy("cache-operator.v1.3.0".into())
        ]
    );
}

#[test]
fn equal_bounds_keep_exactly_that_version() {
    let f = run(
        "packages:\n- name: cache-operator\n  channels:\n  - name: stable\n    minVersion: 1.1.0\n    maxVersion: 1.1.0",
    );
    assert_eq!(
        kept(&f.config),
        [
            "cache-operator/stable: cache-operator.v1.1.0",
            "bundles: cache-operator.v1.1.0",
        ]
    );
}

#[test]
fn a_package_range_drops_channels_it_keeps_nothing_of_and_skips_pre_releases() {
    let f = run("packages:\n- name: queue-operator\n  minVersion: 0.1.0");
    assert_eq!(
        kept(&f.config),
        [
            "queue-operator/alpha: queue-operator.v0.1.0 queue-operator.v0.2.0",
            "bundles: queue-operator.v0.1.0 queue-operator.v0.2.0",
        ]
    );
    assert_eq!(
        f.report.packages[0].dropped_channels,
        [DroppedChannel {
            name: "beta".into(),
            range: "minVersion 0.1.0".into()
        }]
    );
}

#[test]
fn dropping_the_default_channel_needs_default_channel() {
    let err = fail("packages:\n- name: cache-operator\n  channels:\n  - name: fast");
    assert_eq!(
        err.problems,
        [FilterProblem::DefaultChannelFilteredOut {
            package: "cache-operator".into(),
            default_channel: "stable".into(),
            kept: vec!["fast".into()],
        }]
    );
    assert_eq!(
        err.to_string(),
        "filtering catalog \"registry.example.com/catalog:v1\": package \"cache-operator\": the filter removes the default channel \"stable\"; set defaultChannel to one of the kept channels (fast)"
    );

    let f = run(
        "packages:\n- name: cache-operator\n  defaultChannel: fast\n  channels:\n  - name: fast",
    );
    assert_eq!(default_channels(&f.config), [("cache-operator", "fast")]);
    assert_eq!(
        kept(&f.config),
        [
            "cache-operator/fast: cache-operator.v1.4.0",
            "bundles: cache-operator.v1.4.0",
        ]
    );
    assert_eq!(
        f.report.packages[0].replaced_default.as_deref(),
        Some("stable")
    );
}

#[test]
fn a_package_range_that_drops_the_default_channel_needs_default_channel() {
    // The pre-release bound admits pre-releases: only beta has a bundle in range.
    let err = fail("packages:\n- name: queue-operator\n  minVersion: 0.3.0-rc.1");
    assert_eq!(
        err.problems,
        [FilterProblem::DefaultChannelFilteredOut {
            package: "queue-operator".into(),
            default_channel: "alpha".into(),
            kept: vec!["beta".into()],
        }]
    );
    let f =
        run("packages:\n- name: queue-operator\n  defaultChannel: beta\n  minVersion: 0.3.0-rc.1");
    assert_eq!(default_channels(&f.config), [("queue-operator", "beta")]);
    assert_eq!(
        kept(&f.config),
        [
            "queue-operator/beta: queue-operator.v0.3.0-rc.1",
            "bundles: queue-operator.v0.3.0-rc.1",
        ]
    );
    // Its only deprecation named a bundle that is gone: the whole object goes.
    assert!(f.config.deprecations.is_empty());
}

#[test]
fn default_channel_must_name_a_kept_channel() {
    let err = fail(
        "packages:\n- name: cache-operator\n  defaultChannel: stable\n  channels:\n  - name: fast",
    );
    assert_eq!(
        err.problems,
        [FilterProblem::DefaultChannelNotKept {
            package: "cache-operator".into(),
            requested: "stable".into(),
            kept: vec!["fast".into()],
        }]
    );
}

#[test]
fn unknown_packages_and_channels_are_all_reported() {
    let err = fail(
        "packages:\n- name: nope\n- name: cache-operator\n  channels:\n  - name: beta\n  - name: stable",
    );
    assert_eq!(
        err.to_string(),
        "filtering catalog \"registry.example.com/catalog:v1\": 2 problems:
  package \"nope\" is not in the catalog
  package \"cache-operator\" has no channel \"beta\" (its channels: fast, stable)"
    );
}

#[test]
fn a_source_channel_without_a_single_head_is_an_error() {
    let mut source = catalog();
    let stable = source
        .channels
        .iter_mut()
        .find(|c| c.name == "stable")
        .unwrap();
    stable.entries.push(ChannelEntry {
        name: "cache-operator.v0.9.0".into(),
        ..ChannelEntry::default()
    });
    let err = filter(&source, &op("packages:\n- name: cache-operator")).unwrap_err();
    assert_eq!(
        err.problems,
        [FilterProblem::ChannelGraph {
            package: "cache-operator".into(),
            channel: "stable".into(),
            problem: "several channel heads: cache-operator.v0.9.0, cache-operator.v1.3.0".into(),
        }]
    );
    // Full keeps the channel as it is, and validation names what is wrong with it.
    let err = filter(&source, &op("full: true")).unwrap_err();
    let [FilterProblem::InvalidResult { report }] = err.problems.as_slice() else {
        panic!("{err}");
    };
    assert!(
        report.contains(
            "multiple channel heads found in graph: cache-operator.v0.9.0, cache-operator.v1.3.0"
        ),
        "{report}"
    );
}

#[test]
fn a_range_that_keeps_nothing_is_an_error() {
    let err = fail(
        "packages:\n- name: cache-operator\n  channels:\n  - name: stable\n    minVersion: 9.0.0",
    );
    assert_eq!(
        err.problems,
        [FilterProblem::RangeKeepsNothing {
            package: "cache-operator".into(),
            channel: Some("stable".into()),
            range: "minVersion 9.0.0".into(),
        }]
    );
    let err = fail("packages:\n- name: cache-operator\n  minVersion: 9.0.0");
    assert_eq!(
        err.to_string(),
        "filtering catalog \"registry.example.com/catalog:v1\": package \"cache-operator\": no bundle of any channel is in minVersion 9.0.0"
    );
}

#[test]
fn ranges_on_both_levels_or_with_full_are_errors() {
    // The configuration parser refuses these too; the filter does not rely on it.
    let err = fail(
        "full: true\npackages:\n- name: cache-operator\n  minVersion: 1.0.0\n  channels:\n  - name: stable\n    maxVersion: 1.2.0",
    );
    assert_eq!(
        err.problems,
        [
            FilterProblem::RangeWithFull {
                package: "cache-operator".into(),
                channel: None,
            },
            FilterProblem::RangeOnBothLevels {
                package: "cache-operator".into(),
                channel: "stable".into()
            },
            FilterProblem::RangeWithFull {
                package: "cache-operator".into(),
                channel: Some("stable".into()),
            },
        ]
    );
    let err = fail("packages:\n- name: cache-operator\n  minVersion: 1.x");
    assert_eq!(
        err.problems,
        [FilterProblem::InvalidVersion {
            at: "package \"cache-operator\"".into(),
            field: "minVersion",
            value: "1.x".into(),
            reason: "No Major.Minor.Patch elements found".into(),
        }]
    );
}

#[test]
fn the_dry_run_report_says_what_was_kept_and_why() {
    let f = run(
        "packages:\n- name: cache-operator\n  minVersion: 1.2.1\n- name: queue-operator\n  defaultChannel: beta\n  minVersion: 0.3.0-rc.1",
    );
    assert_eq!(
        f.report.render(),
        "catalog registry.example.com/catalog:v1: the listed packages
  kept 2 package(s), 3 channel(s), 4 bundle(s)
package cache-operator: default channel stable
  channel stable: minVersion 1.2.1 (package); head cache-operator.v1.3.0
    cache-operator.v1.3.0 (1.3.0): in range
    cache-operator.v1.2.1 (1.2.1): in range, skipped by cache-operator.v1.3.0
  channel fast: minVersion 1.2.1 (package); head cache-operator.v1.4.0
    cache-operator.v1.4.0 (1.4.0): in range
    cache-operator.v1.3.0 (1.3.0): in range
  deprecations: 3 of 4 entries kept
package queue-operator: default channel beta (set by defaultChannel; the catalog's is alpha)
  channel beta: minVersion 0.3.0-rc.1 (package); head queue-operator.v0.3.0-rc.1
    queue-operator.v0.3.0-rc.1 (0.3.0-rc.1): in range
  channel alpha: dropped, no bundle in minVersion 0.3.0-rc.1 (package)
  deprecations: dropped (none of the 1 entries refers to a kept object)
"
    );
    let heads = run("").report.render();
    assert!(
        heads.starts_with(
            "catalog registry.example.com/catalog:v1: no packages listed: the head of every channel of every package
  kept 2 package(s), 4 channel(s), 4 bundle(s)
package cache-operator: default channel stable
  channel stable: head only; head cache-operator.v1.3.0
    cache-operator.v1.3.0 (1.3.0): head of the channel
"
        ),
        "{heads}"
    );
}

/// Heads only over a real catalog: it validates, every channel keeps exactly its head, and
/// the kept bundles are exactly the heads.
fn heads_of_a_real_catalog(rel: &str) {
    let Some(dir) = crate::common::shared_testdata(rel) else {
        return;
    };
    let source = load_dir(&dir, ReadLimits::default()).unwrap();
    let model = Model::build(source.clone()).unwrap();
    let f = filter(&source, &op("")).unwrap_or_else(|e| panic!("{e}"));
    let filtered = Model::build(f.config.clone()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        filtered.packages.keys().collect::<Vec<_>>(),
        model.packages.keys().collect::<Vec<_>>()
    );
    let mut channels = 0;
    for (name, pkg) in &model.packages {
        let kept = &filtered.packages[name];
        assert_eq!(kept.default_channel, pkg.default_channel, "{name}");
        let mut heads: Vec<&str> = Vec::new();
        for (ch, c) in &pkg.channels {
            let k = &kept.channels[ch];
            assert_eq!(k.entries.len(), 1, "{name}/{ch}");
            assert_eq!(k.head, c.head, "{name}/{ch}");
            let skips = &k.entries[0].skips;
            let distinct: std::collections::BTreeSet<&String> = skips.iter().collect();
            assert_eq!(distinct.len(), skips.len(), "{name}/{ch}: repeated skips");
            heads.push(&c.head);
            channels += 1;
        }
        heads.sort_unstable();
        heads.dedup();
        assert_eq!(
            kept.bundles.keys().map(String::as_str).collect::<Vec<_>>(),
            heads,
            "{name}"
        );
    }
    assert!(channels > 0, "{rel}: no channels");
    assert_eq!(f.report.packages.len(), model.packages.len());
}

#[test]
fn heads_only_on_the_real_community_catalog_v4_16() {
    heads_of_a_real_catalog("real/community-catalog-v4.16");
}

#[test]
fn heads_only_on_the_real_community_catalog_v4_20() {
    heads_of_a_real_catalog("real/community-catalog-v4.20");
}

/// A package-level `minVersion` and `maxVersion` at every sixth bundle version of every
/// package of a real catalog: the result validates and keeps every release in range of each
/// kept channel, or the range drops the default channel (the one error such a filter may
/// meet). Returns how many filters passed and how many dropped the default channel.
fn ranges_over_a_real_catalog(rel: &str) -> Option<(usize, usize)> {
    let dir = crate::common::shared_testdata(rel)?;
    let source = load_dir(&dir, ReadLimits::default()).unwrap();
    let model = Model::build(source.clone()).unwrap();
    let version = |b: &Bundle| {
        let p = b
            .properties
            .iter()
            .find(|p| p.kind == "olm.package")
            .unwrap();
        let value: serde_json::Value = serde_json::from_str(&p.value).unwrap();
        Version::parse(value["version"].as_str().unwrap()).unwrap()
    };
    let (mut passed, mut default_dropped) = (0, 0);
    for (name, pkg) in &model.packages {
        for b in pkg.bundles.values().step_by(6) {
            let bound = version(b);
            for field in ["minVersion", "maxVersion"] {
                let config = format!("packages:\n- name: {name}\n  {field}: {bound}");
                let f = match filter(&source, &op(&config)) {
                    Ok(f) => f,
                    Err(e) => {
                        let [FilterProblem::DefaultChannelFilteredOut { .. }] =
                            e.problems.as_slice()
                        else {
                            panic!("{rel} {config}: {e}");
                        };
                        default_dropped += 1;
                        continue;
                    }
                };
                let filtered = Model::build(f.config).unwrap_or_else(|e| panic!("{e}"));
                for (channel, kept) in &filtered.packages[name].channels {
                    for e in &pkg.channels[channel].entries {
                        let v = version(&pkg.bundles[&e.name]);
                        let inside = v.pre.is_empty()
                            && if field == "minVersion" {
                                v >= bound
                            } else {
                                v <= bound
                            };
                        assert!(
                            !inside || kept.entries.iter().any(|k| k.name == e.name),
                            "{rel} {config}: channel {channel} lost {}",
                            e.name
                        );
                    }
                }
                passed += 1;
            }
        }
    }
    Some((passed, default_dropped))
}

#[test]
fn ranges_over_the_real_community_catalog_v4_16() {
    if let Some(counts) = ranges_over_a_real_catalog("real/community-catalog-v4.16") {
        assert_eq!(counts, (86, 4));
    }
}

#[test]
fn ranges_over_the_real_community_catalog_v4_20() {
    if let Some(counts) = ranges_over_a_real_catalog("real/community-catalog-v4.20") {
        assert_eq!(counts, (240, 60));
    }
}
