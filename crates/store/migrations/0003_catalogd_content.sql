-- The catalog as catalogd serves it (catalogd HTTP API, OLM v1): every document of the
-- catalog, in walk order, as one line of compact key-sorted JSON ending in '\n'. `offset` is
-- where the line starts in /api/v1/all, so the whole body is the lines in key order and a
-- byte range starts at one key lookup. `schema`, `package` and `name` are the document's
-- fields of those names ('' when absent or not a string) for /api/v1/metas.
CREATE TABLE content_line (
    offset  INTEGER PRIMARY KEY,
    schema  TEXT NOT NULL,
    package TEXT NOT NULL,
    name    TEXT NOT NULL,
    line    BLOB NOT NULL
);

-- One index per filter: a metas query walks the one of its filters that SQLite judges most
-- selective, in offset order, and checks the others on each row. The table is small
-- (a row per document), so the indexes are kept as rows arrive.
CREATE INDEX content_by_schema ON content_line (schema, offset);
CREATE INDEX content_by_package ON content_line (package, offset);
CREATE INDEX content_by_name ON content_line (name, offset);

-- /api/v1/all gzip-compressed once at ingest, as one gzip stream cut into chunks in order, so
-- that a compressed download is a copy of stored bytes like an uncompressed one.
CREATE TABLE content_gzip (
    seq  INTEGER PRIMARY KEY,
    data BLOB NOT NULL
);
