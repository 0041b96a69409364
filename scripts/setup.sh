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
