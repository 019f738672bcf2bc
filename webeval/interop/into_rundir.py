"""Imported trajectories into a run directory that `webeval reverify`, `--rejudge`, every judge protocol, the verdict
cache and `webeval judge-agreement` read as any run.

What is written: population.json; the WebVoyager suite's run configuration (webvoyager.json: where the tasks are, and
the judge protocol the source is best judged by); the tasks, as a task file in WebVoyager's format inside the run
(unless the trajectories are over a pinned WebVoyager population); per task `tasks/<id>/attempt-1/` with the
screenshots, `evidence.json` and `trajectory.jsonl`; one record per task in results.jsonl; labels.jsonl when the
source gave its own verdicts; the summary.

An imported trajectory has no verdict of its own: its record is `judge_failed` of kind `unjudged`. That outcome is
masked (the run reads as incomplete, never as failed) and is exactly what a re-judge judges, so `webeval reverify`
gives every imported task its verdict. A trajectory whose source says its episode broke is `infra_error` instead,
and is never judged.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from webeval.benchmarks.webvoyager.settings import RUN_CONFIG
from webeval.benchmarks.webvoyager.tasks import load_file
from webeval.interop.imported import ImportedTrajectory
from webeval.judges.agreement import LABELS
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.reconcile import Summary, write_summary
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.tasks import Population

UNJUDGED = "unjudged"  # the judge_failed kind of an imported trajectory that no judge has read yet
NO_START_URL = "https://start-url-unknown.invalid/"  # a reserved name that never resolves: the source had none


@dataclass(frozen=True)
class ImportPlan:
    format: str  # webvoyager | online-mind2web | agentlab
    source: Path  # the folder imported from
    protocol: str  # the judge protocol a re-judge uses unless told another
    population: str | None = None  # a pinned WebVoyager population the tasks are over
    data_dir: Path | None = None  # where that population's files are

    @property
    def tasks_file(self) -> str:
        return f"imported-{self.format}.jsonl"

    def run_config(self, today: date) -> dict[str, Any]:
        """What a re-judge reads: the tasks (a file relative to the run, or a population in a data folder)."""
        return {"population": self.population, "tasks_file": None if self.population else self.tasks_file,
                "data_dir": str(self.data_dir.resolve()) if self.data_dir else None, "today": today.isoformat(),
                "judge": {"kinds": ["model"], "protocol": self.protocol}, "site_map": {}, "date_rendered": [],
                "imported": {"format": self.format, "from": str(self.source.resolve())}}


def task_rows(trajectories: list[ImportedTrajectory]) -> str:
    rows = [{"web_name": t.site or "unknown", "id": t.task_id, "ques": t.goal, "web": t.start_url or NO_START_URL}
            for t in trajectories]
    return "\n".join(json.dumps(row, ensure_ascii=False) for row in rows) + "\n"


def population_of(out: Path, plan: ImportPlan, trajectories: list[ImportedTrajectory],
                  pinned: Population | None, today: date) -> Population:
    if pinned is not None:
        return pinned
    (out / plan.tasks_file).write_text(task_rows(trajectories), encoding="utf-8")
    return load_file(out / plan.tasks_file, today)[0]


def evidence_of(trajectory: ImportedTrajectory, plan: ImportPlan, folder: Path) -> Evidence:
    names = [name for name, _ in trajectory.screenshots]
    urls = trajectory.urls if any(trajectory.urls) else []
    files = [str(p.relative_to(trajectory.folder)) for p in [*trajectory.folder.glob("*"),
                                                               *trajectory.folder.glob("*/*")] if p.is_file()]
    not_read = sorted(name for name in files if name not in trajectory.read)
    return Evidence(
        task_id=trajectory.task_id, goal=trajectory.goal, answer=trajectory.answer, infra=trajectory.infra,
        final_url=next((url for url in reversed(urls) if url), ""), urls=urls,
        actions=[action.as_action(trajectory.answer) for action in trajectory.actions], screenshots=names,
        folder=folder, lacks=trajectory.lacks,
        imported={"format": plan.format, "from": str(trajectory.folder.resolve()), "details": trajectory.details,
                  "not_read": not_read})


def trajectory_lines(trajectory: ImportedTrajectory) -> str:
    """trajectory.jsonl as a run writes it: a step per screenshot, with the action taken after it."""
    lines = []
    for index in range(max(len(trajectory.screenshots), len(trajectory.actions))):
        shot = trajectory.screenshots[index][0] if index < len(trajectory.screenshots) else ""
        action = trajectory.actions[index] if index < len(trajectory.actions) else None
        url = trajectory.urls[index] if index < len(trajectory.urls) else ""
        lines.append(json.dumps({
            "step": index + 1, "screenshot": shot, "url": url, "title": "",
            "actions": [action.as_action(trajectory.answer)] if action else [], "results": [], "error": None,
            "raw": (action.raw or action.text) if action else None}, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def record_of(run_dir: RunDir, trajectory: ImportedTrajectory, plan: ImportPlan, attempt: int,
              folder: Path) -> AttemptRecord:
    infra = trajectory.infra
    return AttemptRecord(
        run_id=run_dir.run_id, session=f"import-{plan.format}", task_id=trajectory.task_id, site=trajectory.site,
        attempt=attempt, outcome=Outcome.infra_error if infra else Outcome.judge_failed,
        kind=infra["kind"] if infra else UNJUDGED,
        reason=f"infra[{infra['kind']}]: {infra['message']}" if infra else
        f"judge_failed: not judged yet (imported from {plan.format}); `webeval reverify` judges it",
        answer=trajectory.answer, steps=len(trajectory.actions), worker="import",
        path=str(folder.relative_to(run_dir.path)), extra={"imported": plan.format})


def write_attempt(run_dir: RunDir, trajectory: ImportedTrajectory, plan: ImportPlan) -> None:
    attempt, folder = run_dir.attempt_dir(trajectory.task_id)
    for name, source in [*trajectory.screenshots, *trajectory.kept_files]:
        if not (folder / name).exists():
            shutil.copyfile(source, folder / name)
    evidence_of(trajectory, plan, folder).write()
    (folder / "trajectory.jsonl").write_text(trajectory_lines(trajectory), encoding="utf-8")
    run_dir.append(record_of(run_dir, trajectory, plan, attempt, folder))


def write_run(out: Path, plan: ImportPlan, trajectories: list[ImportedTrajectory],
              pinned: Population | None = None, today: date | None = None) -> Summary:
    """A run directory at `out` (new, or empty) holding the trajectories; its summary."""
    today = today or date.today()
    out.mkdir(parents=True, exist_ok=True)
    population = population_of(out, plan, trajectories, pinned, today)
    run_dir = RunDir(out).create(population, {RUN_CONFIG: plan.run_config(today)})
    for trajectory in trajectories:
        write_attempt(run_dir, trajectory, plan)
    labels = [{"task_id": t.task_id, "attempt": 1, "success": t.label} for t in trajectories if t.label is not None]
    if labels:
        (out / LABELS).write_text("".join(json.dumps(row) + "\n" for row in labels), encoding="utf-8")
    return write_summary(run_dir)
