"""chinvex: a local-first knowledge engine for developers who work with AI coding agents."""

__version__ = "0.1.0"
