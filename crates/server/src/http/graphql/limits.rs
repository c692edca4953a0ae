//! The complexity pre-check run on a parsed query before the catalog is looked at
//! (catalogd-graphql.md §1.4): catalogd's own walk for the depth, alias and field limits,
//! with its messages — except inside introspection (`__schema`, `__type`), whose depth is
//! bounded by a rule of its own, so that a standard client's full introspection query
//! (deeper than 10 through its `TypeRef` fragment) works. A second walk follows every
//! fragment spread (catalogd's walk expands a fragment at its first spread only) so that no
//! query nests deeper than the limits once expanded; the executor and validator rely on it.
use super::syntax::{Document, Fragment, Selection, SelectionSet};
use std::collections::{HashMap, HashSet};

pub(super) const MAX_DEPTH: usize = 10;
pub(super) const MAX_ALIASES: usize = 50;
pub(super) const MAX_FIELDS: usize = 500;
/// Selection sets nested inside a root `__schema` or `__type` field (that field's own
/// counts as the first). Introspection answers are made from the schema, which is small;
/// a deeper query only repeats itself, and the response size limit bounds the rest.
pub(super) const MAX_INTROSPECTION_DEPTH: usize = 32;

/// The first limit the document exceeds, as the message to answer with.
pub(super) fn check(doc: &Document) -> Result<(), String> {
    let fragments: HashMap<&str, &Fragment> =
        doc.fragments.iter().map(|f| (f.name.as_str(), f)).collect();
    let mut walk = Walk {
        fragments: &fragments,
        fields: 0,
        aliases: 0,
        expanded: HashSet::new(),
    };
    for op in &doc.operations {
        walk.expanded.clear();
        walk.selection_set(&op.selection, 1, true)?;
    }
    let mut depths = Depths {
        fragments: &fragments,
        memo: HashMap::new(),
        active: HashSet::new(),
    };
    for op in &doc.operations {
        for selection in &op.selection.items {
            let (depth, limit, message) = match selection {
                Selection::Field(f) if is_introspection(&f.name) => (
                    f.selection
                        .as_ref()
                        .map_or(0, |s| depths.of(s, MAX_INTROSPECTION_DEPTH)),
                    MAX_INTROSPECTION_DEPTH,
                    format!(
                        "introspection query exceeds maximum depth of {MAX_INTROSPECTION_DEPTH}"
                    ),
                ),
                _ => (
                    depths.selection(selection, MAX_DEPTH),
                    MAX_DEPTH,
                    format!("query exceeds maximum depth of {MAX_DEPTH}"),
                ),
            };
            if depth > limit {
                return Err(message);
            }
        }
    }
    Ok(())
}

fn is_introspection(name: &str) -> bool {
    name == "__schema" || name == "__type"
}

/// catalogd's walk: counts every field and alias over all operations, fragments expanded at
/// their first spread in each operation.
struct Walk<'d> {
    fragments: &'d HashMap<&'d str, &'d Fragment>,
    fields: usize,
    aliases: usize,
    expanded: HashSet<&'d str>,
}

impl<'d> Walk<'d> {
    /// Enters `set` at `depth`; `checked` is false inside introspection.
    fn selection_set(
        &mut self,
        set: &'d SelectionSet,
        depth: usize,
        checked: bool,
    ) -> Result<(), String> {
        if checked && depth > MAX_DEPTH {
            return Err(format!("query exceeds maximum depth of {MAX_DEPTH}"));
        }
        for selection in &set.items {
            match selection {
                Selection::Field(f) => {
                    self.fields += 1;
                    if self.fields > MAX_FIELDS {
                        return Err(format!("query exceeds maximum field count of {MAX_FIELDS}"));
                    }
                    if f.alias.is_some() {
                        self.aliases += 1;
                        if self.aliases > MAX_ALIASES {
                            return Err(format!(
                                "query exceeds maximum alias count of {MAX_ALIASES}"
                            ));
                        }
                    }
                    if let Some(sub) = &f.selection {
                        let checked = checked && !(depth == 1 && is_introspection(&f.name));
                        self.selection_set(sub, depth + 1, checked)?;
                    }
                }
                Selection::Inline(inline) => {
                    self.selection_set(&inline.selection, depth + 1, checked)?
                }
                Selection::Spread(spread) => {
                    let Some(fragment) = self.fragments.get(spread.name.as_str()) else {
                        continue;
                    };
                    if self.expanded.insert(&fragment.name) {
                        self.selection_set(&fragment.selection, depth + 1, checked)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Depths with every spread followed, counted as catalogd counts them (a field's selection
/// set, an inline fragment and a spread each add one), capped just above a limit so that
/// neither recursion nor time grows with a query built to be deep.
struct Depths<'d> {
    fragments: &'d HashMap<&'d str, &'d Fragment>,
    /// A fragment's depth under a cap.
    memo: HashMap<(&'d str, usize), usize>,
    /// The fragments being computed: spreading one of them again is a cycle, which
    /// validation refuses, and counts as nothing here.
    active: HashSet<&'d str>,
}

impl<'d> Depths<'d> {
    /// The depth of `set` (1 for a set of leaves), at most `cap + 1`.
    fn of(&mut self, set: &'d SelectionSet, cap: usize) -> usize {
        if cap == 0 {
            return 1;
        }
        let mut deepest = 1;
        for selection in &set.items {
            deepest = deepest.max(self.selection(selection, cap));
            if deepest > cap {
                break;
            }
        }
        deepest
    }

    /// The depth of a selection in a set (1 for a leaf), at most `cap + 1` (`cap` ≥ 1).
    fn selection(&mut self, selection: &'d Selection, cap: usize) -> usize {
        match selection {
            Selection::Field(f) => f
                .selection
                .as_ref()
                .map_or(1, |sub| 1 + self.of(sub, cap - 1)),
            Selection::Inline(inline) => 1 + self.of(&inline.selection, cap - 1),
            Selection::Spread(spread) => {
                let Some(fragment) = self.fragments.get(spread.name.as_str()) else {
                    return 1;
                };
                let key = (fragment.name.as_str(), cap - 1);
                let depth = if let Some(depth) = self.memo.get(&key) {
                    *depth
                } else if !self.active.insert(&fragment.name) {
                    0
                } else {
                    let depth = self.of(&fragment.selection, cap - 1);
                    self.active.remove(fragment.name.as_str());
                    self.memo.insert(key, depth);
                    depth
                };
                1 + depth
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::syntax::parse;
    use super::*;

    fn checked(query: &str) -> Result<(), String> {
        check(&parse(query).unwrap())
    }

    #[test]
    fn catalogds_limits_and_messages() {
        let nested = |levels: usize| format!("{}b{}", "{ a ".repeat(levels), " }".repeat(levels));
        assert_eq!(checked(&nested(10)), Ok(()));
        assert_eq!(
            checked(&nested(11)),
            Err("query exceeds maximum depth of 10".into())
        );
        let aliases: String = (0..51).map(|i| format!("a{i}: f ")).collect();
        assert_eq!(
            checked(&format!("{{ {aliases} }}")),
            Err("query exceeds maximum alias count of 50".into())
        );
        let fields = "f ".repeat(501);
        assert_eq!(
            checked(&format!("{{ {fields} }}")),
            Err("query exceeds maximum field count of 500".into())
        );
        // Totals run over every operation of the document.
        let half = "f ".repeat(300);
        assert_eq!(
            checked(&format!("query A {{ {half} }} query B {{ {half} }}")),
            Err("query exceeds maximum field count of 500".into())
        );
        // A spread costs a level; undefined fragments are left to validation.
        assert_eq!(
            checked(&format!(
                "{{ ...F ...Missing }} fragment F on Query {}",
                nested(9)
            )),
            Ok(())
        );
        assert_eq!(
            checked(&format!(
                "{{ ...F ...Missing }} fragment F on Query {}",
                nested(10)
            )),
            Err("query exceeds maximum depth of 10".into())
        );
    }

    #[test]
    fn introspection_has_its_own_depth_and_spreads_are_all_followed() {
        let type_ref = format!(
            "fragment TypeRef on __Type {{ kind name {}{} }}",
            "ofType { kind name ".repeat(9),
            "}".repeat(9)
        );
        let full = format!(
            "query IntrospectionQuery {{ __schema {{ queryType {{ name }} types {{ ...FullType }} }} }}
             fragment FullType on __Type {{ kind name fields(includeDeprecated: true) {{ name args {{ ...InputValue }} type {{ ...TypeRef }} }} }}
             fragment InputValue on __InputValue {{ name type {{ ...TypeRef }} defaultValue }}
             {type_ref}"
        );
        assert_eq!(checked(&full), Ok(()));
        let too_deep = format!(
            "{{ __type(name: \"Query\") {{ {}name{} }} }}",
            "ofType { ".repeat(32),
            " }".repeat(32)
        );
        assert_eq!(
            checked(&too_deep),
            Err("introspection query exceeds maximum depth of 32".into())
        );
        // catalogd's walk skips the second spread of F; the expanded query is 12 deep.
        let respread = "{ a { ...F } b { c { d { e { g { h { i { ...F } } } } } } } } fragment F on T { x { y { z } } }";
        assert_eq!(
            checked(respread),
            Err("query exceeds maximum depth of 10".into())
        );
        // Cycles are validation's to refuse.
        assert_eq!(
            checked("{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }"),
            Ok(())
        );
    }
}
