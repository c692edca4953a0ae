-- /api/v1/all zstd-compressed once at ingest, stored like content_gzip (one stream cut into
-- chunks in order): catalogd prefers zstd when a client accepts both, and a compressed
-- download stays a copy of stored bytes. A migration of its own so that the index format
-- version changes and caches built without it are rebuilt.
CREATE TABLE content_zstd (
    seq  INTEGER PRIMARY KEY,
    data BLOB NOT NULL
);
