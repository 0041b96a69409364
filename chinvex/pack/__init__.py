"""Context packs: the best chunks for a task, fitted into a token budget (`chinvex pack`)."""
