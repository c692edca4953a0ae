//! The picture's exact bytes for a small catalog that uses every feature the drawing knows:
//! a change to the drawing code that is meant to be neutral must leave `pinned.svg` as it is.
use super::write_svg;
use catalog::DeclarativeConfig;
use catalog::decode::parse_documents;

/// Two packages: `p` with two lanes (one deprecated), a deprecated head, every edge kind
/// (including an edge to a bundle outside the lane, which is not drawn) and names that need
/// escaping; `q`, deprecated as a whole, with a single bundle.
const CATALOG: &str = r#"
{"schema": "olm.package", "name": "p", "defaultChannel": "stable"}
{"schema": "olm.channel", "package": "p", "name": "stable", "entries": [
  {"name": "p.v1.0.0"},
  {"name": "p.v1.1.0", "replaces": "p.v1.0.0"},
  {"name": "p.v1.2.0&<x>", "replaces": "p.v1.1.0", "skips": ["p.v1.0.0", "p.v0.9.0"]},
  {"name": "p.v2.0.0", "replaces": "p.v1.2.0&<x>", "skipRange": ">=1.0.0 <2.0.0"}
]}
{"schema": "olm.channel", "package": "p", "name": "fast\"lane", "entries": [
  {"name": "p.v1.1.0"},
  {"name": "p.v2.0.0", "skips": ["p.v1.1.0"]}
]}
{"schema": "olm.package", "name": "q", "defaultChannel": "c"}
{"schema": "olm.channel", "package": "q", "name": "c", "entries": [{"name": "q.v0.1.0"}]}
{"schema": "olm.bundle", "package": "p", "name": "p.v1.0.0", "image": "r/p:1.0.0",
 "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": "1.0.0"}}]}
{"schema": "olm.bundle", "package": "p", "name": "p.v1.1.0", "image": "r/p:1.1.0",
 "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": "1.1.0"}}]}
{"schema": "olm.bundle", "package": "p", "name": "p.v1.2.0&<x>", "image": "r/p:1.2.0",
 "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": "1.2.0"}}]}
{"schema": "olm.bundle", "package": "p", "name": "p.v2.0.0", "image": "r/p:2.0.0",
 "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": "2.0.0"}}]}
{"schema": "olm.bundle", "package": "q", "name": "q.v0.1.0", "image": "r/q:0.1.0",
 "properties": [{"type": "olm.package", "value": {"packageName": "q", "version": "0.1.0"}}]}
{"schema": "olm.deprecations", "package": "p", "entries": [
  {"reference": {"schema": "olm.bundle", "name": "p.v1.0.0"}, "message": "old"},
  {"reference": {"schema": "olm.bundle", "name": "p.v2.0.0"}, "message": "head, yet deprecated"},
  {"reference": {"schema": "olm.channel", "name": "fast\"lane"}, "message": "gone"}
]}
{"schema": "olm.deprecations", "package": "q", "entries": [
  {"reference": {"schema": "olm.package"}, "message": "all of it"}
]}
"#;

fn catalog() -> DeclarativeConfig {
    let mut dc = DeclarativeConfig::default();
    for doc in parse_documents("catalog.json", CATALOG.as_bytes()).expect("a valid catalog") {
        dc.push(doc);
    }
    dc
}

#[test]
fn the_picture_of_a_small_catalog_is_byte_for_byte_the_pinned_one() {
    let dc = catalog();
    assert_eq!(write_svg(&dc, None).unwrap(), include_str!("pinned.svg"));
    assert_eq!(
        write_svg(&dc, Some("q")).unwrap(),
        include_str!("pinned-q.svg")
    );
}
