//! The substitutes template (`olm.template.substitutes`, catalog-templates.md §4): a rendered
//! catalog plus substitutions, each a bundle image that takes the place of a bundle of the
//! catalog in every channel holding it — the FBC way to ship a rebuild of a release without
//! the `olm.substitutesFor` annotation. The entry edits follow opm v1.73's template step by
//! step, so that the rendered channels are the ones opm writes, entry order included.
use super::error::Error;
use super::template::{RenderBundle, first_document, load_entries};
use catalog::model::Model;
use catalog::version_release::VersionRelease;
use catalog::{Bundle, ChannelEntry, DeclarativeConfig};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

pub(crate) const SCHEMA: &str = "olm.template.substitutes";

/// One substitution: `name` is the image of the new bundle, `base` the name of the bundle
/// it stands in for.
struct Substitution {
    name: String,
    base: String,
}

struct Template {
    entries: Vec<Value>,
    substitutions: Vec<Substitution>,
}

pub(crate) fn render(
    input: &[u8],
    render_bundle: &mut RenderBundle,
) -> Result<DeclarativeConfig, Error> {
    let invalid = |message: String| Error::Invalid(message);
    let template =
        parse(input).map_err(|e| invalid(format!("render: unable to parse template: {e}")))?;
    let mut dc = DeclarativeConfig::default();
    for doc in load_entries(&template.entries).map_err(|e| {
        invalid(format!(
            "render: unable to create declarative config from entries: {e}"
        ))
    })? {
        dc.push(doc);
    }
    Model::build(dc.clone()).map_err(|e| {
        // opm stops at the first problem it finds while assembling the model and says it
        // bare; the tree is for several problems, or for one the model validation found.
        let problem = e.alone().map_or_else(|| e.to_string(), str::to_owned);
        invalid(format!("render: entries are not valid FBC: {problem}"))
    })?;
    let mut bases = HashSet::new();
    let mut names: HashMap<&str, &str> = HashMap::new();
    for s in &template.substitutions {
        if !bases.insert(s.base.as_str()) {
            return Err(invalid(format!(
                "render: cannot reuse the same substitution base {:?}",
                s.base
            )));
        }
        if let Some(earlier) = names.insert(&s.name, &s.base) {
            return Err(invalid(format!(
                "render: cannot reuse the same substitution {:?} for different bases ({earlier:?} and {:?})",
                s.name, s.base
            )));
        }
        substitute(&mut dc, s, render_bundle).map_err(|e| {
            let message = format!(
                "render: error processing substitution {:?} -> {:?}: {e}",
                s.base, s.name
            );
            match e {
                Failure::Bundle(_) => Error::Bundle(message),
                Failure::Invalid(_) => Error::Invalid(message),
            }
        })?;
    }
    Ok(dc)
}

/// Why one substitution failed: the bundle it names could not be rendered, or the template
/// asks for what cannot be.
enum Failure {
    Bundle(String),
    Invalid(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Bundle(m) | Failure::Invalid(m) => f.write_str(m),
        }
    }
}

/// Applies one substitution to `dc`, checked first as opm checks it.
fn substitute(
    dc: &mut DeclarativeConfig,
    s: &Substitution,
    render_bundle: &mut RenderBundle,
) -> Result<(), Failure> {
    let invalid = |m: &str| Failure::Invalid(m.to_owned());
    if s.name.is_empty() {
        return Err(invalid("substitution name cannot be empty"));
    }
    if s.base.is_empty() {
        return Err(invalid("substitution base cannot be empty"));
    }
    if s.name == s.base {
        return Err(invalid("substitution name and base cannot be the same"));
    }
    let rendered = render_bundle(&s.name).map_err(|e| {
        Failure::Bundle(format!(
            "failed to render bundle image reference {:?}: {e}",
            s.name
        ))
    })?;
    // opm takes the first bundle the reference renders to.
    let Some(new) = rendered.into_iter().next() else {
        return Err(Failure::Bundle(format!(
            "rendered bundle image reference {:?} contains no bundles",
            s.name
        )));
    };
    let new_version = VersionRelease::of_bundle_opm(&new).map_err(|e| {
        Failure::Invalid(format!(
            "failed to get VersionRelease for substitute bundle {:?}: {e}",
            s.name
        ))
    })?;
    let base = dc
        .bundles
        .iter()
        .find(|b| b.name == s.base)
        .ok_or_else(|| {
            Failure::Invalid(format!(
                "base bundle {:?} does not exist in catalog",
                s.base
            ))
        })?;
    let base_version = VersionRelease::of_bundle_opm(base).map_err(|e| {
        Failure::Invalid(format!(
            "failed to get VersionRelease for base bundle {:?}: {e}",
            s.base
        ))
    })?;
    if base_version >= new_version {
        return Err(Failure::Invalid(format!(
            "base bundle {:?} is not less than substitute bundle {:?}",
            s.base, s.name
        )));
    }
    for channel in &mut dc.channels {
        relink(&mut channel.entries, &s.base, &new);
    }
    dc.bundles.push(new);
    Model::build(dc.clone())
        .map(drop)
        .map_err(|e| Failure::Invalid(format!("resulting config is not valid FBC: {e}")))
}

/// In one channel: every entry of `base` hands its edges to a new entry of `new` (appended
/// at the end, last one first, as opm does), which also skips `base`; entries that replaced
/// `base` replace `new` and skip `base`, and entries that skipped `base` skip `new` instead.
fn relink(entries: &mut Vec<ChannelEntry>, base: &str, new: &Bundle) {
    let of_base: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].name == base)
        .collect();
    for &i in of_base.iter().rev() {
        let old = &mut entries[i];
        let mut skips = std::mem::take(&mut old.skips);
        skips.push(base.to_owned());
        let entry = ChannelEntry {
            name: new.name.clone(),
            replaces: std::mem::take(&mut old.replaces),
            skips,
            skip_range: std::mem::take(&mut old.skip_range),
        };
        entries.push(entry);
    }
    let original = entries.len() - of_base.len();
    for e in &mut entries[..original] {
        if e.replaces == base {
            e.replaces = new.name.clone();
            e.skips.push(base.to_owned());
        } else if e.skips.iter().any(|s| s == base) {
            e.skips.push(new.name.clone());
            e.skips.retain(|s| s != base);
        }
    }
}

/// The template's first document, read as opm's struct decoding reads it: field names match
/// case-insensitively, unknown fields are ignored, `null` is an absent field.
fn parse(input: &[u8]) -> Result<Template, String> {
    let doc = first_document(input).map_err(|e| format!("decoding template schema: {e}"))?;
    let unmarshal = |what: &str, got: &Value, go_type: &str| {
        format!(
            "unmarshalling template: json: cannot unmarshal {} into {what} of type {go_type}",
            catalog::kind_name(got)
        )
    };
    let Value::Object(map) = &doc else {
        return Err(unmarshal(
            "Go value",
            &doc,
            "substitutes.SubstitutesTemplateData",
        ));
    };
    let field = |map: &'_ serde_json::Map<String, Value>, name: &str| -> Option<Value> {
        map.get(name)
            .or_else(|| {
                map.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v)
            })
            .filter(|v| !v.is_null())
            .cloned()
    };
    let string =
        |map: &serde_json::Map<String, Value>, name: &str, what: &str| match field(map, name) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(unmarshal(what, &other, "string")),
        };
    let schema = string(
        map,
        "schema",
        "Go struct field SubstitutesTemplateData.schema",
    )?;
    let entries = match field(map, "entries") {
        None => Vec::new(),
        Some(Value::Array(entries)) => entries,
        Some(other) => {
            return Err(unmarshal(
                "Go struct field SubstitutesTemplateData.entries",
                &other,
                "[]*declcfg.Meta",
            ));
        }
    };
    if let Some(entry) = entries.iter().find(|e| !e.is_object()) {
        return Err(unmarshal("Go value", entry, "map[string]interface {}"));
    }
    let substitutions = match field(map, "substitutions") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                let what = |f: &str| format!("Go struct field Substitute.substitutions.{f}");
                let Value::Object(s) = item else {
                    return Err(unmarshal(
                        "Go struct field SubstitutesTemplateData.substitutions",
                        item,
                        "substitutes.Substitute",
                    ));
                };
                Ok(Substitution {
                    name: string(s, "name", &what("name"))?,
                    base: string(s, "base", &what("base"))?,
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(unmarshal(
                "Go struct field SubstitutesTemplateData.substitutions",
                &other,
                "[]substitutes.Substitute",
            ));
        }
    };
    if schema != SCHEMA {
        return Err(format!(
            "template has unknown schema ({schema:?}), should be {SCHEMA:?}"
        ));
    }
    Ok(Template {
        entries,
        substitutions,
    })
}
