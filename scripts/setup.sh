#!/usr/bin/env bash
# Create .venv (if needed) and install chinvex into it, editable, with the given extras.
# Usage: scripts/setup.sh [extras]   e.g. scripts/setup.sh test
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
extras="${1:-}"
py="${PYTHON:-python3}"
if ! "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
  echo "chinvex needs Python >= 3.11 (found: $("$py" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 2
fi
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
stamp=".venv/.chinvex-installed${extras:+-$extras}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  target="."
  [ -n "$extras" ] && target=".[$extras]"
  # setuptools cautions on every editable install that folders named like the package take
  # precedence on imports; here that folder is the package itself, so the notice is hidden.
  PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install --quiet -e "$target"
  touch "$stamp"
fi
# Compile the package's bytecode now, as pip does for a regular (non-editable) install. An
# editable install leaves it to the first import, and where PYTHONDONTWRITEBYTECODE is set (many
# container images set it) that never happens: every `chinvex` call then compiled the package's
# modules again, about 0.1 s of a cold `chinvex search` (bench/RESULTS.md). Up-to-date files are
# skipped; a module edited later is compiled in memory until this runs again.
.venv/bin/python -m compileall -q chinvex chinvex_adapters >/dev/null \
  || echo "note: could not compile chinvex's bytecode (a read-only checkout?); commands start a little slower" >&2
