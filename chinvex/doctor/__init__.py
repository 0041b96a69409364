"""`chinvex doctor`: find what is wrong with a context's index, and fix what can be fixed.

Each check reports a status (ok / warning / error), how many things it found, a few examples,
and whether `--repair` can fix it. Errors are states that make search wrong or lose content
(a chunk without a vector, a posting without a chunk, a document no source accounts for);
warnings are states a plain `chinvex ingest` settles (a source changed since it was indexed, an
interrupted run). The exit status is 1 while any error remains.

Checks only read: without `--repair` nothing is written and no lock is taken, so a doctor can
run beside an ingest. (FTS5's 'integrity-check' is a write statement that changes nothing; it
holds SQLite's write lock while it runs, so it is skipped while an ingest is writing, and the
checks that compare the two stores report warnings then, since a batch may be half-written.)
`--repair` takes the context's lock, applies the repairs in dependency order (rows, then the
full-text index, then vectors), and runs every check again: what it reports is the state after
the repair, never a promise.

The package, one module per job: `run` (resolve the context, run the checks in order, repair
under the lock), the checks by family (`files`, `sqlite`, `vectors`, `documents`, `runs`),
`findings` (what the checks collect for the repairs), `repair`, and `report` (the result and
its rendering). The statements they run live in storage: `chinvex.storage.doctor_reads` (the
checks' reads), `chinvex.storage.consistency` and `chinvex.storage.repair` (the repairs' writes).
"""

from chinvex.doctor.report import Check, DoctorReport, format_report
from chinvex.doctor.run import Doctor, diagnose
from chinvex.doctor.runs import check_failed_sources, check_stale_sources
from chinvex.doctor.vectors import STALE_COSINE

__all__ = ["STALE_COSINE", "Check", "Doctor", "DoctorReport", "check_failed_sources", "check_stale_sources",
           "diagnose", "format_report"]
