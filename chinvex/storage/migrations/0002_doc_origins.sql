-- One document can be produced by several sources (a conversation in two ChatGPT exports, a
-- Codex thread read through the app-server and through its rollout file). Every (document,
-- source) pair is recorded with the adapter's precedence; the best source writes the document,
-- and a document only leaves the index when no source produces it any more.
CREATE TABLE IF NOT EXISTS doc_origins (
    doc_id TEXT NOT NULL,
    origin_uri TEXT NOT NULL,
    precedence_json TEXT NOT NULL,
    PRIMARY KEY (doc_id, origin_uri)
);
CREATE INDEX IF NOT EXISTS idx_doc_origins_origin ON doc_origins(origin_uri);
INSERT OR IGNORE INTO doc_origins(doc_id, origin_uri, precedence_json)
    SELECT doc_id, origin_uri, '[]' FROM documents WHERE origin_uri NOT LIKE 'memory://%';
