"""Judging a finished run again from its stored evidence: no display, no browser, judge calls in parallel (bounded).

Each new verdict is appended to the run's results.jsonl as a record marked `extra["rejudge"]`, which supersedes the
verdict it replaces when the run is reconciled again. Tasks whose episode decided the outcome on its own (no answer,
a budget spent, invalid output) or never finished (infrastructure, not run) keep their records.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

from webeval.outcomes.reconcile import final_records
from webeval.outcomes.record import AttemptRecord, FailureClass, JudgeError, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

JudgeFn = Callable[[Task, dict[str, Any], Path], Awaitable[Verdict]]
JUDGEABLE = (Outcome.passed, Outcome.failed, Outcome.judge_failed)


@dataclass
class Rejudged:
    task_id: str
    before: str  # the outcome it had
    after: AttemptRecord | None = None  # the superseding record; None when the task was left as it was
    note: str = ""

    def line(self) -> str:
        if self.after is None:
            return f"{self.task_id}: {self.before}, kept ({self.note})"
        reason = f": {self.after.reason}" if self.after.reason and self.after.outcome is not Outcome.passed else ""
        return f"{self.task_id}: {self.before} -> {self.after.outcome.value}{reason}"


def failure_class(verdict: Verdict, answer: str | None) -> FailureClass:
    named = verdict.details.get("failure_class")
    if named:
        return FailureClass(named)
    return FailureClass.no_answer if answer is None else FailureClass.wrong_answer


def candidates(run_dir: RunDir, failed_only: bool, select: set[str] | None = None) -> list[tuple[AttemptRecord, str]]:
    """(final record, why it is kept or "") for each task of the population, in population order."""
    population = run_dir.population()
    final, _ = final_records(population, run_dir.records())
    chosen = []
    for task_id in population.ids:
        record = final.get(task_id)
        if record is None or (select is not None and task_id not in select):
            continue
        if failed_only and record.outcome is not Outcome.judge_failed:
            continue
        chosen.append((record, "" if record.outcome in JUDGEABLE else "its episode did not finish"))
    return chosen


def _evidence(run_dir: RunDir, record: AttemptRecord) -> tuple[dict[str, Any] | None, str]:
    if not record.path:
        return None, "no attempt folder recorded"
    path = run_dir.path / record.path / "evidence.json"
    try:
        evidence = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, f"no readable evidence at {path.relative_to(run_dir.path)}"
    if evidence.get("infra"):
        return None, "its episode broke (infrastructure)"
    if evidence.get("failure_class"):
        return None, f"decided by the agent's run ({evidence['failure_class']})"
    return evidence, ""


async def _one(run_dir: RunDir, record: AttemptRecord, task: Task, judge: JudgeFn, judge_name: str,
               gate: asyncio.Semaphore) -> Rejudged:
    result = Rejudged(record.task_id, record.outcome.value)
    evidence, note = _evidence(run_dir, record)
    if evidence is None:
        result.note = note
        return result
    folder = run_dir.path / str(record.path)
    async with gate:
        began = time.monotonic()
        try:
            verdict = await judge(task, evidence, folder)
        except JudgeError as exc:
            verdict, error = None, str(exc)
        seconds = round(time.monotonic() - began, 3)
    update: dict[str, Any] = {"worker": "rejudge", "finished_at": "", "kind": None,
                              "extra": {**record.extra, "rejudge": True, "judge": judge_name, "judge_s": seconds,
                                        "replaces": record.outcome.value}}
    if verdict is None:
        update.update(outcome=Outcome.judge_failed, failure_class=None, verdict=None, reason=f"judge_failed: {error}")
    else:
        (folder / "verdict.json").write_text(verdict.model_dump_json(indent=2), encoding="utf-8")
        failed = not verdict.success
        update.update(outcome=Outcome.failed if failed else Outcome.passed, verdict=verdict.model_dump(mode="json"),
                      failure_class=failure_class(verdict, evidence.get("answer")) if failed else None,
                      reason=verdict.reason if failed else "")
    result.after = record.model_copy(update=update)
    run_dir.append(result.after)
    return result


async def rejudge(run_dir: RunDir, tasks: dict[str, Task], judge: JudgeFn, *, judge_name: str,
                  failed_only: bool = False, concurrency: int = 8, select: set[str] | None = None) -> list[Rejudged]:
    """Judge the chosen tasks of a run again, at most `concurrency` judge calls at once; in population order."""
    gate = asyncio.Semaphore(max(1, concurrency))
    jobs: list[Awaitable[Rejudged]] = []
    kept: dict[str, Rejudged] = {}
    order: list[str] = []
    for record, note in candidates(run_dir, failed_only, select):
        order.append(record.task_id)
        task = tasks.get(record.task_id)
        if note or task is None:
            kept[record.task_id] = Rejudged(record.task_id, record.outcome.value, note=note or "not in the tasks")
        else:
            jobs.append(_one(run_dir, record, task, judge, judge_name, gate))
    done = {r.task_id: r for r in await asyncio.gather(*jobs)}
    return [done.get(task_id) or kept[task_id] for task_id in order]
