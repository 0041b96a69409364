-- Seed spec §5 tables, plus meta, conversation turns and the search text column.
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    source_type TEXT NOT NULL,
    source_uri TEXT NOT NULL,
    title TEXT,
    created_at TEXT,
    updated_at TEXT,
    metadata_json TEXT,
    indexed_at TEXT,
    origin_uri TEXT NOT NULL,   -- the source (fingerprint key) that produced this document
    content_hash TEXT           -- sha256 of the parsed document: unchanged documents are skipped
);
CREATE INDEX IF NOT EXISTS idx_documents_origin ON documents(origin_uri);
CREATE INDEX IF NOT EXISTS idx_documents_source_type ON documents(source_type);
CREATE INDEX IF NOT EXISTS idx_documents_updated_at ON documents(updated_at);
CREATE INDEX IF NOT EXISTS idx_documents_source_uri ON documents(source_uri);

-- search_text = header + text + identifier sub-tokens: what FTS5 indexes.
-- embed_hash = sha256 of the text the embedder saw: vectors are reused across chunk ids.
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    chunk_index INTEGER NOT NULL,
    text TEXT NOT NULL,
    search_text TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    char_start INTEGER,
    char_end INTEGER,
    line_start INTEGER,
    line_end INTEGER,
    metadata_json TEXT,
    UNIQUE(doc_id, chunk_index)
);
CREATE INDEX IF NOT EXISTS idx_chunks_doc_id ON chunks(doc_id);
CREATE INDEX IF NOT EXISTS idx_chunks_embed_hash ON chunks(embed_hash);

CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    chunk_id UNINDEXED,
    search_text,
    content='chunks',
    content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, chunk_id, search_text)
    VALUES (new.rowid, new.chunk_id, new.search_text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, chunk_id, search_text)
    VALUES ('delete', old.rowid, old.chunk_id, old.search_text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, chunk_id, search_text)
    VALUES ('delete', old.rowid, old.chunk_id, old.search_text);
    INSERT INTO chunks_fts(rowid, chunk_id, search_text)
    VALUES (new.rowid, new.chunk_id, new.search_text);
END;

CREATE TABLE IF NOT EXISTS source_fingerprints (
    source_uri TEXT NOT NULL,
    context_name TEXT NOT NULL,
    source_type TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    size_bytes INTEGER,
    mtime_unix INTEGER,
    content_sha256 TEXT,
    thread_updated_at TEXT,
    last_turn_id TEXT,
    parser_version TEXT NOT NULL,
    chunker_version TEXT NOT NULL,
    embedded_model TEXT,
    last_ingested_at_unix INTEGER NOT NULL,
    last_status TEXT NOT NULL,
    last_error TEXT,
    source_root TEXT,
    adapter TEXT,
    state_json TEXT,
    PRIMARY KEY (source_uri, context_name)
);
CREATE INDEX IF NOT EXISTS idx_fingerprints_type ON source_fingerprints(source_type);
CREATE INDEX IF NOT EXISTS idx_fingerprints_status ON source_fingerprints(last_status);
CREATE INDEX IF NOT EXISTS idx_fingerprints_doc ON source_fingerprints(doc_id);

CREATE TABLE IF NOT EXISTS ingest_runs (
    run_id TEXT PRIMARY KEY,
    context_name TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,
    stats_json TEXT
);

-- Parsed turns of conversation documents: an appended session is re-chunked from these plus
-- the newly parsed tail, without parsing the whole file again.
CREATE TABLE IF NOT EXISTS conversation_turns (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    turn_index INTEGER NOT NULL,
    turn_json TEXT NOT NULL,
    PRIMARY KEY (doc_id, turn_index)
);
