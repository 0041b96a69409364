-- Sources whose documents came in through `chinvex import`: an ingest keeps them while their
-- root is not one of the context's own (the context may not have that folder at all).
CREATE TABLE IF NOT EXISTS imported_sources (
    source_uri TEXT NOT NULL,
    context_name TEXT NOT NULL,
    source_root TEXT,
    from_context TEXT,
    imported_at TEXT NOT NULL,
    PRIMARY KEY (source_uri, context_name)
);
