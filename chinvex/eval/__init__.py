"""chinvex.eval."""
