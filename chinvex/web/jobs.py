"""Ingests started from the browser ("ingest now"): one background thread per run, observed
through the pipeline's own progress callbacks, so the page's bar shows exactly what the CLI's
bar would (sources done out of total, chunks embedded).

A run is `chinvex.ingest.pipeline.run_ingest` itself, under the context's writer lock: a
second "ingest now" while one runs returns the running job instead of queueing another, and
an ingest running elsewhere (`chinvex watch`, a terminal) makes the job fail with the lock's
own one-line message.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chinvex.ingest.summary import Decision
from chinvex.models import ContextConfig
from chinvex.timeutil import now_iso

MAX_KEPT_JOBS = 50
"""Finished jobs kept for their status endpoint; older ones are forgotten."""


@dataclass
class IngestJob:
    """What the progress endpoint reports about one run."""

    job_id: str
    context: str
    started_at: str
    state: str = "starting"  # starting | running | done | failed
    total: int = 0
    done: int = 0
    embedded: int = 0
    current: str = ""
    summary: dict[str, Any] | None = None
    error: str | None = None
    began: float = field(default_factory=time.monotonic)
    ended: float | None = None

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")

    def as_json(self) -> dict[str, Any]:
        elapsed = (self.ended or time.monotonic()) - self.began
        out: dict[str, Any] = {
            "job_id": self.job_id, "context": self.context, "state": self.state,
            "started_at": self.started_at, "elapsed_s": round(elapsed, 2), "total": self.total,
            "done": self.done, "embedded": self.embedded, "current": self.current, "error": self.error,
        }
        if self.summary is not None:
            s = self.summary
            out["summary"] = {"status": s.get("status"), "duration_s": s.get("duration_s"),
                              "sources": s.get("sources"), "chunks": s.get("chunks"),
                              "errors": [e.get("message") for e in s.get("errors", [])][:20]}
        return out


class JobProgress:
    """The pipeline's `ProgressSink`, writing into a job (plain attribute writes: the status
    endpoint reads them from another thread, and a slightly stale figure is harmless)."""

    def __init__(self, job: IngestJob):
        self.job = job

    def start(self, total: int) -> None:
        self.job.total = total
        self.job.state = "running"

    def advance(self, label: str) -> None:
        self.job.done += 1
        self.job.current = label

    def embedded(self, count: int) -> None:
        self.job.embedded += count

    def decision(self, decision: Decision) -> None:
        return None

    def finish(self) -> None:
        return None


class IngestJobs:
    """The runs this server started, by id."""

    def __init__(self) -> None:
        self._jobs: dict[str, IngestJob] = {}
        self._lock = threading.Lock()

    def get(self, job_id: str) -> IngestJob | None:
        with self._lock:
            return self._jobs.get(job_id)

    def running(self, context: str) -> IngestJob | None:
        with self._lock:
            return next((j for j in self._jobs.values() if j.context == context and not j.finished), None)

    def start(self, config: ContextConfig, embedder_factory: Callable[[], Any] | None = None) -> IngestJob:
        """Start an ingest of `config` in a thread, or return the one already running for it."""
        with self._lock:
            for job in self._jobs.values():
                if job.context == config.name and not job.finished:
                    return job
            job = IngestJob(job_id=uuid.uuid4().hex[:12], context=config.name, started_at=now_iso())
            self._jobs[job.job_id] = job
            self._forget_old()
        thread = threading.Thread(target=self._run, args=(job, config, embedder_factory),
                                  name=f"chinvex-ui-ingest-{job.job_id}", daemon=True)
        thread.start()
        return job

    def _forget_old(self) -> None:
        finished = [j for j in self._jobs.values() if j.finished]
        for job in finished[: max(0, len(finished) - MAX_KEPT_JOBS)]:
            del self._jobs[job.job_id]

    @staticmethod
    def _run(job: IngestJob, config: ContextConfig, embedder_factory: Callable[[], Any] | None) -> None:
        from chinvex.errors import ChinvexError
        from chinvex.ingest.pipeline import IngestOptions, run_ingest

        try:
            summary = run_ingest(config, IngestOptions(progress=JobProgress(job), embedder_factory=embedder_factory))
            job.summary = summary.model_dump(mode="json")
            job.state = "done"
        except ChinvexError as exc:
            job.error = exc.message
            job.state = "failed"
        except Exception as exc:  # a bug: shown on the page rather than lost in a thread
            job.error = f"internal error ({type(exc).__name__}: {exc})"
            job.state = "failed"
        finally:
            job.ended = time.monotonic()
