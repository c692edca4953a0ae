-- Lookup indexes, created after the bulk load (faster than maintaining them row by row).
CREATE UNIQUE INDEX bundle_by_name ON bundle (package, name);
CREATE UNIQUE INDEX entry_by_name ON entry (package, channel, bundle);
CREATE INDEX entry_by_replaces ON entry (replaces);
CREATE INDEX entry_heads ON entry (is_head) WHERE is_head = 1;
CREATE INDEX skip_by_name ON skip (name);
CREATE INDEX custom_doc_by_key ON custom_doc (schema, package);
