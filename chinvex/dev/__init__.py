"""Tooling for the repository itself: generated files (docs/CLI.md, schemas/, the MCP handshake
recording) written from the code and checked in CI."""
