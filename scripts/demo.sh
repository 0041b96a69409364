#!/usr/bin/env bash
# Set up chinvex and run the main job on the built-in defaults: create a context over a folder
# (this repository unless one is given), ingest it, search it, answer a question from it, and
# refuse one it does not answer.
# Usage: scripts/demo.sh [FOLDER]
# Without FOLDER it indexes this repository's docs/ (three documents, a few hundred chunks), so
# the first search result comes within a minute or two on 2 cores; give a folder to index it all.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
folder="$(cd "${1:-$here/docs}" && pwd)"
"$here/scripts/setup.sh"
export PATH="$here/.venv/bin:$PATH"
# The demo keeps its data apart from your own contexts unless CHINVEX_HOME is set.
export CHINVEX_HOME="${CHINVEX_HOME:-$here/.cache/demo-home}"
if git -C "$folder" rev-parse --is-inside-work-tree >/dev/null 2>&1; then  # what ingest reads: not ignored files
  files=$(git -C "$folder" ls-files --cached --others --exclude-standard | wc -l)
  kbytes=$(cd "$folder" && git ls-files -z --cached --others --exclude-standard | xargs -0 -r du -ck 2>/dev/null | tail -1 | cut -f1)
else
  files=$(find "$folder" -type f | wc -l)
  kbytes=$(du -sk "$folder" | cut -f1)
fi
kbytes=${kbytes:-0}
# ~1.5 KB of text per chunk, ~7 chunks embedded per second on 2 cores with the built-in model
minutes=$(( kbytes * 1000 / 1500 / 7 / 60 + 1 ))
echo "== chinvex demo: CHINVEX_HOME=$CHINVEX_HOME"
if [ "$kbytes" -ge 1024 ]; then size="$(( kbytes / 1024 )) MB"; else size="$kbytes KB"; fi
echo "== indexing $folder: $files files, $size; about $minutes min on 2 cores the first time (less with more cores; unchanged files are skipped next time)"
chinvex context create demo --repo "$folder" --idempotent
chinvex ingest --context demo
chinvex stats --context demo
query="${CHINVEX_DEMO_QUERY:-Which environment variable moves the contexts folder?}"
echo "== chinvex search --context demo \"$query\""
chinvex search --context demo "$query" --k 5
# exit 1 from answer means "not grounded in this folder" (a refusal, shown with the passages it
# looked at), not a broken demo
ask() {
  echo "== chinvex answer --context demo \"$1\""
  local status=0
  chinvex answer --context demo "$1" || status=$?
  if [ "$status" -gt 1 ]; then
    exit "$status"
  fi
}
ask "$query"
# a question the folder does not answer: chinvex says so instead of making something up
ask "${CHINVEX_DEMO_OFFTOPIC:-Who is the CEO of Acme?}"
echo "== done. To keep using this index: export CHINVEX_HOME=$CHINVEX_HOME"
