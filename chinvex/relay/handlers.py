"""What the relay serves: search, answer and pack, computed with a running process's warm engine
exactly as the CLI computes them in-process (the same functions, the same arguments)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chinvex.api import Engine
    from chinvex.relay.server import Handler


def _configs(names: list[str]) -> list[Any]:
    from chinvex.context.registry import Registry

    registry = Registry()
    return [registry.resolve(name) for name in names]


def handlers(engine: Callable[[], Engine]) -> dict[str, Handler]:
    """`engine` gives the process's engine when a request comes (a watcher makes its own on
    the first one)."""

    def search(args: dict[str, Any]) -> Any:
        from chinvex.retrieval.request import SearchRequest

        return engine().search(_configs(args["contexts"]), SearchRequest(**args["request"]))

    def answer(args: dict[str, Any]) -> Any:
        from chinvex.answer.service import answer as run

        (config,) = _configs([args["context"]])
        return run(config, args["query"], k=args["k"], grounded=args["grounded"], source_types=args["source_types"],
                   generator=args["generator"], model=args["model"], filter_expression=args["filter_expression"],
                   searcher=engine().searcher)

    def pack(args: dict[str, Any]) -> Any:
        from chinvex.pack.service import build_pack

        return build_pack(_configs(args["contexts"]), args["task"], budget=args["budget"], diversity=args["diversity"],
                          source_types=args["source_types"], filter_expression=args["filter_expression"],
                          searcher=engine().searcher)

    return {"search": search, "answer": answer, "pack": pack}


def request_args(request: Any) -> dict[str, Any]:
    """A SearchRequest as the relay sends it."""
    return dataclasses.asdict(request)


def start_for(engine: Callable[[], Engine]) -> Any:
    """Start serving the relay for this process if no other process does; the server (to
    close on exit) or None."""
    from chinvex.relay.server import RelayServer

    server = RelayServer(handlers(engine))
    return server if server.start() else None
