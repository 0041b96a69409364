"""hybrid.db (SQLite, the source of truth) and the Chroma vector store (derived from it)."""
