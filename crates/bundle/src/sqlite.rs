//! Legacy SQLite `index.db` files (catalog-formats.md §E) converted to FBC, as `opm migrate`
//! did at v1.26.4. Schema v13 is the reference; older databases lack some tables and columns
//! (`properties`, `dependencies`, `deprecated`, the graph columns of `operatorbundle`), so the
//! reader asks the database what it has and falls back to the CSV or the API tables.
use super::csv;
use super::error::Error;
use super::manifests::object_property;
use super::metadata::Item;
use super::render::{
    dependency_property, finish_properties, gvk_property, gvk_required_property, package_property,
    related_images,
};
use catalog::Gvk;
use catalog::{
    Bundle, Channel, ChannelEntry, DeclarativeConfig, Origin, Package, Property, RelatedImage,
    property,
};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The first bytes of every SQLite 3 database file.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// Property marking a deprecated bundle; such bundles are not converted.
const DEPRECATED: &str = "olm.deprecated";

/// Whether `path` is a SQLite database file (by its header, not its name).
pub fn is_sqlite_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == SQLITE_MAGIC)
}

/// One `operatorbundle` row.
struct Row {
    csv: Option<Value>,
    manifests: Vec<Value>,
    image: String,
    version: String,
    skip_range: String,
    replaces: String,
    skips: Vec<String>,
}

/// What this database's schema has, beyond the tables every version has.
struct Schema {
    properties: bool,
    dependencies: bool,
    deprecated: bool,
    api_tables: bool,
    related_image: bool,
    graph_columns: bool,
    /// `operatorbundle.bundlepath`: absent before bundle images existed.
    bundle_path: bool,
}

/// Converts the index database at `path`.
pub fn load(path: &Path) -> Result<DeclarativeConfig, Error> {
    let at = |source| Error::IndexDb {
        path: path.to_owned(),
        source,
    };
    let db = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(at)?;
    let has_table = |name: &str| -> Result<bool, Error> {
        db.query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [name],
            |_| Ok(()),
        )
        .optional()
        .map(|found| found.is_some())
        .map_err(at)
    };
    for required in ["package", "channel", "channel_entry", "operatorbundle"] {
        if !has_table(required)? {
            return Err(Error::NotIndexDb {
                path: path.to_owned(),
                table: required,
            });
        }
    }
    let columns = table_columns(&db, "operatorbundle").map_err(at)?;
    let schema = Schema {
        properties: has_table("properties")?,
        dependencies: has_table("dependencies")?,
        deprecated: has_table("deprecated")?,
        api_tables: has_table("api_provider")? && has_table("api_requirer")?,
        related_image: has_table("related_image")?,
        graph_columns: ["skiprange", "version", "replaces", "skips"]
            .iter()
            .all(|c| columns.contains(*c)),
        bundle_path: columns.contains("bundlepath"),
    };
    convert(&db, &schema, path).map_err(at)
}

fn table_columns(db: &Connection, table: &str) -> rusqlite::Result<BTreeSet<String>> {
    let mut stmt = db.prepare(&format!("PRAGMA table_info({table})"))?;
    stmt.query_map([], |r| r.get::<_, String>(1))?.collect()
}

fn convert(db: &Connection, schema: &Schema, path: &Path) -> rusqlite::Result<DeclarativeConfig> {
    let origin = Origin {
        file: path.display().to_string().into(),
        line: 0,
    };
    let deprecated: BTreeSet<String> = if schema.deprecated {
        strings(db, "SELECT operatorbundle_name FROM deprecated", [])?
    } else {
        BTreeSet::new()
    };
    let mut dc = DeclarativeConfig::default();
    let packages: Vec<(String, String)> = db
        .prepare("SELECT name, IFNULL(default_channel, '') FROM package ORDER BY name")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (pkg, default_channel) in packages {
        let channels: Vec<(String, String)> = db
            .prepare(
                "SELECT name, IFNULL(head_operatorbundle_name, '') FROM channel \
                 WHERE package_name = ?1 ORDER BY name",
            )?
            .query_map([&pkg], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut rows: BTreeMap<String, Option<Row>> = BTreeMap::new();
        let mut head_csv = None;
        for (channel, head) in &channels {
            let members = strings(
                db,
                "SELECT DISTINCT operatorbundle_name FROM channel_entry \
                 WHERE package_name = ?1 AND channel_name = ?2",
                params![pkg, channel],
            )?;
            let mut entries = Vec::new();
            for name in members {
                if deprecated.contains(&name) {
                    continue;
                }
                if !rows.contains_key(&name) {
                    let row = read_row(db, schema, &name)?;
                    rows.insert(name.clone(), row);
                }
                // Names that are only skipped have a graph row but no bundle: no entry.
                let Some(Some(row)) = rows.get(&name) else {
                    continue;
                };
                if *channel == default_channel && name == *head {
                    head_csv = row.csv.clone();
                }
                entries.push(ChannelEntry {
                    name,
                    replaces: row.replaces.clone(),
                    skips: row.skips.clone(),
                    skip_range: row.skip_range.clone(),
                });
            }
            dc.channels.push(Channel {
                name: channel.clone(),
                package: pkg.clone(),
                entries,
                properties: Vec::new(),
                origin: origin.clone(),
            });
        }
        dc.packages.push(Package {
            name: pkg.clone(),
            default_channel,
            icon: head_csv.as_ref().and_then(csv::package_icon),
            description: String::new(),
            properties: Vec::new(),
            origin: origin.clone(),
        });
        for (name, row) in rows {
            let Some(row) = row else { continue };
            if let Some(b) = bundle(db, schema, &pkg, &name, row, &origin)? {
                dc.bundles.push(b);
            }
        }
    }
    Ok(dc)
}

fn strings<P: rusqlite::Params>(
    db: &Connection,
    sql: &str,
    p: P,
) -> rusqlite::Result<BTreeSet<String>> {
    db.prepare(sql)?
        .query_map(p, |r| r.get::<_, String>(0))?
        .collect()
}

fn read_row(db: &Connection, schema: &Schema, name: &str) -> rusqlite::Result<Option<Row>> {
    let graph = if schema.graph_columns {
        "IFNULL(version, ''), IFNULL(skiprange, ''), IFNULL(replaces, ''), IFNULL(skips, '')"
    } else {
        "'', '', '', ''"
    };
    let image = if schema.bundle_path {
        "IFNULL(bundlepath, '')"
    } else {
        "''"
    };
    let sql = format!("SELECT csv, bundle, {image}, {graph} FROM operatorbundle WHERE name = ?1");
    let found = db
        .query_row(&sql, [name], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, String>(2)?,
                [r.get::<_, String>(3)?, r.get(4)?, r.get(5)?, r.get(6)?],
            ))
        })
        .optional()?;
    let Some((csv_text, bundle_text, image, [version, skip_range, replaces, skips])) = found else {
        return Ok(None);
    };
    let parse_error = |what: &str, e: serde_json::Error| {
        rusqlite::Error::ToSqlConversionFailure(
            format!("operatorbundle {name:?}: column {what} is not JSON: {e}").into(),
        )
    };
    let csv_object = csv_text
        .filter(|t| !t.trim().is_empty())
        .map(|t| serde_json::from_str::<Value>(&t).map_err(|e| parse_error("csv", e)))
        .transpose()?;
    let manifests = serde_json::Deserializer::from_str(bundle_text.as_deref().unwrap_or(""))
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| parse_error("bundle", e))?;
    let mut row = Row {
        csv: csv_object,
        manifests,
        image,
        version,
        skip_range,
        replaces,
        skips: skips
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    };
    if !schema.graph_columns
        && let Some(c) = &row.csv
    {
        row.version = csv::version(c);
        row.skip_range = csv::skip_range(c).to_owned();
        row.replaces = csv::replaces(c).to_owned();
        row.skips = csv::skips(c);
    }
    Ok(Some(row))
}

/// The `olm.bundle` of one row, or `None` if the bundle is deprecated.
fn bundle(
    db: &Connection,
    schema: &Schema,
    pkg: &str,
    name: &str,
    row: Row,
    origin: &Origin,
) -> rusqlite::Result<Option<Bundle>> {
    let mut props = Vec::new();
    if schema.properties {
        props.extend(items(db, "properties", name)?.iter().map(|i| Property {
            kind: i.kind.clone(),
            value: i.value.clone(),
        }));
    }
    if props.iter().any(|p| p.kind == DEPRECATED) {
        return Ok(None);
    }
    if !props.iter().any(|p| p.kind == property::PACKAGE) {
        props.push(package_property(pkg, &row.version, ""));
    }
    if schema.dependencies {
        props.extend(
            items(db, "dependencies", name)?
                .iter()
                .map(dependency_property),
        );
    }
    if !schema.properties && schema.api_tables {
        props.extend(apis(db, "api_provider", name)?.iter().map(gvk_property));
        props.extend(
            apis(db, "api_requirer", name)?
                .iter()
                .map(gvk_required_property),
        );
    }
    let mut manifests = row.manifests;
    if manifests.is_empty()
        && let Some(c) = &row.csv
    {
        manifests.push(c.clone());
    }
    props.extend(manifests.iter().map(object_property));

    let mut images = row
        .csv
        .as_ref()
        .map_or_else(Vec::new, |c| related_images(c, &row.image));
    if schema.related_image {
        for image in strings(
            db,
            "SELECT DISTINCT image FROM related_image WHERE operatorbundle_name = ?1",
            [name],
        )? {
            if !image.is_empty() && !images.iter().any(|r| r.image == image) {
                images.push(RelatedImage {
                    name: String::new(),
                    image,
                });
            }
        }
        images.sort_by(|a, b| a.image.cmp(&b.image));
    }
    Ok(Some(Bundle {
        name: name.to_owned(),
        package: pkg.to_owned(),
        image: row.image,
        properties: finish_properties(props),
        related_images: images,
        origin: origin.clone(),
        external_objects: 0,
    }))
}

/// The distinct (type, value) rows of `properties` or `dependencies` for a bundle; values
/// are re-encoded canonically so that they compare like every other property value.
fn items(db: &Connection, table: &str, name: &str) -> rusqlite::Result<Vec<Item>> {
    let sql = format!(
        "SELECT DISTINCT type, value FROM {table} WHERE operatorbundle_name = ?1 ORDER BY type, value"
    );
    db.prepare(&sql)?
        .query_map([name], |r| {
            let kind: String = r.get(0)?;
            let text: String = r.get(1)?;
            let value = match serde_json::from_str::<Value>(&text) {
                Ok(v) => catalog::json::canonical(&v),
                Err(_) => text,
            };
            Ok(Item { kind, value })
        })?
        .collect()
}

/// The GVKs a bundle provides or requires, from the API tables of old schemas.
fn apis(db: &Connection, table: &str, name: &str) -> rusqlite::Result<Vec<Gvk>> {
    let sql = format!(
        "SELECT DISTINCT group_name, version, kind FROM {table} WHERE operatorbundle_name = ?1"
    );
    db.prepare(&sql)?
        .query_map([name], |r| {
            Ok(Gvk {
                group: r.get(0)?,
                version: r.get(1)?,
                kind: r.get(2)?,
            })
        })?
        .collect()
}
