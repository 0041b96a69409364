"""goose (Block): `sessions/sessions.db` (SQLite, one conversation per session), the legacy
`sessions/<id>.jsonl` files, and `goose session export` JSON files, in goose's data folder
(`$GOOSE_PATH_ROOT/data`, `~/.local/share/goose` on Linux and macOS, `%APPDATA%\\Block\\goose\\data`
on Windows)."""

from chinvex_adapters.kit.registry import Agent, Store

from .layout import session_stores

AGENT = Agent("goose", "goose", "chinvex_adapters.goose.adapter:GooseAdapter")
STORES = [Store("goose", "goose sessions", session_stores)]
