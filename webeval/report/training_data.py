"""Trajectories as training data: one JSON line per task attempt of a run, from its final records.

Fields of a line:
- `task_id`, `attempt`, `site`, `goal`: which attempt, at what.
- `messages`: the episode as the model met it, in chat form: the task as the first user turn; then, per step, a
  user turn with the observation (the screenshot as a file path relative to the run directory, the page's URL and
  title) and an assistant turn with the model's raw reply. The policy's own system prompt and its history window
  are not stored in a run, so they are not here.
- `actions`: the actions taken, step by step, as executed (the closing answer last).
- `answer`, `outcome`, `failure_class`: how it ended.
- `reward`: 1.0 passed, 0.0 failed, null when masked.
- `mask`: true for infra_error, judge_failed, not_run and harness_error: the attempt says nothing about the model
  and must not be trained on as a failure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from webeval.outcomes.reconcile import final_records
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.rundir import RunDir


def read_steps(folder: Path) -> list[dict[str, Any]]:
    """The steps of an attempt folder's trajectory.jsonl, oldest first; a torn line is left out."""
    path = folder / "trajectory.jsonl"
    if not path.is_file():
        return []
    steps = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            steps.append(json.loads(line))
        except ValueError:  # a torn last line of a killed worker: the steps before it still count
            continue
    return steps


def _goal(folder: Path) -> str:
    try:
        return json.loads((folder / "evidence.json").read_text(encoding="utf-8")).get("goal", "")
    except (OSError, ValueError):
        return ""


def line(run_dir: RunDir, record: AttemptRecord) -> dict[str, Any]:
    folder = run_dir.path / record.path if record.path else None
    steps = read_steps(folder) if folder is not None else []
    goal = _goal(folder) if folder is not None else ""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": goal}]}] if goal else []
    for step in steps:
        seen: list[dict[str, Any]] = []
        if step.get("screenshot") and folder is not None:
            seen.append({"type": "image", "path": str((folder / step["screenshot"]).relative_to(run_dir.path))})
        seen.append({"type": "text", "text": f"URL: {step.get('url', '')}\nTitle: {step.get('title', '')}"})
        messages += [{"role": "user", "content": seen}, {"role": "assistant", "content": step.get("raw") or ""}]
    valid = record.outcome.valid
    return {"task_id": record.task_id, "attempt": record.attempt, "site": record.site, "goal": goal,
            "messages": messages, "actions": [action for step in steps for action in step.get("actions") or []],
            "answer": record.answer, "outcome": record.outcome.value,
            "failure_class": record.failure_class.value if record.failure_class else None,
            "reward": (1.0 if record.outcome is Outcome.passed else 0.0) if valid else None, "mask": not valid}


def lines(run_dir: RunDir) -> Iterator[dict[str, Any]]:
    """One line per task of the population that has a final record, in population order."""
    population = run_dir.population()
    final, _ = final_records(population, run_dir.records())
    for task_id in population.ids:
        if task_id in final:
            yield line(run_dir, final[task_id])
