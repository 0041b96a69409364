#!/usr/bin/env bash
# Install the real Codex CLI binary (0.169.0) for chinvex's app-server tests and CI.
#
# Why npm: the only distribution of the binary we found is the npm platform package
# `@openai/codex@<version>-linux-<arch>` (a static musl executable under vendor/); no PyPI
# package ships it. `npm pack` fetches just that tarball (integrity-checked by npm, no install
# scripts run), and we unpack it into a cache folder outside the venv.
#
# Usage: scripts/install-codex.sh            (cache: $REPO/.cache/codex-0.169.0/)
#        CHINVEX_CODEX_CACHE=/some/dir scripts/install-codex.sh
# Exit codes: 0 ok (last stdout line = binary path), 3 npm missing, 4 unsupported platform,
#             5 download/unpack failed.
set -euo pipefail

VERSION="0.169.0"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CHINVEX_CODEX_CACHE:-$REPO/.cache/codex-$VERSION}"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) NPM_SUFFIX="linux-x64"; TRIPLE="x86_64-unknown-linux-musl" ;;
  Linux-aarch64 | Linux-arm64) NPM_SUFFIX="linux-arm64"; TRIPLE="aarch64-unknown-linux-musl" ;;
  *)
    echo "install-codex: unsupported platform $(uname -s)-$(uname -m); only Linux x86_64/aarch64 are scripted." >&2
    exit 4
    ;;
esac

BIN="$CACHE/vendor/$TRIPLE/bin/codex"

# Idempotence: an existing binary that reports the right version is kept as is.
if [[ -x "$BIN" ]] && "$BIN" --version 2>/dev/null | grep -q " $VERSION\$"; then
  echo "install-codex: codex $VERSION already installed" >&2
  echo "$BIN"
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "install-codex: npm is not installed; install Node.js/npm (e.g. 'apt-get install npm') and rerun $0" >&2
  exit 3
fi

mkdir -p "$(dirname "$CACHE")"
WORK="$(mktemp -d "$(dirname "$CACHE")/.codex-install.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

SPEC="@openai/codex@$VERSION-$NPM_SUFFIX"
echo "install-codex: fetching $SPEC from the npm registry (about 170 MB)..." >&2
if ! (cd "$WORK" && npm pack "$SPEC" --silent --pack-destination "$WORK" >"$WORK/pack.out" 2>"$WORK/pack.err"); then
  echo "install-codex: 'npm pack $SPEC' failed:" >&2
  tail -n 20 "$WORK/pack.err" >&2
  exit 5
fi
TARBALL="$WORK/$(tail -n 1 "$WORK/pack.out")"
if [[ ! -f "$TARBALL" ]]; then
  echo "install-codex: npm pack did not produce a tarball (got '$(cat "$WORK/pack.out")')" >&2
  exit 5
fi

# Unpack into a sibling folder, then swap it in, so an interrupted run never leaves a
# half-extracted binary at the cache path.
mkdir "$WORK/unpacked"
tar -xzf "$TARBALL" -C "$WORK/unpacked" --strip-components=1
if [[ ! -f "$WORK/unpacked/vendor/$TRIPLE/bin/codex" ]]; then
  echo "install-codex: $SPEC does not contain vendor/$TRIPLE/bin/codex" >&2
  exit 5
fi
chmod +x "$WORK/unpacked/vendor/$TRIPLE/bin/"* 2>/dev/null || true
if ! "$WORK/unpacked/vendor/$TRIPLE/bin/codex" --version | grep -q " $VERSION\$"; then
  echo "install-codex: unpacked binary does not report version $VERSION" >&2
  exit 5
fi
rm -rf "$CACHE"
mv "$WORK/unpacked" "$CACHE"

echo "install-codex: installed codex $VERSION into $CACHE" >&2
echo "$BIN"
