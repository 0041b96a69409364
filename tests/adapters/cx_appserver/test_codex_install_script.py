"""scripts/install-codex.sh: what it does without npm, and twice."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
import pytest
from helpers import REPO_ROOT
from live_support import INSTALL_SCRIPT, TRIPLE, VERSION


def test_install_script_without_npm_exits_3(tmp_path):
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("uname", "dirname", "mktemp", "mkdir", "rm", "grep", "tail", "cat", "tar", "chmod", "mv", "bash"):
        found = shutil.which(tool)
        if found:
            (tools / tool).symlink_to(found)
    proc = subprocess.run(
        ["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=60,
        env={"PATH": str(tools), "CHINVEX_CODEX_CACHE": str(tmp_path / "cache")},
    )
    assert proc.returncode == 3, proc.stderr
    assert "npm is not installed" in proc.stderr


def test_install_script_is_idempotent(codex_bin):
    cached = REPO_ROOT / ".cache" / f"codex-{VERSION}" / "vendor" / TRIPLE / "bin" / "codex"
    if Path(codex_bin) != cached:
        pytest.skip("the binary under test is not the install script's cache")
    proc = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "CHINVEX_CODEX_CACHE": str(cached.parents[3])})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(cached)
    assert "already installed" in proc.stderr
