"""Tests that send Ctrl-C to a program they start need that program to have SIGINT at its
default. A run started with SIGINT ignored (a background command of a shell without job control)
would otherwise pass the ignoring to the pytest workers and from them to every program a test
starts; conftest.py gives the test processes SIGINT back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def test_a_program_a_test_starts_has_sigint_at_its_default():
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    out = subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.strip() == "<built-in function default_int_handler>"


def test_a_run_started_with_sigint_ignored_gives_its_tests_sigint_back(tmp_path: Path):
    # The test above, in a pytest of its own started as `… &` starts it: with SIGINT ignored.
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                           f"--basetemp={tmp_path / 'inner'}", f"{__file__}::test_a_program_a_test_starts_has_sigint_at_its_default"],
                          capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent.parent,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "1 passed" in proc.stdout
