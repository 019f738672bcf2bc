"""reconcile_100k_s: reconciling a run of 100,000 attempt records against its population, as at session end.

The records are built in memory (retries, infrastructure errors, judge failures, a re-judge, a duplicate, ids outside
the population). The figure is reconcile() over the records in memory. A detail gives the whole session-end path,
write_summary(): reading them back from a run directory's results.jsonl, reconciling, writing summary.json and .md.

    .venv/bin/python -m bench.reconcile [--json]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench.common import Figure, cli
from webeval.outcomes.reconcile import reconcile, write_summary
from webeval.outcomes.record import AttemptRecord, FailureClass, Outcome
from webeval.outcomes.rundir import RESULTS, RunDir
from webeval.tasks import Population

SITES = ["Allrecipes", "Amazon", "Apple", "ArXiv", "GitHub", "Booking", "ESPN", "Coursera", "Cambridge", "BBC"]


def build(records: int = 100_000) -> tuple[Population, list[AttemptRecord]]:
    """A population of 90% of `records` ids; one in nine first attempts is masked and has a second attempt."""
    tasks = records * 9 // 10
    ids = tuple(f"{SITES[i % len(SITES)]}--{i}" for i in range(tasks))
    population = Population(name="bench-100k", ids=ids, sha256="0" * 64)
    retried = [task_id for i, task_id in enumerate(ids) if i % 9 == 0]
    built: list[AttemptRecord] = []

    def add(task_id: str, session: str, attempt: int, outcome: Outcome, kind: str | None = None,
            extra: dict | None = None) -> None:
        failed = outcome is Outcome.failed
        built.append(AttemptRecord(
            run_id="bench", session=session, task_id=task_id, site=task_id.split("--")[0], attempt=attempt,
            outcome=outcome, failure_class=FailureClass.wrong_answer if failed else None, kind=kind,
            reason="" if outcome is Outcome.passed else "a reason", answer="an answer", steps=7, duration_s=42.0,
            worker="gw0", finished_at="2030-01-01T00:00:00+00:00", path=f"tasks/{task_id}/attempt-{attempt}",
            usage={"prompt_tokens": 1000, "completion_tokens": 50}, extra=extra or {}))

    for i, task_id in enumerate(ids):
        if i % 9 == 0:
            add(task_id, "s1", 1, Outcome.infra_error if i % 2 else Outcome.judge_failed, "browser" if i % 2 else None)
        else:
            add(task_id, "s1", 1, Outcome.failed if i % 3 == 0 else Outcome.passed)
    for j, task_id in enumerate(retried):
        if len(built) >= records - 20:
            break
        add(task_id, "s2", 2, Outcome.passed if j % 2 else Outcome.failed, extra={"rejudge": True} if j % 5 == 0 else None)
    for j in range(records - len(built)):
        if j % 2:
            add(ids[1 + 9 * j], "s3", 3, Outcome.passed)  # a second valid record from another session: a duplicate
        else:
            add(f"Unknown--{j}", "s3", 1, Outcome.passed)  # outside the population
    return population, built


def measure(records: int = 100_000) -> list[Figure]:
    population, built = build(records)
    began = time.monotonic()
    summary = reconcile(population, built)
    in_memory = time.monotonic() - began
    with tempfile.TemporaryDirectory(prefix="webeval-bench-") as tmp:
        run_dir = RunDir(Path(tmp)).create(population)
        with open(run_dir.path / RESULTS, "w", encoding="utf-8") as out:
            out.writelines(record.model_dump_json() + "\n" for record in built)
        began = time.monotonic()
        written = write_summary(run_dir)
        full = time.monotonic() - began
    assert written.n == summary.n and written.passed == summary.passed
    return [Figure("reconcile_100k_s", round(in_memory, 2), 2.0, "s", "<=", {
        "records": len(built), "population": population.size, "write_summary_from_jsonl_s": round(full, 2),
        "passed": summary.passed, "duplicates": len(summary.duplicates), "unexpected": len(summary.unexpected)})]


if __name__ == "__main__":
    cli(__doc__, measure)
