-- Write journals: what an interrupted ingest may have left half-done, so that the next one
-- settles exactly that (DESIGN.md §4: a crash at any point converges on the next run) without
-- listing the whole Chroma collection or re-reading every source.

-- Chunk ids whose vector may be in Chroma without a chunk row that owns it (or with the vector
-- of another text than the row's). A batch records the ids it is about to upsert, with the
-- embed hash of the vector it upserts, in a committed transaction before the upsert, and drops
-- them in the transaction that commits their rows; that transaction also records the ids of
-- the rows it deletes, dropped once Chroma has deleted their vectors. The next writer deletes
-- the vectors of ids no row owns and embeds again the ids whose row has another embed hash.
CREATE TABLE IF NOT EXISTS vector_journal (
    chunk_id TEXT PRIMARY KEY,
    embed_hash TEXT
);

-- Sources an ingest started to write (origin ledger entries, documents) and has not recorded
-- with a fingerprint yet. Written before a source's first write, dropped in the transaction
-- that writes or deletes its fingerprint. The next ingest reads a pending source again even if
-- its old fingerprint says "unchanged", and removes what it wrote if it is gone (its root is
-- kept so that a root that cannot be listed protects it, as it protects fingerprinted sources).
CREATE TABLE IF NOT EXISTS pending_sources (
    source_uri TEXT PRIMARY KEY,
    source_root TEXT,
    adapter TEXT
);
