"""Generate the JSON Schemas in `schemas/` from the pydantic models.

`python -m chinvex.dev.schema_export` rewrites them; `--check` exits 1 when a file is missing or
differs, which a test runs so that a model change without regenerated schemas fails CI.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chinvex.jsonio import dumps
from chinvex.models import (
    AnswerResponse,
    ContextConfig,
    ConversationDoc,
    Document,
    GoldenFile,
    SearchResponse,
)
from chinvex.models.export import ExportLine
from chinvex.models.responses import PackResponse

SCHEMAS = {
    "context.schema.json": ContextConfig,
    "document.schema.json": Document,
    "conversation_doc.schema.json": ConversationDoc,
    "search_response.schema.json": SearchResponse,
    "answer_response.schema.json": AnswerResponse,
    "pack_response.schema.json": PackResponse,
    "export_record.schema.json": ExportLine,
    "golden_file.schema.json": GoldenFile,
}

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "schemas"


def render(name: str) -> bytes:
    model = SCHEMAS[name]
    schema = model.model_json_schema(mode="serialization")
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://chinvex.dev/schemas/{name}",
        **schema,
    }
    return dumps(schema, pretty=True) + b"\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--check", action="store_true", help="fail if files are out of date")
    args = parser.parse_args(argv)
    stale: list[str] = []
    for name in SCHEMAS:
        target = args.out / name
        wanted = render(name)
        current = target.read_bytes() if target.exists() else None
        if current == wanted:
            continue
        if args.check:
            stale.append(name)
        else:
            args.out.mkdir(parents=True, exist_ok=True)
            target.write_bytes(wanted)
            print(f"wrote {target}")
    if stale:
        print(
            "out of date: " + ", ".join(stale) + " (run: python -m chinvex.dev.schema_export)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
