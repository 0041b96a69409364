"""chinvex.mcp."""
