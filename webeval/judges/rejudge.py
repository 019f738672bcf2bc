"""Judging a finished run again from its stored evidence: no display, no browser, judge calls in parallel (bounded).

Each new verdict is appended to the run's results.jsonl as a record marked `extra["rejudge"]`, which supersedes the
verdict it replaces when the run is reconciled again. Tasks whose episode decided the outcome on its own (no answer,
a budget spent, invalid output) or never finished (infrastructure, not run) keep their records.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from webeval.judges.decide import Judge, Unparseable, decide
from webeval.outcomes.evidence import Evidence, EvidenceError
from webeval.outcomes.reconcile import final_records
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

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


def _evidence(run_dir: RunDir, record: AttemptRecord) -> tuple[Evidence | None, str]:
    if not record.path:
        return None, "no attempt folder recorded"
    try:
        evidence = Evidence.load(run_dir.path / record.path)
    except EvidenceError as exc:
        return None, str(exc)
    if evidence.infra:
        return None, "its episode broke (infrastructure)"
    if evidence.failure_class:
        return None, f"decided by the agent's run ({evidence.failure_class})"
    return evidence, ""


def judge_cost(before: dict[str, float], judge_usd: float | None) -> dict[str, float]:
    """The record's cost with this judgement's in place of the one before (the episode's policy cost stays)."""
    kept = {side: value for side, value in before.items() if side != "judge"}
    return kept if judge_usd is None else {**kept, "judge": judge_usd}


async def rejudge_record(run_dir: RunDir, record: AttemptRecord, task: Task, judge: Judge, *, judge_name: str = "",
                         unparseable: Unparseable = "mask") -> tuple[AttemptRecord | None, Verdict | None, str]:
    """(the superseding record, its verdict, "") from the record's stored evidence; (None, None, why) when the
    record is kept as it was. The new record is not appended: the caller does that."""
    if record.outcome not in JUDGEABLE:
        return None, None, "its episode did not finish"
    evidence, note = _evidence(run_dir, record)
    if evidence is None:
        return None, None, note
    began = time.monotonic()
    decision = await decide(task, evidence, judge, unparseable)
    if decision.verdict is not None:
        (evidence.folder / "verdict.json").write_text(decision.verdict.model_dump_json(indent=2), encoding="utf-8")
    valid = decision.outcome.valid
    after = record.model_copy(update={
        "worker": "rejudge", "finished_at": "", "outcome": decision.outcome, "kind": decision.kind,
        "failure_class": decision.failure_class, "reason": decision.reason,
        "verdict": decision.verdict.model_dump(mode="json") if valid and decision.verdict else None,
        "judge_usage": decision.judge_usage, "cost_usd": judge_cost(record.cost_usd, decision.judge_usd),
        "extra": {**record.extra, "rejudge": True, "judge": judge_name, "replaces": record.outcome.value,
                  "judge_s": round(time.monotonic() - began, 3)}})
    return after, decision.verdict, ""


async def rejudge(run_dir: RunDir, tasks: dict[str, Task], judge: Judge, *, judge_name: str,
                  failed_only: bool = False, concurrency: int = 8, select: set[str] | None = None,
                  unparseable: Unparseable = "mask") -> list[Rejudged]:
    """Judge the chosen tasks of a run again, at most `concurrency` judge calls at once; in population order."""
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(record: AttemptRecord, task: Task | None) -> Rejudged:
        result = Rejudged(record.task_id, record.outcome.value, note="not in the tasks")
        if task is not None:
            async with gate:
                result.after, _, result.note = await rejudge_record(run_dir, record, task, judge,
                                                                    judge_name=judge_name, unparseable=unparseable)
        if result.after is not None:
            run_dir.append(result.after)
        return result

    chosen = candidates(run_dir, failed_only, select)
    return list(await asyncio.gather(*(one(record, tasks.get(record.task_id)) for record, _ in chosen)))
