//! `olm.substitutesFor`: the CSV annotation by which a rebuilt bundle names the bundle it
//! stands in for. Nothing here follows a chain of them to its end; the one thing asked of a
//! catalog is whether such a chain closes on itself, which made opm's loader loop until it
//! ran out of memory before it refused it (opm #2038). opm v1.73 still accepts an FBC with
//! such a cycle, so a cycle is a warning, in the words of opm's loader.
use super::property::{self, Typed};
use super::types::Bundle;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The CSV annotation.
pub const ANNOTATION: &str = "olm.substitutesFor";

/// The `olm.substitutesFor` annotation of a CSV manifest (JSON text), when set and not empty.
pub fn csv_substitutes_for(csv_json: &str) -> Option<String> {
    // Almost no CSV has it: skip parsing the ones whose text cannot hold it.
    if !csv_json.contains(ANNOTATION) {
        return None;
    }
    let csv: Value = serde_json::from_str(csv_json).ok()?;
    annotation(csv.pointer("/metadata/annotations")?)
}

/// A bundle's `olm.substitutesFor`, read where opm looks for it: the CSV among its
/// `olm.bundle.object` manifests when it has one, else the annotations of its
/// `olm.csv.metadata`.
pub fn substitutes_for(bundle: &Bundle) -> Option<String> {
    let mut from_metadata = None;
    for p in &bundle.properties {
        match p.kind.as_str() {
            property::BUNDLE_OBJECT => {
                let Ok(Typed::BundleObject { data }) = property::parse(p) else {
                    continue;
                };
                let Ok(json) = property::decode_bundle_object(&data) else {
                    continue;
                };
                if is_csv(&json) {
                    return csv_substitutes_for(&json);
                }
            }
            property::CSV_METADATA if from_metadata.is_none() => {
                if let Ok(Typed::CsvMetadata(meta)) = property::parse(p) {
                    from_metadata = meta.get("annotations").and_then(annotation);
                }
            }
            _ => {}
        }
    }
    from_metadata
}

fn is_csv(json: &str) -> bool {
    serde_json::from_str::<Value>(json)
        .ok()
        .and_then(|v| v.get("kind").and_then(Value::as_str).map(str::to_owned))
        .is_some_and(|k| k == "ClusterServiceVersion")
}

fn annotation(annotations: &Value) -> Option<String> {
    annotations
        .get(ANNOTATION)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// A chain of `olm.substitutesFor` that comes back to a bundle it passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle {
    pub package: String,
    /// The first bundle the walk reached a second time.
    pub bundle: String,
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cyclic substitutesFor chain detected involving {:?}",
            self.bundle
        )
    }
}

/// Which bundle names which, per package (FBC bundle names are unique within a package).
#[derive(Clone, Debug, Default)]
pub struct SubstitutesFor {
    links: BTreeMap<(String, String), String>,
}

impl SubstitutesFor {
    /// The links of every bundle that has one.
    pub fn of_bundles<'a>(bundles: impl IntoIterator<Item = &'a Bundle>) -> SubstitutesFor {
        let mut all = SubstitutesFor::default();
        for b in bundles {
            all.record_bundle(b);
        }
        all
    }

    /// Records `bundle`'s link, if it has one.
    pub fn record_bundle(&mut self, bundle: &Bundle) {
        if let Some(target) = substitutes_for(bundle) {
            self.record(&bundle.package, &bundle.name, target);
        }
    }

    /// Records that `bundle` of `package` substitutes for `target`. The first link recorded
    /// for a bundle stays (a duplicate bundle is the validator's to report).
    pub fn record(&mut self, package: &str, bundle: &str, target: String) {
        self.links
            .entry((package.to_owned(), bundle.to_owned()))
            .or_insert(target);
    }

    /// Every cycle, once, in the order of the bundle names that lead into it. Each walk
    /// remembers where it has been, so a cycle ends it instead of going round forever.
    pub fn cycles(&self) -> Vec<Cycle> {
        let mut reported: BTreeSet<(&str, &str)> = BTreeSet::new();
        let mut cycles = Vec::new();
        for (package, start) in self.links.keys() {
            let next = |name: &str| self.links.get(&(package.clone(), name.to_owned()));
            let mut seen: BTreeSet<&str> = BTreeSet::from([start.as_str()]);
            let mut current = next(start);
            while let Some(name) = current {
                if !seen.insert(name.as_str()) {
                    // `name` is on the cycle: name the cycle by its members, so that walks
                    // from its other members (or from chains into it) do not report it again.
                    let mut member = name.as_str();
                    let mut first = member;
                    loop {
                        member = next(member).map_or(name.as_str(), String::as_str);
                        if member == name {
                            break;
                        }
                        first = first.min(member);
                    }
                    if reported.insert((package.as_str(), first)) {
                        cycles.push(Cycle {
                            package: package.clone(),
                            bundle: name.clone(),
                        });
                    }
                    break;
                }
                current = next(name);
            }
        }
        cycles
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(pairs: &[(&str, &str)]) -> SubstitutesFor {
        let mut all = SubstitutesFor::default();
        for (from, to) in pairs {
            all.record("p", from, (*to).to_owned());
        }
        all
    }

    fn named(all: &SubstitutesFor) -> Vec<String> {
        all.cycles().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn each_cycle_is_reported_once_and_chains_end() {
        assert_eq!(
            named(&links(&[("a", "a")])),
            ["cyclic substitutesFor chain detected involving \"a\""]
        );
        assert_eq!(
            named(&links(&[("a", "b"), ("b", "a")])),
            ["cyclic substitutesFor chain detected involving \"a\""]
        );
        // A chain into a cycle: the walk from the chain's start names the first bundle of
        // the cycle it reaches.
        assert_eq!(
            named(&links(&[("0", "c"), ("b", "c"), ("c", "b")])),
            ["cyclic substitutesFor chain detected involving \"c\""]
        );
        assert!(named(&links(&[("a", "b"), ("b", "c"), ("c", "gone")])).is_empty());
        assert!(named(&links(&[])).is_empty());
        // Two packages may use the same names without linking to each other.
        let mut two = links(&[("a", "b")]);
        two.record("q", "b", "a".into());
        assert!(two.cycles().is_empty());
    }

    #[test]
    fn the_annotation_is_read_from_the_csv_or_its_metadata() {
        let csv = r#"{"kind":"ClusterServiceVersion","metadata":{"annotations":{"olm.substitutesFor":"x.v1"}}}"#;
        assert_eq!(csv_substitutes_for(csv).as_deref(), Some("x.v1"));
        assert_eq!(
            csv_substitutes_for(r#"{"metadata":{"annotations":{"olm.substitutesFor":""}}}"#),
            None
        );
        use base64::Engine;
        let object = |json: &str| crate::types::Property {
            kind: property::BUNDLE_OBJECT.into(),
            value: format!(
                r#"{{"data":"{}"}}"#,
                base64::engine::general_purpose::STANDARD.encode(json)
            ),
        };
        let metadata = crate::types::Property {
            kind: property::CSV_METADATA.into(),
            value: r#"{"annotations":{"olm.substitutesFor":"from.metadata"}}"#.into(),
        };
        let mut b = Bundle {
            properties: vec![metadata.clone()],
            ..Default::default()
        };
        assert_eq!(substitutes_for(&b).as_deref(), Some("from.metadata"));
        // A CSV manifest is what opm reads first.
        b.properties
            .push(object(r#"{"kind":"CustomResourceDefinition"}"#));
        b.properties.push(object(csv));
        assert_eq!(substitutes_for(&b).as_deref(), Some("x.v1"));
        b.properties = vec![object(r#"{"kind":"ClusterServiceVersion"}"#), metadata];
        assert_eq!(substitutes_for(&b), None);
    }
}
