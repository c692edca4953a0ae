//! The queries behind each `api.Registry` RPC, with upstream's answers and error texts
//! (registry-api.md §5–§6, FBC server at HEAD). Where upstream's order is unspecified, ours is
//! the index's: deterministic.
use super::encode::{BundleParts, assemble_bundle};
use api::ChannelEntry;
use bytes::Bytes;
pub use catalog::quote::go_quote;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, Row, params};

#[derive(Debug)]
pub enum QueryError {
    /// Something the request named does not exist; upstream answers UNKNOWN with this text.
    NotFound(String),
    Storage(String),
}

impl From<rusqlite::Error> for QueryError {
    fn from(e: rusqlite::Error) -> Self {
        QueryError::Storage(e.to_string())
    }
}

type Result<T> = std::result::Result<T, QueryError>;

fn gvk_text(group: &str, version: &str, kind: &str) -> String {
    format!(
        "group:{} version:{} kind:{}",
        go_quote(group),
        go_quote(version),
        go_quote(kind)
    )
}

/// Packages, channels and bundles in the index, for logs and metrics.
pub fn counts(conn: &Connection) -> Result<(i64, i64, i64)> {
    Ok(conn.query_row(
        "SELECT (SELECT count(*) FROM package), (SELECT count(*) FROM channel),
                (SELECT count(*) FROM bundle)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?)
}

pub fn list_packages(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached("SELECT name FROM package ORDER BY name")?;
    let names = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(names)
}

pub fn get_package(conn: &Connection, name: &str) -> Result<Bytes> {
    conn.prepare_cached("SELECT message FROM package WHERE name = ?1")?
        .query_row([name], |r| r.get::<_, Vec<u8>>(0))
        .optional()?
        .map(Bytes::from)
        .ok_or_else(|| QueryError::NotFound(format!("package {} not found", go_quote(name))))
}

fn package_exists(conn: &Connection, pkg: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM package WHERE name = ?1")?
        .exists([pkg])?)
}

fn channel_head(conn: &Connection, pkg: &str, channel: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT head FROM channel WHERE package = ?1 AND name = ?2")?
        .query_row([pkg, channel], |r| r.get(0))
        .optional()?)
}

fn channel_not_found(pkg: &str, channel: &str) -> QueryError {
    QueryError::NotFound(format!(
        "package {}, channel {} not found",
        go_quote(pkg),
        go_quote(channel)
    ))
}

/// Checks package then channel, with the errors GetBundle and GetBundleForChannel give.
fn require_channel(conn: &Connection, pkg: &str, channel: &str) -> Result<String> {
    if !package_exists(conn, pkg)? {
        return Err(QueryError::NotFound(format!(
            "package {} not found",
            go_quote(pkg)
        )));
    }
    channel_head(conn, pkg, channel)?.ok_or_else(|| channel_not_found(pkg, channel))
}

const BUNDLE_COLUMNS: &str =
    "b.common, m.objects, m.csv_start, m.csv_len, b.csv_synth, e.tail, e.edges";
const BUNDLE_JOIN: &str =
    "entry e JOIN bundle b ON b.id = e.bundle_id JOIN manifest m ON m.id = b.manifest_id";

/// Assembles a bundle from a row of [`BUNDLE_COLUMNS`], borrowing the blobs from the row.
fn bundle_from_row(
    row: &Row<'_>,
    with_edges: bool,
    with_manifests: bool,
) -> rusqlite::Result<Bytes> {
    let blob = |i: usize| -> rusqlite::Result<&[u8]> {
        match row.get_ref(i)? {
            ValueRef::Null => Ok(&[]),
            v => v.as_blob().map_err(Into::into),
        }
    };
    let csv_range = match (row.get::<_, Option<i64>>(2)?, row.get::<_, Option<i64>>(3)?) {
        (Some(start), Some(len)) => Some((start as usize, len as usize)),
        _ => None,
    };
    let csv_synth = match row.get_ref(4)? {
        ValueRef::Null => None,
        v => Some(v.as_blob()?),
    };
    let parts = BundleParts {
        common: blob(0)?,
        objects: blob(1)?,
        csv_range,
        csv_synth,
        tail: blob(5)?,
        edges: blob(6)?,
    };
    Ok(assemble_bundle(&parts, with_edges, with_manifests))
}

/// The trimmed bundle (no replaces/skips) of one channel entry, manifests included.
fn point_bundle(conn: &Connection, pkg: &str, channel: &str, name: &str) -> Result<Option<Bytes>> {
    let sql = format!(
        "SELECT {BUNDLE_COLUMNS} FROM {BUNDLE_JOIN} WHERE e.package = ?1 AND e.channel = ?2 AND e.bundle = ?3"
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([pkg, channel, name], |r| bundle_from_row(r, false, true))
        .optional()?)
}

pub fn get_bundle(conn: &Connection, pkg: &str, channel: &str, name: &str) -> Result<Bytes> {
    // The common case in one lookup; the error is worked out only when there is none.
    if let Some(b) = point_bundle(conn, pkg, channel, name)? {
        return Ok(b);
    }
    require_channel(conn, pkg, channel)?;
    Err(QueryError::NotFound(format!(
        "package {}, channel {}, bundle {} not found",
        go_quote(pkg),
        go_quote(channel),
        go_quote(name)
    )))
}

pub fn get_bundle_for_channel(conn: &Connection, pkg: &str, channel: &str) -> Result<Bytes> {
    let head = require_channel(conn, pkg, channel)?;
    point_bundle(conn, pkg, channel, &head)?
        .ok_or_else(|| QueryError::Storage(format!("channel head {head} has no entry")))
}

fn entry(pkg: String, channel: String, bundle: String, replaces: String) -> ChannelEntry {
    ChannelEntry {
        package_name: pkg,
        channel_name: channel,
        bundle_name: bundle,
        replaces,
    }
}

/// Every entry that replaces `name`, or skips it (then reported with its real replaces).
pub fn entries_that_replace(conn: &Connection, name: &str) -> Result<Vec<ChannelEntry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT package, channel, bundle, replaces FROM (
             SELECT id, 0 AS ord, package, channel, bundle, replaces FROM entry WHERE replaces = ?1
             UNION ALL
             SELECT e.id, 1 + s.ord, e.package, e.channel, e.bundle, e.replaces
               FROM skip s JOIN entry e ON e.id = s.entry_id
              WHERE s.name = ?1 AND e.replaces <> ?1)
         ORDER BY id, ord",
    )?;
    let entries: Vec<ChannelEntry> = stmt
        .query_map([name], |r| {
            Ok(entry(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    if entries.is_empty() {
        return Err(QueryError::NotFound(format!(
            "no channel entries found that replace {name}"
        )));
    }
    Ok(entries)
}

pub fn bundle_that_replaces(
    conn: &Connection,
    name: &str,
    pkg: &str,
    channel: &str,
) -> Result<Bytes> {
    if !package_exists(conn, pkg)? {
        // Upstream leaves this one unquoted.
        return Err(QueryError::NotFound(format!("package {pkg} not found")));
    }
    if channel_head(conn, pkg, channel)?.is_none() {
        return Err(channel_not_found(pkg, channel));
    }
    let sql = format!(
        "SELECT {BUNDLE_COLUMNS} FROM {BUNDLE_JOIN}
          WHERE e.package = ?1 AND e.channel = ?2
            AND (e.replaces = ?3 OR EXISTS (SELECT 1 FROM skip s WHERE s.entry_id = e.id AND s.name = ?3))
          ORDER BY e.id LIMIT 1"
    );
    conn.prepare_cached(&sql)?
        .query_row([pkg, channel, name], |r| bundle_from_row(r, false, true))
        .optional()?
        .ok_or_else(|| {
            QueryError::NotFound(format!(
                "no entry found for package {}, channel {}",
                go_quote(pkg),
                go_quote(channel)
            ))
        })
}

/// The entries of bundles providing a GVK: one with the entry's replaces, and one per skip
/// that differs from it. `heads_only` gives the "latest" variant, where only skips that are
/// themselves entries of the channel count.
fn providers(
    conn: &Connection,
    group: &str,
    version: &str,
    kind: &str,
    heads_only: bool,
) -> Result<Vec<ChannelEntry>> {
    let sql = format!(
        "SELECT e.id, e.package, e.channel, e.bundle, e.replaces, s.name
           FROM entry e LEFT JOIN skip s ON s.entry_id = e.id {skip_filter}
          WHERE e.bundle_id IN (SELECT bundle_id FROM provided_api WHERE grp = ?1 AND version = ?2 AND kind = ?3)
            {head_filter}
          ORDER BY e.id, s.ord",
        skip_filter = if heads_only {
            "AND EXISTS (SELECT 1 FROM entry x WHERE x.package = e.package AND x.channel = e.channel AND x.bundle = s.name)"
        } else {
            ""
        },
        head_filter = if heads_only { "AND e.is_head = 1" } else { "" },
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(params![group, version, kind])?;
    let mut out = Vec::new();
    let mut last_id = None;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let (pkg, channel, bundle, replaces): (String, String, String, String) =
            (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
        let skipped: Option<String> = r.get(5)?;
        if last_id != Some(id) {
            last_id = Some(id);
            out.push(entry(
                pkg.clone(),
                channel.clone(),
                bundle.clone(),
                replaces.clone(),
            ));
        }
        if let Some(s) = skipped.filter(|s| *s != replaces) {
            out.push(entry(pkg, channel, bundle, s));
        }
    }
    if out.is_empty() {
        return Err(QueryError::NotFound(format!(
            "no channel entries found that provide {}",
            gvk_text(group, version, kind)
        )));
    }
    Ok(out)
}

pub fn entries_that_provide(
    conn: &Connection,
    group: &str,
    version: &str,
    kind: &str,
) -> Result<Vec<ChannelEntry>> {
    providers(conn, group, version, kind, false)
}

pub fn latest_entries_that_provide(
    conn: &Connection,
    group: &str,
    version: &str,
    kind: &str,
) -> Result<Vec<ChannelEntry>> {
    providers(conn, group, version, kind, true)
}

/// The head of the default channel of the first package (by name) whose default-channel head
/// provides the GVK.
pub fn default_bundle_that_provides(
    conn: &Connection,
    group: &str,
    version: &str,
    kind: &str,
) -> Result<Bytes> {
    let mut latest = latest_entries_that_provide(conn, group, version, kind)?;
    latest.sort_by(|a, b| a.package_name.cmp(&b.package_name));
    let mut stmt = conn.prepare_cached("SELECT default_channel FROM package WHERE name = ?1")?;
    for e in &latest {
        let default: Option<String> = stmt.query_row([&e.package_name], |r| r.get(0)).optional()?;
        if default.as_deref() == Some(e.channel_name.as_str())
            && let Some(b) = point_bundle(conn, &e.package_name, &e.channel_name, &e.bundle_name)?
        {
            return Ok(b);
        }
    }
    Err(QueryError::NotFound(format!(
        "no entry found that provides {}",
        gvk_text(group, version, kind)
    )))
}

/// Streams every per-channel bundle in (channel, package, name) order, with replaces and
/// skips; manifests only for bundles without an image. Stops early when `send` says so.
/// Every bundle of every channel, in entry order, starting after entry `after`; `send` gets
/// each entry's key and bundle and returns false to stop.
pub fn list_bundles(
    conn: &Connection,
    after: i64,
    mut send: impl FnMut(i64, Bytes) -> bool,
) -> Result<()> {
    // Manifests of bundles with an image are not served here, so they are not even read.
    let sql = format!(
        "SELECT {BUNDLE_COLUMNS}, b.has_image, e.id FROM entry e JOIN bundle b ON b.id = e.bundle_id
           LEFT JOIN manifest m ON m.id = b.manifest_id AND b.has_image = 0
          WHERE e.id > ?1
          ORDER BY e.id"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query([after])?;
    while let Some(r) = rows.next()? {
        let has_image: bool = r.get(7)?;
        if !send(r.get(8)?, bundle_from_row(r, true, !has_image)?) {
            break;
        }
    }
    Ok(())
}

/// Every custom-schema document with exactly this schema and package ('' = no package),
/// each an encoded google.protobuf.Struct, starting after document `after`; `send` gets each
/// document's key and message and returns false to stop.
pub fn custom_documents(
    conn: &Connection,
    schema: &str,
    package: &str,
    after: i64,
    mut send: impl FnMut(i64, Bytes) -> bool,
) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, message FROM custom_doc WHERE schema = ?1 AND package = ?2 AND id > ?3 ORDER BY id",
    )?;
    let mut rows = stmt.query(params![schema, package, after])?;
    while let Some(r) = rows.next()? {
        if !send(r.get(0)?, Bytes::from(r.get::<_, Vec<u8>>(1)?)) {
            break;
        }
    }
    Ok(())
}
