"""Amp (Sourcegraph, ampcode.com): one JSON file per thread (`T-<uuid>.json`) in
`${XDG_DATA_HOME:-~/.local/share}/amp/threads`, and in the VS Code extension's earlier store
(`globalStorage/sourcegraph.amp/threads3` of every VS Code-based editor)."""

from chinvex_adapters.kit.registry import Agent, Store

from .layout import extension_stores, thread_stores

AGENT = Agent("amp", "Amp", "chinvex_adapters.amp.adapter:AmpAdapter")
STORES = [
    Store("amp", "Amp threads", thread_stores),
    Store("amp", "Amp threads (VS Code extension)", extension_stores),
]
