-- Documents a user removed with `chinvex rm`: the next ingest does not bring them back while
-- their content is what it was when they were removed (content_hash), even if their source is
-- read again (an export file that gained other conversations). A document whose content changed
-- comes back and its tombstone is dropped. `chinvex rm --purge` and `chinvex compact` drop them.
CREATE TABLE IF NOT EXISTS tombstones (
    doc_id TEXT PRIMARY KEY,
    origin_uri TEXT,
    content_hash TEXT,
    title TEXT,
    reason TEXT NOT NULL,
    removed_at TEXT NOT NULL
);
