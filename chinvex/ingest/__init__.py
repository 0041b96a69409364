"""chinvex.ingest."""
