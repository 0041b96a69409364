"""Search one context over and over from a separate process until a stop file appears, one JSON
line per query (result chunk ids, warnings, or the error), for the concurrency tests.

    python -m hostile.search_loop CONTEXT OUT_FILE STOP_FILE QUERY...

One warm `Searcher` is used throughout, like the MCP server's: its SQLite connection and its
Chroma client stay open while another process ingests.
"""

from __future__ import annotations

import itertools
import sys
import time
import traceback
from pathlib import Path

import orjson


def main() -> None:
    context, out_path, stop_path, *queries = sys.argv[1:]
    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import SearchRequest, Searcher

    config = Registry().resolve(context)
    searcher = Searcher()
    stop = Path(stop_path)
    with open(out_path, "ab", buffering=0) as out:
        for query, mode in itertools.cycle(itertools.product(queries, ("hybrid", "fts", "vector"))):
            if stop.exists():
                break
            record: dict = {"t": time.time(), "query": query, "mode": mode}
            try:
                response = searcher.search([config], SearchRequest(query=query, k=20, mode=mode))
                record["ids"] = [r.chunk_id for r in response.results]
                record["warnings"] = response.stats.warnings
                record["used"] = response.stats.mode
            except BaseException as exc:  # the test wants to see every failure, of any kind
                record["error"] = f"{type(exc).__name__}: {exc}"
                record["where"] = traceback.format_exc().strip().splitlines()[-6:]
            out.write(orjson.dumps(record) + b"\n")
    searcher.close()


if __name__ == "__main__":
    main()
