"""Named implementations, found the same way for every kind: built-ins by `module:attr`, third
parties by entry point.

Adapters, embedders and answer generators are each a registry of names. A built-in is listed as
a `module:attr` string so that naming it costs no import (the CLI starts without loading a model
or an SDK); a package adds its own through an entry-point group (`chinvex.adapters`,
`chinvex.embedders`, `chinvex.generators`) and is then chosen by name like a built-in. A
built-in name always wins over an entry point of the same name, so installing a package can
never silently replace chinvex's own implementation.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any


def load(target: str) -> Any:
    """The object a `module:attr` string names."""
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def find(name: str, builtin: Mapping[str, str], group: str) -> Any | None:
    """The object registered as `name` (a built-in first, then the group's entry points), or
    None when nothing is."""
    if name in builtin:
        return load(builtin[name])
    for ep in group_entry_points(group):
        if ep.name == name:
            return ep.load()
    return None


def names(builtin: Mapping[str, str], group: str) -> list[str]:
    """Every registered name: the built-ins in their order, then the entry points'."""
    found = list(builtin)
    found.extend(ep.name for ep in group_entry_points(group) if ep.name not in builtin)
    return found


@lru_cache(maxsize=None)
def group_entry_points(group: str) -> tuple[EntryPoint, ...]:
    """A group's entry points, read once per process: reading them scans the metadata of every
    installed distribution, which an answer or a search must not pay each time. A
    package installed while a process runs is seen by the next one."""
    return tuple(entry_points(group=group))


def rescan() -> None:
    """Forget the entry points read so far: for a process that puts packages on its path while it
    runs (the plug-in tests do)."""
    group_entry_points.cache_clear()

