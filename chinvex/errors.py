"""Errors a user can cause, each with a stable code and the exit status DESIGN.md §10 assigns.

Anything raised as a `ChinvexError` is reported as one line (or a JSON error object) and never
as a traceback; anything else reaching the CLI is a bug and is reported as such.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT, as shells report it)."""


class ChinvexError(Exception):
    """A failure the user can act on. `code` is part of the JSON contract."""

    code = "ERROR"
    exit_code = EXIT_FAILURE

    def __init__(self, message: str, *, code: str | None = None, exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(ChinvexError):
    """Bad flag, invalid name, unreadable input file: exit 2."""

    code = "USAGE_ERROR"
    exit_code = EXIT_USAGE


class InvalidNameError(UsageError):
    code = "INVALID_NAME"


class ContextNotFoundError(ChinvexError):
    code = "CONTEXT_NOT_FOUND"

    def __init__(self, name: str):
        super().__init__(
            f"Unknown context: {name}. Use 'chinvex context list' to see available contexts."
        )
        self.name = name


class ContextExistsError(ChinvexError):
    code = "CONTEXT_EXISTS"


class AliasConflictError(ChinvexError):
    code = "ALIAS_CONFLICT"


class ConfigError(ChinvexError):
    """A context.json that cannot be read or does not validate (an unreadable file: exit 2)."""

    code = "INVALID_CONFIG"
    exit_code = EXIT_USAGE


class StorageError(ChinvexError):
    code = "STORAGE_ERROR"


class SchemaTooNewError(StorageError):
    code = "SCHEMA_TOO_NEW"


class NotFoundError(ChinvexError):
    code = "NOT_FOUND"


class LockedError(ChinvexError):
    code = "LOCKED"


class EmbedderError(ChinvexError):
    code = "EMBEDDER_ERROR"


class EmbedderMismatchError(ChinvexError):
    code = "EMBEDDER_MISMATCH"
