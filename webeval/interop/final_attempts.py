"""A run as an exporter reads it: per task of the population, its final record with the evidence and steps behind
it, the tasks that never ran, and the reconciled summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webeval.outcomes.evidence import Evidence, EvidenceError
from webeval.outcomes.reconcile import Summary, final_records, reconcile
from webeval.outcomes.record import AttemptRecord
from webeval.outcomes.rundir import RunDir
from webeval.report.training_data import read_steps


@dataclass
class FinalAttempt:
    record: AttemptRecord
    folder: Path | None  # the attempt folder; None when the record names none
    evidence: Evidence | None  # None when the folder holds no readable evidence
    evidence_error: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)  # trajectory.jsonl

    @property
    def task_id(self) -> str:
        return self.record.task_id


@dataclass
class RunView:
    run_dir: RunDir
    summary: Summary
    attempts: list[FinalAttempt]  # in population order
    missing: list[str]


def _attempt(run_dir: RunDir, record: AttemptRecord) -> FinalAttempt:
    if not record.path:
        return FinalAttempt(record, None, None, "no attempt folder recorded")
    folder = run_dir.path / record.path
    try:
        evidence = Evidence.load(folder)
    except EvidenceError as exc:
        return FinalAttempt(record, folder, None, str(exc), read_steps(folder))
    return FinalAttempt(record, folder, evidence, "", read_steps(folder))


def read_run(path: Path) -> RunView:
    run_dir = RunDir(path)
    population = run_dir.population()
    records = run_dir.records()
    final, _ = final_records(population, records)
    summary = reconcile(population, records, run_dir.conventions())
    attempts = [_attempt(run_dir, final[task_id]) for task_id in population.ids if task_id in final]
    return RunView(run_dir, summary, attempts, list(summary.missing))
