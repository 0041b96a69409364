-- What the MCP RECALL tools keep (DESIGN.md §4, §8): knowledge items added through recall_add,
-- feedback on retrieved items with per-item counts, and the flight recorder.

-- A knowledge item is also indexed as one `memory` document (source_uri and origin_uri
-- `memory://<item_id>`, no fingerprint, so ingest never removes it). This row is its source of
-- truth: the full content (after redaction), the RECALL fields, and whether it is indexed yet
-- (indexed_at NULL: written while an ingest held the context, indexed on a later call).
CREATE TABLE IF NOT EXISTS knowledge_items (
    item_id TEXT PRIMARY KEY,          -- {P,F,D,C,X,O,R,I}-<8 hex>
    doc_id TEXT NOT NULL,              -- documents.doc_id of its memory document
    type TEXT NOT NULL,
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    scope TEXT NOT NULL,               -- project | global, as asked
    tags_json TEXT NOT NULL DEFAULT '[]',
    metadata_json TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    indexed_at TEXT
);
CREATE INDEX IF NOT EXISTS idx_knowledge_items_doc ON knowledge_items(doc_id);
CREATE INDEX IF NOT EXISTS idx_knowledge_items_type ON knowledge_items(type);
CREATE INDEX IF NOT EXISTS idx_knowledge_items_pending ON knowledge_items(indexed_at) WHERE indexed_at IS NULL;

-- One row per recall_feedback call. item_id is a knowledge item id or a chunk id.
CREATE TABLE IF NOT EXISTS feedback (
    feedback_id TEXT PRIMARY KEY,
    item_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    feedback TEXT NOT NULL,            -- useful | not_useful | outdated | duplicate
    useful INTEGER,                    -- 1 / 0 for useful / not_useful, else NULL
    context TEXT,                      -- the caller's free-text reason
    duplicate_of TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_feedback_item ON feedback(item_id);

-- Quality signals per retrieved item (RECALL §3.8): retrievals counted by recall_search,
-- judgements by recall_feedback.
CREATE TABLE IF NOT EXISTS item_stats (
    item_id TEXT PRIMARY KEY,
    retrieval_count INTEGER NOT NULL DEFAULT 0,
    useful_count INTEGER NOT NULL DEFAULT 0,
    not_useful_count INTEGER NOT NULL DEFAULT 0,
    outdated_count INTEGER NOT NULL DEFAULT 0,
    duplicate_count INTEGER NOT NULL DEFAULT 0,
    flagged_duplicate_of TEXT,
    last_retrieved_at TEXT,
    last_feedback_at TEXT
);

-- Session events (decisions, errors, milestones, retrieval_query, retrieval_judgment, ...).
-- Local data: never indexed for search.
CREATE TABLE IF NOT EXISTS flight_recorder (
    entry_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    type TEXT NOT NULL,
    content TEXT NOT NULL,
    rationale TEXT,
    metadata_json TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_flight_recorder_session ON flight_recorder(session_id, created_at);
CREATE INDEX IF NOT EXISTS idx_flight_recorder_type ON flight_recorder(type);
