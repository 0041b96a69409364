"""The names chinvex gives to the files and meta rows of an embedded vector store, in a module
that imports nothing, so that the gate can be held before the configuration models load (a cold
search warms the index first: chinvex.storage.chroma_warm)."""

COLLECTION_META_KEY = "chroma_collection"
"""hybrid.db's meta row naming the store's collection."""
DIMENSION_META_KEY = "embedding_dimension"
"""hybrid.db's meta row holding the vectors' dimension."""
CHROMA_DB_FILE = "chroma.sqlite3"
GATE_FILE = "chinvex-gate.lock"
"""The gate's lock file in the store's folder (chinvex.storage.vector_gate)."""
TOKEN_BYTES = 32
"""The length of the write token at the start of the gate file."""
