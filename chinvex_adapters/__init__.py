"""Source adapters (installed as `chinvex_adapters`): one sub-package per source kind.

Each turns raw inputs into `chinvex.models` documents and depends on nothing else of chinvex
but `chinvex.models` and `chinvex.models.sources`.
"""
