"""Peak memory of reading a 200 MB ChatGPT export (issue 5): the adapter streams the array, and
each conversation is redacted and chunked as ingest does, without embedding (embedding hundreds
of thousands of chunks would take days here; the question is whether memory stays bounded).
Run in a fresh interpreter; peak RSS minus the RSS before parsing, next to a 2 MB export."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from common import REPO, Figure, print_figures

OUT = REPO / "bench" / "out" / "export"

WORDS = ("index query vector chunk session retry backoff cache ledger schema migration deploy "
         "token budget latency embed rollout thread answer cite ground source weight").split()

CHILD = r"""
import json, sys, time
from pathlib import Path
from chinvex_adapters.chat_export.adapter import ChatExportAdapter
from chinvex.models.sources import AdapterOptions, ParseReport
from chinvex.ingest.prepare import prepare
path = Path(sys.argv[1])
adapter = ChatExportAdapter()
cands = [c for c in adapter.enumerate(path.parent, AdapterOptions(context_name="bench")) if getattr(c, "path", None)]
import chinvex.chunking, chinvex.redaction  # load modules before the baseline
def hwm_kb():  # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec (the parent's peak)
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
before = hwm_kb()
report = ParseReport()
docs = chunks = 0
started = time.perf_counter()
for doc in adapter.parse(cands[0], report, None):
    prepared = prepare(doc, origin_uri=str(path), redact=True)
    docs += 1
    chunks += len(prepared.chunks)
elapsed = time.perf_counter() - started
peak = hwm_kb()
print(json.dumps({"docs": docs, "chunks": chunks, "seconds": elapsed, "growth_mb": (peak - before) / 1024, "peak_mb": peak / 1024}))
"""


def generate(path: Path, size: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("[")
        n = 0
        while written < size:
            mapping, parent = {"root": {"id": "root", "message": None, "parent": None, "children": []}}, "root"
            for m in range(8):
                node = f"n{n}-{m}"
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 120)))
                mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
                    "id": node, "author": {"role": "user" if m % 2 == 0 else "assistant"},
                    "create_time": 1_700_000_000 + n * 60 + m, "content": {"content_type": "text", "parts": [text]},
                    "status": "finished_successfully", "weight": 1.0, "recipient": "all"}}
                mapping[parent]["children"].append(node)
                parent = node
            conv = {"title": f"Conversation {n}", "create_time": 1_700_000_000 + n * 60,
                    "update_time": 1_700_000_000 + n * 60 + 8, "mapping": mapping, "current_node": parent,
                    "conversation_id": f"conv-{n:08d}", "id": f"conv-{n:08d}"}
            chunk = ("," if n else "") + json.dumps(conv)
            handle.write(chunk)
            written += len(chunk)
            n += 1
        handle.write("]")


def measure(size_mb: int) -> dict:
    path = OUT / f"{size_mb}mb" / "conversations.json"
    if not path.exists() or path.stat().st_size < size_mb * 1_000_000:
        generate(path, size_mb * 1_000_000)
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> list[Figure]:
    small = measure(2)
    big = measure(50 if quick else 200)
    size = 50 if quick else 200
    return [
        Figure(f"{size} MB export: parse + redact + chunk", big["seconds"], "s",
               note=f"{big['docs']:,} conversations, {big['chunks']:,} chunks"),
        Figure(f"{size} MB export: peak RSS growth", big["growth_mb"], "MB",
               "bounded (same as a 2 MB export ± 32 MB)", abs(big["growth_mb"] - small["growth_mb"]) <= 32,
               note=f"2 MB export: {small['growth_mb']:.1f} MB; process peak {big['peak_mb']:.0f} MB"),
    ]


if __name__ == "__main__":
    print_figures("Export memory", run())
