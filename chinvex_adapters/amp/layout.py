"""Where Amp keeps its threads: `${XDG_DATA_HOME:-~/.local/share}/amp/threads` on every system
(Amp builds the path the same way on macOS and Windows), and the VS Code extension's earlier
per-editor store `<editor user dir>/globalStorage/sourcegraph.amp/threads3`. `AMP_HOME` is the
CLI's install folder, not its data."""

from __future__ import annotations

from pathlib import Path

from chinvex_adapters.kit.registry import Where

EXTENSION_ID = "sourcegraph.amp"


def thread_stores(where: Where) -> list[Path]:
    return [base / "amp" / "threads" for base in where.xdg("XDG_DATA_HOME", ".local/share")]


def extension_stores(where: Where) -> list[Path]:
    return [user / "globalStorage" / EXTENSION_ID / "threads3" for user in where.vscode_users()]
