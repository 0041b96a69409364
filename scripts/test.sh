#!/usr/bin/env bash
# Set up chinvex with its test extras, install Debian's Chromium for the browser tests and the
# real Codex binary for the app-server integration tests (cached), and run the whole test suite.
# `.ci/run` calls this.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
scripts/setup.sh test
# A real headless Chromium for the web UI's browser tests (Debian's package; skipped with a note
# where it cannot be installed).
scripts/install-chromium.sh || echo "note: chromium could not be installed; browser tests will skip" >&2
if [ -x scripts/install-codex.sh ]; then
  if codex_bin="$(scripts/install-codex.sh | tail -n 1)" && [ -x "$codex_bin" ]; then
    export CHINVEX_CODEX_BIN="$codex_bin"
  else
    echo "note: the real codex binary could not be installed; app-server integration tests will say why they skip" >&2
  fi
fi
set +e
# One worker per core (at most four), each taking whole test modules so that a module's fixtures
# are built once; tests/shared_indexes.py has one worker build each shared index for all.
.venv/bin/python -m pytest --numprocesses=auto --maxprocesses=4 --dist=loadfile "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests (exit 5)" >&2
  exit 0
fi
exit "$status"
