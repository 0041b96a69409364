"""chinvex.retrieval."""
