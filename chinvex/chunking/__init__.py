"""chinvex.chunking."""
