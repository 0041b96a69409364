"""chinvex.answer."""
