"""OpenCode (sst/opencode): its SQLite store (`opencode.db`, `opencode-<channel>.db`, OpenCode >=
1.2) and its legacy JSON store (`storage/`, up to 1.1.x), both in `$XDG_DATA_HOME/opencode`, else
`~/.local/share/opencode` on every system; `OPENCODE_DB` is honoured. One conversation per
session; a session in both stores is one document. Kilo Code, an OpenCode fork, keeps the same
store in `~/.local/share/kilo` (`kilo.db`, `KILO_DB`): its sessions are read here as source "kilo"."""

from chinvex_adapters.kit.registry import Agent, Store

from .layout import kilo_stores, opencode_stores

AGENT = Agent("opencode", "OpenCode", "chinvex_adapters.opencode.adapter:OpenCodeAdapter")
STORES = [Store("opencode", "OpenCode", opencode_stores),
          Store("kilo", "Kilo Code (kilo.db)", kilo_stores, adapter="opencode")]
