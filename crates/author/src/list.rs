//! `alpha list`: the packages, channels or bundles of a catalog as the table opm prints —
//! its columns, its order (by package, channel, bundle name), and its alignment (Go's
//! tabwriter: each column as wide as its widest cell plus two spaces).
use super::Error;
use catalog::DeclarativeConfig;
use catalog::add::version_of;
use catalog::file::ReadLimits;
use catalog::model::{Model, ModelPackage};
use catalog::property::{self, Typed};
use catalog::quote::go_quote;
use catalog::semver::Version;
use serde_json::Value;
use source::image::Images;
use source::reference::{Held, load_catalog};

/// What to list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listing {
    Packages,
    /// The channels of one package, or of all.
    Channels(Option<String>),
    /// The bundles of one package, or of all: one row per channel a bundle is in.
    Bundles(Option<String>),
    /// The versions of the bundles in one channel of one package, oldest first: what
    /// `mirror list operators --package P --channel C` prints, as oc-mirror does.
    Versions {
        package: String,
        channel: String,
    },
}

/// Why a listing failed.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error(transparent)]
    Load(#[from] source::Error),
    #[error("{0}")]
    List(Error),
}

/// The table of `what` in the catalog `reference` names (an FBC directory, an index.db, or a
/// catalog or legacy index image). The catalog must be valid, as opm requires.
pub fn list_reference(
    images: &mut Images,
    limits: ReadLimits,
    reference: &str,
    what: &Listing,
) -> Result<String, ListError> {
    match load_catalog(images, limits, reference)? {
        Held::Bundle => Err(ListError::List(Error::Invalid(format!(
            "cannot list non-index {}",
            go_quote(reference)
        )))),
        Held::Catalog(dc) => list(dc, what).map_err(ListError::List),
    }
}

/// The table of `what` in a catalog.
pub fn list(dc: DeclarativeConfig, what: &Listing) -> Result<String, Error> {
    let model = Model::build(dc).map_err(|e| Error::Invalid(e.to_string()))?;
    let packages = |name: &Option<String>| -> Result<Vec<&ModelPackage>, Error> {
        match name {
            None => Ok(model.packages.values().collect()),
            Some(n) => model
                .packages
                .get(n)
                .map(|p| vec![p])
                .ok_or_else(|| Error::Invalid(format!("package {} not found", go_quote(n)))),
        }
    };
    // Rows in opm's order: the model's maps are sorted by name (byte order, as Go sorts).
    let mut text = String::new();
    match what {
        Listing::Packages => {
            text.push_str("NAME\tDISPLAY NAME\tDEFAULT CHANNEL\n");
            for p in model.packages.values() {
                let row = [p.name.as_str(), &display_name(p), &p.default_channel];
                push_row(&mut text, &row);
            }
        }
        Listing::Channels(name) => {
            text.push_str("PACKAGE\tCHANNEL\tHEAD\n");
            for p in packages(name)? {
                for c in p.channels.values() {
                    push_row(&mut text, &[&p.name, &c.name, &c.head]);
                }
            }
        }
        Listing::Bundles(name) => {
            text.push_str("PACKAGE\tCHANNEL\tBUNDLE\tREPLACES\tSKIPS\tSKIP RANGE\tIMAGE\n");
            for p in packages(name)? {
                for c in p.channels.values() {
                    let mut entries: Vec<_> = c.entries.iter().collect();
                    entries.sort_by(|a, b| a.name.cmp(&b.name));
                    for e in entries {
                        let image = p.bundles.get(&e.name).map_or("", |b| b.image.as_str());
                        let skips = e.skips.join(",");
                        let row = [
                            p.name.as_str(),
                            &c.name,
                            &e.name,
                            &e.replaces,
                            &skips,
                            &e.skip_range,
                            image,
                        ];
                        push_row(&mut text, &row);
                    }
                }
            }
        }
        Listing::Versions { package, channel } => {
            let p = packages(&Some(package.clone()))?[0];
            let c = p.channels.get(channel).ok_or_else(|| {
                let known: Vec<&str> = p.channels.keys().map(String::as_str).collect();
                Error::Invalid(format!(
                    "package {} has no channel {} (its channels: {})",
                    go_quote(package),
                    go_quote(channel),
                    known.join(", ")
                ))
            })?;
            // oc-mirror prints them in Go's map order, which changes from run to run; oldest
            // first reads better when choosing minVersion/maxVersion. A valid catalog gives
            // every bundle a version, so the name stands in only for what cannot happen.
            let mut versions: Vec<(String, Option<Version>)> = c
                .entries
                .iter()
                .map(|e| match p.bundles.get(&e.name).and_then(version_of) {
                    Some(v) => (v.to_string(), Some(v)),
                    None => (e.name.clone(), None),
                })
                .collect();
            versions.sort_by(|a, b| match (&a.1, &b.1) {
                (Some(x), Some(y)) => x.cmp(y).then_with(|| x.build.cmp(&y.build)),
                _ => a.0.cmp(&b.0),
            });
            text.push_str("VERSIONS\n");
            for (v, _) in versions {
                text.push_str(&v);
                text.push('\n');
            }
        }
    }
    Ok(align_columns(&text))
}

fn push_row(text: &mut String, cells: &[&str]) {
    text.push_str(&cells.join("\t"));
    text.push('\n');
}

/// The display name opm shows for a package: `spec.displayName` of the CSV among the
/// `olm.bundle.object`s of its default channel's head, or "" (also when there is no such CSV,
/// as in catalogs that carry `olm.csv.metadata` instead).
fn display_name(p: &ModelPackage) -> String {
    let Some(head) = p
        .channels
        .get(&p.default_channel)
        .and_then(|c| p.bundles.get(&c.head))
    else {
        return String::new();
    };
    // The first manifest that reads as an object of kind ClusterServiceVersion is the CSV.
    let csv = head.properties.iter().find_map(|prop| {
        let Ok(Typed::BundleObject { data }) = property::parse(prop) else {
            return None;
        };
        let text = property::decode_bundle_object(&data).ok()?;
        let object: Value = serde_json::from_str(&text).ok()?;
        (object["kind"] == "ClusterServiceVersion").then_some(object)
    });
    csv.and_then(|c| c["spec"]["displayName"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Go's `text/tabwriter` with opm's settings (no minimum width, two spaces of padding,
/// padded with spaces, no flags) applied to `text`: cells end at a tab (or vertical tab),
/// lines at a newline (or form feed, written as a newline). A column is a run of consecutive
/// lines that have a cell there; it is as wide as its widest cell (counted in characters) plus
/// two. The last cell of a line belongs to no column and is written as it is.
fn align_columns(text: &str) -> String {
    let lines: Vec<Vec<&str>> = text
        .split(['\n', '\x0c'])
        .map(|line| line.split(['\t', '\x0b']).collect())
        .collect();
    let mut out = String::with_capacity(text.len() * 2);
    let mut widths = Vec::new();
    format_block(&lines, &mut widths, 0, lines.len(), &mut out);
    out
}

/// tabwriter's recursive pass over lines `start..end`, whose columns left of `widths.len()`
/// are already sized.
fn format_block(
    lines: &[Vec<&str>],
    widths: &mut Vec<usize>,
    mut start: usize,
    end: usize,
    out: &mut String,
) {
    let column = widths.len();
    // Whether a line has a tab-terminated cell in this column.
    let has_cell = |line: &Vec<&str>| line.len() > column + 1;
    let mut at = start;
    while at < end {
        if !has_cell(&lines[at]) {
            at += 1;
            continue;
        }
        write_lines(lines, widths, start, at, out);
        start = at;
        let mut width = 0;
        while at < end && has_cell(&lines[at]) {
            width = width.max(lines[at][column].chars().count() + 2);
            at += 1;
        }
        widths.push(width);
        format_block(lines, widths, start, at, out);
        widths.pop();
        start = at;
    }
    write_lines(lines, widths, start, end, out);
}

fn write_lines(lines: &[Vec<&str>], widths: &[usize], start: usize, end: usize, out: &mut String) {
    for (i, line) in lines.iter().enumerate().take(end).skip(start) {
        for (j, cell) in line.iter().enumerate() {
            out.push_str(cell);
            if let Some(width) = widths.get(j) {
                let pad = width - cell.chars().count();
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        // The text after the last line end is the last "line": it gets no newline.
        if i + 1 < lines.len() {
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::align_columns;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_plus_two() {
        assert_eq!(
            align_columns("A\tBB\tC\nxxxx\t\ty\n"),
            "A     BB  C\nxxxx      y\n"
        );
    }

    #[test]
    fn a_line_without_a_cell_in_a_column_ends_that_column() {
        // The third line has one cell: the lines after it form new columns.
        assert_eq!(
            align_columns("a\tb\nlonger\tc\nbreak\nx\ty\n"),
            "a       b\nlonger  c\nbreak\nx  y\n"
        );
        // Widths count characters, not bytes.
        assert_eq!(align_columns("é\tx\nab\ty\n"), "é   x\nab  y\n");
    }
}
