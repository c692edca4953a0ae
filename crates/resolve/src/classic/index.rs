//! Which entries can possibly satisfy a requirement, so that dependency candidates are not
//! searched for by testing every entry of every catalog against every requirement.
use std::collections::{BTreeSet, HashMap};

use crate::predicate::{LABEL, Predicate};
use catalog::Gvk;
use catalog::property::{GVK, PACKAGE};

use super::prepared::Entry;

#[derive(Default)]
pub(crate) struct ProviderIndex {
    gvk: HashMap<Gvk, Vec<usize>>,
    package: HashMap<String, Vec<usize>>,
    label: HashMap<String, Vec<usize>>,
}

impl ProviderIndex {
    pub(crate) fn build(entries: &[Entry]) -> ProviderIndex {
        let mut index = ProviderIndex::default();
        for (e, entry) in entries.iter().enumerate() {
            index
                .package
                .entry(entry.package.clone())
                .or_default()
                .push(e);
            for (p, value) in entry.properties.iter().zip(&entry.values) {
                let Some(value) = value else {
                    continue;
                };
                let field = |k: &str| value.get(k).and_then(|v| v.as_str()).unwrap_or_default();
                if p.kind == GVK {
                    let key = Gvk {
                        group: field("group").to_owned(),
                        version: field("version").to_owned(),
                        kind: field("kind").to_owned(),
                    };
                    index.gvk.entry(key).or_default().push(e);
                } else if p.kind == PACKAGE && field("packageName") != entry.package {
                    index
                        .package
                        .entry(field("packageName").to_owned())
                        .or_default()
                        .push(e);
                } else if p.kind == LABEL {
                    index
                        .label
                        .entry(field("label").to_owned())
                        .or_default()
                        .push(e);
                }
            }
        }
        index
    }

    /// A superset of the entries satisfying `predicate`, in entry order; `None` when the
    /// predicate cannot be narrowed (CEL rules, `not`) and every entry must be tested.
    pub(crate) fn candidates(&self, predicate: &Predicate) -> Option<BTreeSet<usize>> {
        let found = |list: Option<&Vec<usize>>| list.into_iter().flatten().copied().collect();
        match predicate {
            Predicate::Gvk(gvk) => Some(found(self.gvk.get(gvk))),
            Predicate::Package { name, .. } => Some(found(self.package.get(name))),
            Predicate::Label(label) => Some(found(self.label.get(label))),
            // Every child must hold, so any narrowed child bounds the whole.
            Predicate::All(children) => children.iter().find_map(|c| self.candidates(c)),
            Predicate::Any(children) => children.iter().try_fold(BTreeSet::new(), |mut all, c| {
                all.extend(self.candidates(c)?);
                Some(all)
            }),
            Predicate::Cel { .. } | Predicate::Not(_) => None,
        }
    }
}
