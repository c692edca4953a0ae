-- The serving index. Everything a response needs is encoded once here, at ingest time:
-- serving a bundle is a lookup plus a socket write.

-- One row per package; `message` is the encoded api.Package (channels sorted, deprecations).
CREATE TABLE package (
    name            TEXT PRIMARY KEY,
    default_channel TEXT NOT NULL,
    message         BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE channel (
    package TEXT NOT NULL,
    name    TEXT NOT NULL,
    head    TEXT NOT NULL,
    PRIMARY KEY (package, name)
) WITHOUT ROWID;

-- The manifests of a bundle, written while the catalog streams in: `objects` holds the
-- encoded api.Bundle `object` fields; `csv_start`/`csv_len` locate the CSV's JSON text inside
-- it (NULL when the bundle has no CSV object).
CREATE TABLE manifest (
    id        INTEGER PRIMARY KEY,
    objects   BLOB NOT NULL,
    csv_start INTEGER,
    csv_len   INTEGER
);

-- `common` is the encoded api.Bundle fields that do not depend on the channel; `csv_synth` a
-- CSV synthesised from olm.csv.metadata when the bundle ships no CSV object.
CREATE TABLE bundle (
    id          INTEGER PRIMARY KEY,
    package     TEXT NOT NULL,
    name        TEXT NOT NULL,
    has_image   INTEGER NOT NULL,
    manifest_id INTEGER NOT NULL REFERENCES manifest (id),
    common      BLOB NOT NULL,
    csv_synth   BLOB
);

-- One row per (channel, bundle); rowid order is ListBundles order (channel, package, bundle).
-- `tail` encodes channelName and skipRange, `edges` replaces and skips.
CREATE TABLE entry (
    id        INTEGER PRIMARY KEY,
    package   TEXT NOT NULL,
    channel   TEXT NOT NULL,
    bundle    TEXT NOT NULL,
    bundle_id INTEGER NOT NULL REFERENCES bundle (id),
    replaces  TEXT NOT NULL,
    is_head   INTEGER NOT NULL,
    tail      BLOB NOT NULL,
    edges     BLOB NOT NULL
);

CREATE TABLE skip (
    entry_id INTEGER NOT NULL REFERENCES entry (id),
    ord      INTEGER NOT NULL,
    name     TEXT NOT NULL,
    PRIMARY KEY (entry_id, ord)
) WITHOUT ROWID;

CREATE TABLE provided_api (
    grp       TEXT NOT NULL,
    version   TEXT NOT NULL,
    kind      TEXT NOT NULL,
    bundle_id INTEGER NOT NULL REFERENCES bundle (id),
    PRIMARY KEY (grp, version, kind, bundle_id)
) WITHOUT ROWID;

-- Documents of custom schemas, each an encoded google.protobuf.Struct; package '' = none.
CREATE TABLE custom_doc (
    id      INTEGER PRIMARY KEY,
    schema  TEXT NOT NULL,
    package TEXT NOT NULL,
    message BLOB NOT NULL
);

-- Facts about the index itself: catalog digest, counts, format.
CREATE TABLE info (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
