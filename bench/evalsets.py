"""Where the benchmarks find their evaluation sets, and their unpacked forms.

The sets live in the repository under bench/data/ (origin, licence and how each file was made:
bench/data/README.md), stored compact: SciFact's corpus gzip-compressed, CoSQA's 6,267 functions
and the SWE-QA `requests` tree as tarballs. What a benchmark needs unpacked goes under the
git-ignored bench/out/, once: an unpacked folder carries a marker naming the archive it came from
(size and sha256), so a second run reuses it and a changed archive replaces it.

Every script that reads a set takes `--data DIR` (default bench/data), so the same scripts run on
a copy of the sets kept elsewhere.

    python bench/evalsets.py [--data DIR] unpack cosqa-dev|swe-qa-requests   # prints the folder
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "bench" / "data"
OUT = REPO / "bench" / "out"

MARKER = ".unpacked-from"


def data_dir(text: str) -> Path:
    """argparse `type=` for `--data`: an existing folder, else a usage error naming it."""
    path = Path(text).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"not a folder: {path}")
    return path.resolve()


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=data_dir, default=DATA, metavar="DIR",
                        help="folder of the evaluation sets (default: bench/data in this repository)")


def require(path: Path) -> Path:
    """`path` if it exists; else a one-line message naming it and exit 2 (the usage exit code:
    the cause is a wrong `--data` or an incomplete copy of bench/data)."""
    if not path.exists():
        print(f"bench data not found: {path} (--data DIR names the folder holding scifact/, locomo/, "
              "cosqa-dev/, swe-qa-requests/; see bench/data/README.md)", file=sys.stderr)
        raise SystemExit(2)
    return path


def locomo(data: Path = DATA) -> Path:
    """LoCoMo conv-26 and conv-30: `conv-26/`, `conv-30/` and `golden-conv26-conv30.json`."""
    return require(data / "locomo")


def scifact_golden(data: Path = DATA) -> Path:
    return require(data / "scifact" / "golden-train.json")


def scifact_corpus(data: Path = DATA) -> Iterator[dict]:
    """SciFact's 5,183 abstracts (BEIR `_id`, `title`, `text`), read from the gzip-compressed
    corpus as they are needed: nothing is decompressed to disk."""
    with gzip.open(require(data / "scifact" / "corpus.jsonl.gz"), "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def fingerprint(path: Path) -> str:
    """Size and sha256 of a file: what an unpacked copy records about its source."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"{path.name} {path.stat().st_size} {digest.hexdigest()}"


def is_current(target: Path, source: Path) -> bool:
    """Whether `target` was completely made from `source` as it is now."""
    marker = target / MARKER
    return marker.is_file() and marker.read_text(encoding="utf-8") == fingerprint(source)


def mark(target: Path, source: Path) -> None:
    """Written last, so an interrupted unpacking is redone by the next run."""
    (target / MARKER).write_text(fingerprint(source), encoding="utf-8")


def unpacked(archive: Path, target: Path) -> Path:
    """`archive` (a .tar.gz) extracted into `target`, once; returns `target`. A stale or partial
    extraction is removed first, so files dropped from a newer archive do not linger."""
    require(archive)
    if is_current(target, archive):
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    with tarfile.open(archive, "r:gz") as tar:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4: refuse links and paths leaving target
            tar.extractall(target, filter="data")
        else:
            tar.extractall(target)
    mark(target, archive)
    return target


def cosqa_functions(data: Path = DATA, out: Path = OUT) -> Path:
    """The CoSQA retrieval base unpacked: a folder holding `cosqa_functions/f<id>.py` (the
    golden file's paths start with `cosqa_functions/`). Index `<returned>/cosqa_functions`."""
    return unpacked(data / "cosqa-dev" / "cosqa_functions.tar.gz", out / "cosqa-dev")


def swe_qa_requests(data: Path = DATA, out: Path = OUT) -> Path:
    """The psf/requests tree unpacked: a folder holding `requests/` (the golden files' paths
    start with `requests/`). Index `<returned>/requests`."""
    return unpacked(data / "swe-qa-requests" / "requests-46e939b.tar.gz", out / "swe-qa")


UNPACKERS = {
    "cosqa-dev": lambda data: cosqa_functions(data) / "cosqa_functions",
    "swe-qa-requests": lambda data: swe_qa_requests(data) / "requests",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    unpack = sub.add_parser("unpack", help="unpack a set under bench/out/ and print the folder to index")
    unpack.add_argument("set", choices=sorted(UNPACKERS))
    args = parser.parse_args(argv)
    print(UNPACKERS[args.set](args.data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
