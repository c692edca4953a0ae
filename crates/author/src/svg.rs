//! A self-contained SVG picture of each package's upgrade graph, for authors who want to
//! look at a graph without a Mermaid renderer: one lane per channel, bundles placed left
//! to right by version (the same column in every lane), edges as arcs above the lane.
//!
//! The layout is computed here rather than by a graph-layout crate: versions already give
//! a total order and channels a natural row, so a general layered layout would only move
//! bundles away from where an author expects them.
use super::bundle_versions;
use super::error::Error;
use catalog::semver::{Range, Version};
use catalog::{Channel, DeclarativeConfig, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE, graph};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

const LANE_LABEL: f64 = 170.0;
const LANE_HEIGHT: f64 = 120.0;
const NODE_HEIGHT: f64 = 26.0;
const GAP: f64 = 24.0;
const CHAR_WIDTH: f64 = 7.0;
const HEADER: f64 = 40.0;
const LEGEND: f64 = 40.0;

/// The kinds of edge, in the order of [`KINDS`].
#[derive(Clone, Copy)]
enum EdgeKind {
    Replaces,
    Skips,
    SkipRange,
}

/// Edge kinds: class, stroke and dash pattern. Colours stay apart in greyscale print too.
const KINDS: [(&str, &str, &str); 3] = [
    ("replaces", "#1f4e9c", ""),
    ("skips", "#d1661b", "6 4"),
    ("skipRange", "#7b3fa0", "2 3"),
];

/// Draws every package of `dc` (or only `package`) as one SVG document.
pub fn write_svg(dc: &DeclarativeConfig, package: Option<&str>) -> Result<String, Error> {
    let versions = Versions {
        by_name: bundle_versions(dc).map_err(Error::Invalid)?,
        zero: Version::parse("0.0.0").expect("a valid version"),
    };
    let deprecated = Deprecated::of(dc);
    let mut body = String::new();
    let mut y = LEGEND;
    let mut width: f64 = 640.0;
    for (name, channels) in packages(dc, package) {
        let columns = Columns::of(&channels, &versions);
        width = width.max(columns.width);
        let package = Package {
            name,
            columns,
            versions: &versions,
            deprecated: &deprecated,
        };
        package.draw(&mut body, &mut y, channels);
    }
    let mut out = String::new();
    write_prelude(&mut out, width, y);
    write_legend(&mut out);
    out.push_str(&body);
    out.push_str("</svg>\n");
    Ok(out)
}

/// Bundle versions by name; an entry that names no bundle counts as 0.0.0.
struct Versions {
    by_name: HashMap<String, Version>,
    zero: Version,
}

impl Versions {
    fn of(&self, name: &str) -> &Version {
        self.by_name.get(name).unwrap_or(&self.zero)
    }
}

/// What the catalog's deprecations name, by kind.
#[derive(Default)]
struct Deprecated<'a> {
    /// (package, bundle)
    bundles: HashSet<(&'a str, &'a str)>,
    /// (package, channel)
    channels: HashSet<(&'a str, &'a str)>,
    packages: HashSet<&'a str>,
}

impl<'a> Deprecated<'a> {
    fn of(dc: &'a DeclarativeConfig) -> Self {
        let mut deprecated = Deprecated::default();
        for d in &dc.deprecations {
            for e in &d.entries {
                let key = (d.package.as_str(), e.reference.name.as_str());
                match e.reference.schema.as_str() {
                    SCHEMA_BUNDLE => deprecated.bundles.insert(key),
                    SCHEMA_CHANNEL => deprecated.channels.insert(key),
                    SCHEMA_PACKAGE => deprecated.packages.insert(d.package.as_str()),
                    _ => false,
                };
            }
        }
        deprecated
    }
}

/// The channels to draw by package name, packages in name order, channels in `dc`'s order.
fn packages<'a>(
    dc: &'a DeclarativeConfig,
    package: Option<&str>,
) -> BTreeMap<&'a str, Vec<&'a Channel>> {
    let mut packages: BTreeMap<&str, Vec<&Channel>> = BTreeMap::new();
    for c in &dc.channels {
        if package.is_none_or(|p| p == c.package) {
            packages.entry(&c.package).or_default().push(c);
        }
    }
    packages
}

/// The horizontal layout of one package: one column per bundle of the package, by ascending
/// version then name, the same in every lane.
struct Columns<'a> {
    /// Each bundle's left edge.
    x_of: HashMap<&'a str, f64>,
    node_width: f64,
    /// The width of the package's lanes.
    width: f64,
}

impl<'a> Columns<'a> {
    fn of(channels: &[&'a Channel], versions: &Versions) -> Self {
        let mut columns: Vec<&str> = channels
            .iter()
            .flat_map(|c| c.entries.iter().map(|e| e.name.as_str()))
            .collect();
        columns.sort_by(|a, b| versions.of(a).cmp(versions.of(b)).then(a.cmp(b)));
        columns.dedup();
        let node_width =
            columns.iter().map(|n| n.len()).max().unwrap_or(0) as f64 * CHAR_WIDTH + 16.0;
        let x_of = columns
            .iter()
            .enumerate()
            .map(|(i, n)| (*n, LANE_LABEL + GAP + i as f64 * (node_width + GAP)))
            .collect();
        Columns {
            x_of,
            node_width,
            width: LANE_LABEL + GAP + columns.len() as f64 * (node_width + GAP),
        }
    }

    /// The horizontal centre of a bundle's box; none for a bundle outside the package's
    /// channels.
    fn centre(&self, name: &str) -> Option<f64> {
        self.x_of.get(name).map(|x| x + self.node_width / 2.0)
    }
}

/// One package as it is drawn: a header, then one lane per channel.
struct Package<'a> {
    name: &'a str,
    columns: Columns<'a>,
    versions: &'a Versions,
    deprecated: &'a Deprecated<'a>,
}

impl Package<'_> {
    /// Draws the package from `y` down, leaving `y` below it.
    fn draw(&self, body: &mut String, y: &mut f64, mut channels: Vec<&Channel>) {
        let name = self.name;
        channels.sort_by(|a, b| a.name.cmp(&b.name));
        let deprecated = if self.deprecated.packages.contains(name) {
            " (deprecated)"
        } else {
            ""
        };
        let _ = writeln!(
            body,
            r#"<g class="package" id="{}"><text class="package-name" x="8" y="{}">package {}{deprecated}</text>"#,
            attr(&format!("package-{name}")),
            *y + 24.0,
            text(name)
        );
        *y += HEADER;
        for c in channels {
            self.lane(body, *y, c);
            *y += LANE_HEIGHT;
        }
        body.push_str("</g>\n");
        *y += GAP;
    }

    /// One channel's lane, its top at `y`: the band and its label, the edges, the bundles.
    fn lane(&self, body: &mut String, y: f64, c: &Channel) {
        let name = self.name;
        let lane_deprecated = self.deprecated.channels.contains(&(name, c.name.as_str()));
        let fill = if lane_deprecated {
            "#ece4ff"
        } else {
            "#f4f6f8"
        };
        let _ = writeln!(
            body,
            r##"<g class="channel" id="{}"><rect x="0" y="{y}" width="{}" height="{}" fill="{fill}" stroke="#c8ccd0"/><text class="channel-name" x="8" y="{}">{}{}</text>"##,
            attr(&format!("channel-{name}-{}", c.name)),
            self.columns.width,
            LANE_HEIGHT - 4.0,
            y + LANE_HEIGHT / 2.0 + 4.0,
            text(&c.name),
            if lane_deprecated { " (deprecated)" } else { "" }
        );
        let node_top = y + LANE_HEIGHT - NODE_HEIGHT - 14.0;
        for (kind, from, to) in self.edges(c) {
            self.edge(body, y, node_top, kind, from, to);
        }
        let (head, _) = graph::check(&c.entries);
        for e in &c.entries {
            self.bundle(body, node_top, &e.name, head == Some(e.name.as_str()));
        }
        body.push_str("</g>\n");
    }

    /// The channel's edges as (kind, from, to), entry by entry: replaces, skips, then the
    /// other entries the skip range takes in.
    fn edges<'c>(&self, c: &'c Channel) -> Vec<(EdgeKind, &'c str, &'c str)> {
        let mut edges = Vec::new();
        for e in &c.entries {
            if !e.replaces.is_empty() {
                edges.push((EdgeKind::Replaces, e.replaces.as_str(), e.name.as_str()));
            }
            for s in &e.skips {
                edges.push((EdgeKind::Skips, s.as_str(), e.name.as_str()));
            }
            if let Ok(range) = Range::parse(&e.skip_range) {
                for other in c.entries.iter().filter(|o| o.name != e.name) {
                    if range.contains(self.versions.of(&other.name)) {
                        edges.push((EdgeKind::SkipRange, other.name.as_str(), e.name.as_str()));
                    }
                }
            }
        }
        edges
    }

    /// An arc from one bundle's box up and over to another's, in a lane whose top is at `y`;
    /// nothing when either end is not drawn.
    fn edge(&self, body: &mut String, y: f64, node_top: f64, kind: EdgeKind, from: &str, to: &str) {
        let (Some(x1), Some(x2)) = (self.columns.centre(from), self.columns.centre(to)) else {
            return;
        };
        let (class, stroke, dash) = KINDS[kind as usize];
        // Kinds rise to different heights so that parallel edges of two kinds stay apart.
        let rise =
            (18.0 + (x2 - x1).abs() / 6.0 + 12.0 * kind as usize as f64).min(node_top - y - 8.0);
        let dash = if dash.is_empty() {
            String::new()
        } else {
            format!(r#" stroke-dasharray="{dash}""#)
        };
        let _ = writeln!(
            body,
            r#"<path class="edge {class}" data-from="{}" data-to="{}" d="M {x1} {node_top} C {x1} {} {x2} {} {x2} {node_top}" fill="none" stroke="{stroke}" stroke-width="1.6"{dash} marker-end="url(#arrow-{class})"><title>{} {class} {}</title></path>"#,
            attr(from),
            attr(to),
            node_top - rise,
            node_top - rise,
            text(to),
            text(from)
        );
    }

    /// A bundle's box in its column, marked as the channel head and as deprecated.
    fn bundle(&self, body: &mut String, node_top: f64, name: &str, is_head: bool) {
        let x = self.columns.x_of[name];
        let node_width = self.columns.node_width;
        let bundle_deprecated = self.deprecated.bundles.contains(&(self.name, name));
        let (fill, stroke, stroke_width) = match (is_head, bundle_deprecated) {
            (_, true) => (
                "#f6c27a",
                if is_head { "#1d7a35" } else { "#9a5b00" },
                if is_head { 3.0 } else { 1.2 },
            ),
            (true, false) => ("#d9f2df", "#1d7a35", 3.0),
            (false, false) => ("#ffffff", "#4a5056", 1.2),
        };
        let mut classes = String::from("bundle");
        if is_head {
            classes.push_str(" head");
        }
        if bundle_deprecated {
            classes.push_str(" deprecated");
        }
        let _ = writeln!(
            body,
            r#"<g class="{classes}" data-name="{}"><title>{}{}{}</title><rect x="{x}" y="{node_top}" width="{node_width}" height="{NODE_HEIGHT}" rx="5" fill="{fill}" stroke="{stroke}" stroke-width="{stroke_width}"/><text x="{}" y="{}" text-anchor="middle">{}</text></g>"#,
            attr(name),
            text(name),
            if is_head { " (channel head)" } else { "" },
            if bundle_deprecated {
                " (deprecated)"
            } else {
                ""
            },
            x + node_width / 2.0,
            node_top + NODE_HEIGHT / 2.0 + 4.0,
            text(name)
        );
    }
}

/// The document's start: its size, the styles, and one arrow head per edge kind.
fn write_prelude(out: &mut String, width: f64, height: f64) {
    let _ = writeln!(
        out,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">
<style>.package-name {{ font-size: 15px; font-weight: bold; }} .channel-name {{ font-size: 12px; font-weight: bold; fill: #30363d; }}</style>
<defs>"#
    );
    for (class, stroke, _) in KINDS {
        let _ = writeln!(
            out,
            r#"<marker id="arrow-{class}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="{stroke}"/></marker>"#
        );
    }
    out.push_str("</defs>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");
}

/// The legend along the top: what each line and box means.
fn write_legend(out: &mut String) {
    let mut x = 8.0;
    for (class, stroke, dash) in KINDS {
        let _ = writeln!(
            out,
            r#"<g class="legend"><line x1="{x}" y1="20" x2="{}" y2="20" stroke="{stroke}" stroke-width="1.6" stroke-dasharray="{dash}" marker-end="url(#arrow-{class})"/><text x="{}" y="24">{class}</text></g>"#,
            x + 36.0,
            x + 42.0
        );
        x += 120.0;
    }
    let _ = writeln!(
        out,
        r##"<g class="legend"><rect x="{x}" y="11" width="18" height="16" rx="3" fill="#d9f2df" stroke="#1d7a35" stroke-width="3"/><text x="{}" y="24">channel head</text><rect x="{}" y="11" width="18" height="16" rx="3" fill="#f6c27a" stroke="#9a5b00"/><text x="{}" y="24">deprecated</text></g>"##,
        x + 24.0,
        x + 120.0,
        x + 144.0
    );
}

/// Text content escaped for XML.
fn text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An attribute value escaped for XML.
fn attr(s: &str) -> String {
    text(s).replace('"', "&quot;")
}

#[cfg(test)]
mod tests;
