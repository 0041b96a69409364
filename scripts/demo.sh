#!/usr/bin/env bash
# Set up chinvex and run the main job on the built-in defaults: create a context over a folder
# (this repository unless one is given), ingest it, search it, and answer a question from it.
# Usage: scripts/demo.sh [FOLDER]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
folder="$(cd "${1:-$here}" && pwd)"
"$here/scripts/setup.sh"
export PATH="$here/.venv/bin:$PATH"
# The demo keeps its data apart from your own contexts unless CHINVEX_HOME is set.
export CHINVEX_HOME="${CHINVEX_HOME:-$here/.cache/demo-home}"
echo "== chinvex demo: CHINVEX_HOME=$CHINVEX_HOME, folder $folder"
chinvex context create demo --repo "$folder" --idempotent
chinvex ingest --context demo
chinvex stats --context demo
query="${CHINVEX_DEMO_QUERY:-How does hybrid retrieval combine scores?}"
echo "== chinvex search --context demo \"$query\""
chinvex search --context demo "$query" --k 5
echo "== chinvex answer --context demo \"$query\""
# exit 1 means "not grounded in this folder" (a refusal, shown above), not a broken demo
status=0
chinvex answer --context demo "$query" || status=$?
if [ "$status" -gt 1 ]; then
  exit "$status"
fi
echo "== done. To keep using this index: export CHINVEX_HOME=$CHINVEX_HOME"
