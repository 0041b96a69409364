"""chinvex: a local-first knowledge engine for developers who work with AI coding agents.

The library's front door (chinvex.api), loaded on first use so that `import chinvex` stays
cheap for the CLI: `chinvex.open(name)`, `chinvex.contexts()`, `chinvex.create(name, ...)` and
the `chinvex.Context` they return.
"""

from typing import Any

__version__ = "0.1.0"
__all__ = ["Context", "__version__", "contexts", "create", "open"]

_API = ("Context", "contexts", "create", "open")


def __getattr__(name: str) -> Any:
    if name in _API:
        from chinvex import api

        return getattr(api, name)
    raise AttributeError(f"module 'chinvex' has no attribute {name!r}")
