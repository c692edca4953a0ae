-- The catalogd content stored once, derived where it can be (issue #23): almost all of a
-- line's bytes are the base64 `data` of its olm.bundle.object properties, whose decoded
-- manifests the `manifest` table already holds. A line keeps its text with those parts left
-- out (`skeleton`) and where they go (`splices`: pairs of varints, the place in the skeleton
-- counted from the previous splice's place and the index of the `object` field in
-- `manifest.objects` of row `manifest_id`); the base64 is encoded again when the line is
-- read. Only a text that re-encoding gives back byte for byte is left out; any other stays
-- in the skeleton. `offset` is still where the whole line starts in /api/v1/all.
--
-- The compressed copies of /api/v1/all are gone: responses are compressed as they are sent.
DROP TABLE content_gzip;
DROP TABLE content_zstd;
DROP TABLE content_line;

CREATE TABLE content_line (
    offset      INTEGER PRIMARY KEY,
    schema      TEXT NOT NULL,
    package     TEXT NOT NULL,
    name        TEXT NOT NULL,
    skeleton    BLOB NOT NULL,
    manifest_id INTEGER REFERENCES manifest (id),
    splices     BLOB
);

CREATE INDEX content_by_schema ON content_line (schema, offset);
CREATE INDEX content_by_package ON content_line (package, offset);
CREATE INDEX content_by_name ON content_line (name, offset);
