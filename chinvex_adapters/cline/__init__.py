"""Cline, Roo Code and Kilo Code: legacy task folders (`<editor user dir>/globalStorage/<extension
id>/tasks/<task id>/`, `~/.cline/data/tasks`) and Cline SDK sessions (`~/.cline/data/sessions`).
One adapter reads them all; each conversation's `source` is the tool whose store holds it
("cline", "roo" or "kilo")."""

from chinvex_adapters.kit.registry import Agent, Store

from .layout import cline_stores, kilo_stores, roo_stores

AGENT = Agent("cline", "Cline", "chinvex_adapters.cline.adapter:ClineAdapter")
STORES = [
    Store("cline", "Cline", cline_stores),
    Store("roo", "Roo Code", roo_stores, adapter="cline"),
    Store("kilo", "Kilo Code", kilo_stores, adapter="cline"),
]
