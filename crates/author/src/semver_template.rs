//! The semver template (`olm.semver`, catalog-templates.md §3): bundles listed per
//! stability archetype become `<archetype>-vX` / `<archetype>-vX.Y` channels whose
//! replaces/skips edges and default channel are exactly upstream's.
use super::bundle_package_version;
use super::error::Error;
use super::template::{RenderBundle, decode_strict_field};
use catalog::kind_name;
use catalog::property::{self, Typed};
use catalog::semver::Version;
use catalog::{Bundle, Channel, ChannelEntry, DeclarativeConfig, Icon, Package};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) const SCHEMA: &str = "olm.semver";

/// The archetypes in ascending stability; the index is the priority.
const ARCHETYPES: [&str; 3] = ["candidate", "fast", "stable"];

/// Bundle names and versions of one archetype, in template order.
type Versions = Vec<(String, Version)>;

/// How a channel ranks for default: (archetype priority, its lowest version, whether its
/// stream is the preferred one, stream rank); the highest wins.
type Score<'v> = (usize, &'v Version, bool, Stream);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Stream {
    Major,
    Minor,
}

impl Stream {
    fn channel(self, archetype: &str, v: &Version) -> String {
        match self {
            Stream::Major => format!("{archetype}-v{}", v.major),
            Stream::Minor => format!("{archetype}-v{}.{}", v.major, v.minor),
        }
    }
}

#[derive(Debug, Default)]
struct Template {
    schema: String,
    major: bool,
    minor: bool,
    preference: String,
    /// Images per archetype, in [`ARCHETYPES`] order.
    images: [Vec<String>; 3],
}

pub(crate) fn render(
    input: &[u8],
    render_bundle: &mut RenderBundle,
) -> Result<DeclarativeConfig, Error> {
    let (template, preference) =
        read(input).map_err(|e| Error::Invalid(format!("render: unable to read file: {e}")))?;

    // Each bundle with the reference it was rendered from: its image may be named otherwise.
    let mut rendered: Vec<(&str, Bundle)> = Vec::new();
    let mut seen = BTreeSet::new();
    for image in template.images.iter().flatten() {
        if !seen.insert(image.as_str()) {
            continue;
        }
        let bundles = render_bundle(image).map_err(Error::Bundle)?;
        let [bundle] = <[_; 1]>::try_from(bundles).map_err(|b: Vec<Bundle>| {
            Error::Bundle(format!(
                "bundle reference {image:?} resulted in {} bundles, expected 1",
                b.len()
            ))
        })?;
        rendered.push((image, bundle));
    }
    if rendered.is_empty() {
        return Err(Error::Invalid(
            "render: no bundles specified or no bundles could be rendered".into(),
        ));
    }
    let (package, versions) = archetype_versions(&template, &rendered)
        .map_err(|e| Error::Invalid(format!("render: unable to post-process bundle info: {e}")))?;
    let (channels, default_channel) = channels(&template, preference, &versions, &package);
    let mut pkg = Package {
        name: package.clone(),
        default_channel,
        ..Default::default()
    };
    let bundles: Vec<Bundle> = rendered.into_iter().map(|(_, b)| b).collect();
    describe_package(&mut pkg, &channels, &bundles);
    Ok(DeclarativeConfig {
        packages: vec![pkg],
        channels,
        bundles,
        ..Default::default()
    })
}

/// Decodes strictly, as sigs.k8s.io/yaml's UnmarshalStrict does, then applies the defaults
/// and checks of §3.1.
fn read(input: &[u8]) -> Result<(Template, Stream), String> {
    let value: Value =
        serde_yaml::from_slice(input).map_err(|e| format!("error converting YAML to JSON: {e}"))?;
    let mut t = Template::default();
    decode_template(&value, &mut t)
        .map_err(|e| format!("error unmarshaling JSON: while decoding JSON: json: {e}"))?;
    if t.schema != SCHEMA {
        return Err(format!(
            "readFile: input file has unknown schema, should be {SCHEMA:?}"
        ));
    }
    if !t.major && !t.minor {
        t.minor = true;
    }
    let preference = match t.preference.as_str() {
        "" if t.minor => Stream::Minor,
        "" => Stream::Major,
        "minor" | "major" => {
            let (stream, generated) = if t.preference == "minor" {
                (Stream::Minor, t.minor)
            } else {
                (Stream::Major, t.major)
            };
            if !generated {
                return Err(format!(
                    "schema attribute mismatch: DefaultChannelTypePreference set to '{0}' doesn't make sense if not generating {0}-version channels",
                    t.preference
                ));
            }
            stream
        }
        other => {
            return Err(format!(
                "unknown DefaultChannelTypePreference: {other:?}\nValid values are 'major' or 'minor'"
            ));
        }
    };
    Ok((t, preference))
}

const STRUCT: &str = "SemverTemplateData";

fn decode_template(value: &Value, t: &mut Template) -> Result<(), String> {
    let fields = [
        "schema",
        "generateMajorChannels",
        "generateMinorChannels",
        "defaultChannelTypePreference",
        "candidate",
        "fast",
        "stable",
    ];
    let Some(map) = object(value, "", "semver.SemverTemplateData")? else {
        return Ok(());
    };
    for (key, v) in map {
        match decode_strict_field(&fields, key)? {
            "schema" => t.schema = string(v, "schema", "string")?,
            "generateMajorChannels" => t.major = boolean(v, "generateMajorChannels")?,
            "generateMinorChannels" => t.minor = boolean(v, "generateMinorChannels")?,
            "defaultChannelTypePreference" => {
                t.preference = string(v, "defaultChannelTypePreference", "semver.StreamType")?
            }
            archetype => {
                let i = ARCHETYPES
                    .iter()
                    .position(|a| *a == archetype)
                    .expect("an archetype field");
                t.images[i] = decode_bundles(v, archetype)?;
            }
        }
    }
    Ok(())
}

fn decode_bundles(value: &Value, archetype: &str) -> Result<Vec<String>, String> {
    let mut images = Vec::new();
    let Some(map) = object(value, archetype, "semver.channelBundles")? else {
        return Ok(images);
    };
    for (key, v) in map {
        decode_strict_field(&["bundles"], key)?;
        let path = format!("{archetype}.bundles");
        images.clear();
        let items = match v {
            Value::Null => continue,
            Value::Array(items) => items,
            other => return Err(mismatch(other, &path, "[]semver.bundleEntry")),
        };
        for item in items {
            let mut image = String::new();
            if let Some(entry) = object(item, &path, "semver.bundleEntry")? {
                for (key, v) in entry {
                    decode_strict_field(&["image"], key)?;
                    image = string(v, &format!("{path}.image"), "string")?;
                }
            }
            images.push(image);
        }
    }
    Ok(images)
}

fn object<'a>(
    v: &'a Value,
    path: &str,
    go_type: &str,
) -> Result<Option<&'a Map<String, Value>>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        other => Err(mismatch(other, path, go_type)),
    }
}

fn string(v: &Value, path: &str, go_type: &str) -> Result<String, String> {
    match v {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        other => Err(mismatch(other, path, go_type)),
    }
}

fn boolean(v: &Value, path: &str) -> Result<bool, String> {
    match v {
        Value::Null => Ok(false),
        Value::Bool(b) => Ok(*b),
        other => Err(mismatch(other, path, "bool")),
    }
}

/// Go's UnmarshalTypeError text.
fn mismatch(v: &Value, path: &str, go_type: &str) -> String {
    let got = kind_name(v);
    if path.is_empty() {
        format!("cannot unmarshal {got} into Go value of type {go_type}")
    } else {
        format!("cannot unmarshal {got} into Go struct field {STRUCT}.{path} of type {go_type}")
    }
}

/// The package, and bundle versions per archetype (by bundle name), with the checks of
/// §3.2 steps 2–3.
fn archetype_versions(
    t: &Template,
    rendered: &[(&str, Bundle)],
) -> Result<(String, [Versions; 3]), String> {
    let mut package: Option<String> = None;
    let mut out: [Versions; 3] = Default::default();
    for (images, versions) in t.images.iter().zip(out.iter_mut()) {
        for image in images {
            let (_, b) = rendered.iter().find(|(r, _)| r == image).ok_or_else(|| {
                format!("supplied bundle image name {image:?} not found in rendered bundle images")
            })?;
            let (pkg, version) = bundle_package_version(b)?;
            match &package {
                Some(p) if *p != pkg => {
                    return Err(format!(
                        "bundle {pkg:?} does not belong to this package: {p:?}"
                    ));
                }
                Some(_) => {}
                None => package = Some(pkg),
            }
            if versions.iter().any(|(name, _)| *name == b.name) {
                return Err(format!("duplicate bundle name {:?}", b.name));
            }
            versions.push((b.name.clone(), version));
        }
        without_build_metadata_conflict(versions)?;
    }
    Ok((package.unwrap_or_default(), out))
}

fn without_build_metadata_conflict(versions: &[(String, Version)]) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    let mut errors = Vec::new();
    for (_, v) in versions {
        let stripped = Version {
            build: Vec::new(),
            ..v.clone()
        }
        .to_string();
        if !seen.insert(stripped.clone()) {
            errors.push(format!(
                "bundle version \"{v}\" cannot be compared to \"{stripped}\""
            ));
        }
    }
    let aggregate = match errors.len() {
        0 => return Ok(()),
        1 => errors.remove(0),
        _ => format!("[{}]", errors.join(", ")),
    };
    Err(format!(
        "encountered bundle versions which differ only by build metadata, which cannot be ordered: {aggregate}"
    ))
}

/// The channels sorted by name, and the default channel's name.
fn channels(
    t: &Template,
    preference: Stream,
    versions: &[Versions; 3],
    package: &str,
) -> (Vec<Channel>, String) {
    let streams: Vec<Stream> = [(t.major, Stream::Major), (t.minor, Stream::Minor)]
        .into_iter()
        .filter_map(|(on, s)| on.then_some(s))
        .collect();
    let mut channels: BTreeMap<String, Vec<ChannelEntry>> = BTreeMap::new();
    let mut best: Option<(Score, String)> = None;
    for (priority, archetype) in ARCHETYPES.iter().enumerate() {
        let mut sorted: Vec<&(String, Version)> = versions[priority].iter().collect();
        sorted.sort_by(|a, b| a.1.cmp(&b.1));
        for &stream in &streams {
            // Edges never cross an archetype, a stream or a major version; within a major,
            // each Y-stream's highest entry replaces the previous Y-stream's and skips the rest.
            let mut earlier: Vec<&str> = Vec::new();
            let mut previous_head = "";
            for (i, (name, v)) in sorted.iter().map(|e| (&e.0, &e.1)).enumerate() {
                let channel = stream.channel(archetype, v);
                let created = !channels.contains_key(&channel);
                let score = (priority, v, stream == preference, stream);
                if created && best.as_ref().is_none_or(|(b, _)| score > *b) {
                    best = Some((score, channel.clone()));
                }
                if i > 0 && sorted[i - 1].1.major != v.major {
                    earlier.clear();
                    previous_head = "";
                }
                let next = sorted.get(i + 1).map(|e| &e.1);
                let heads_stream = next.is_none_or(|n| (n.major, n.minor) != (v.major, v.minor));
                let mut entry = ChannelEntry {
                    name: name.clone(),
                    ..Default::default()
                };
                if heads_stream {
                    entry.replaces = previous_head.to_owned();
                    let skips: BTreeSet<&str> = earlier
                        .iter()
                        .copied()
                        .filter(|s| *s != previous_head)
                        .collect();
                    entry.skips = skips.into_iter().map(str::to_owned).collect();
                    previous_head = name;
                }
                earlier.push(name);
                channels.entry(channel).or_default().push(entry);
            }
        }
    }
    let channels = channels
        .into_iter()
        .map(|(name, entries)| Channel {
            name,
            package: package.to_owned(),
            entries,
            ..Default::default()
        })
        .collect();
    (channels, best.map(|(_, name)| name).unwrap_or_default())
}

/// The default channel head's CSV description and first icon, when it has a CSV.
fn describe_package(pkg: &mut Package, channels: &[Channel], rendered: &[Bundle]) {
    let head = channels
        .iter()
        .find(|c| c.name == pkg.default_channel)
        .and_then(|c| c.entries.last());
    let Some(bundle) = head.and_then(|h| rendered.iter().find(|b| b.name == h.name)) else {
        return;
    };
    let Some(csv) = bundle.properties.iter().find_map(|p| {
        let Ok(Typed::BundleObject { data }) = property::parse(p) else {
            return None;
        };
        let text = property::decode_bundle_object(&data).ok()?;
        let object: Value = serde_yaml::from_str(&text).ok()?;
        (object["kind"] == "ClusterServiceVersion").then_some(object)
    }) else {
        return;
    };
    if let Some(description) = csv["spec"]["description"].as_str() {
        pkg.description = description.to_owned();
    }
    if let Some(icon) = csv["spec"]["icon"].get(0) {
        pkg.icon = serde_json::from_value::<Icon>(icon.clone()).ok();
    }
}
