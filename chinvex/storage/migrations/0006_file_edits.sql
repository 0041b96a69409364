-- File edits sessions made (blame): one row per edit, and the hashes of the lines it added.
-- Filled from conversation_turns when this migration runs (chinvex.storage.edits.backfill),
-- then by the writer with each conversation's turns.
CREATE TABLE IF NOT EXISTS file_edits (
    edit_id INTEGER PRIMARY KEY,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    turn_index INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    ts TEXT,
    op TEXT NOT NULL,
    path TEXT NOT NULL,        -- as the agent gave it
    abs_path TEXT,             -- resolved against the session's working directory
    file_name TEXT NOT NULL,   -- lower-cased last component: what a lookup starts from
    lines_added INTEGER NOT NULL,
    UNIQUE (doc_id, turn_index, seq)
);
CREATE INDEX IF NOT EXISTS idx_file_edits_name ON file_edits(file_name);
CREATE INDEX IF NOT EXISTS idx_file_edits_ts ON file_edits(ts);

CREATE TABLE IF NOT EXISTS edit_lines (
    edit_id INTEGER NOT NULL REFERENCES file_edits(edit_id) ON DELETE CASCADE,
    line_hash INTEGER NOT NULL,
    PRIMARY KEY (edit_id, line_hash)
) WITHOUT ROWID;
