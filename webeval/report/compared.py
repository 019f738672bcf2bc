"""A comparison in a run's Allure results: each task's change against a baseline (`webeval diff`) as a label on its
result, and categories that gather the labelled results. Allure 3 matches categories on labels; they come before the
failure classes, so a task that newly fails is listed under "Newly failing", not under "Wrong answer".

The comparison is kept in the run directory (`comparison.json`), so that results completed again later (a report
built again, a placeholder written again) carry the same labels.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from webeval.outcomes import epochs
from webeval.outcomes.rundir import RunDir
from webeval.report.identity import history_id

SAVED = "comparison.json"
LABEL = "comparison"
BASELINE_LABEL = "baseline"
VALUES = {"newly_failing": "newly failing", "newly_passing": "newly passing", "flaky": "flaky",
          "not_comparable": "not comparable"}

# Allure 3's own form (label matchers); Allure 2's categories.json has no label matcher.
COMPARISON_CATEGORIES: list[dict[str, Any]] = [
    {"name": "Newly failing", "matchers": {"labels": {LABEL: "^newly failing$"}},
     "description": "Passed in the baseline, failed in this run (webeval diff)."},
    {"name": "Newly passing", "matchers": {"labels": {LABEL: "^newly passing$"}},
     "description": "Failed in the baseline, passed in this run (webeval diff)."},
    {"name": "Flaky across epochs", "matchers": {"labels": {LABEL: "^flaky$"}},
     "description": "Its epochs disagree in the baseline or in this run (webeval diff)."},
    {"name": "Not comparable", "matchers": {"labels": {LABEL: "^not comparable$"}},
     "description": "Masked or missing in the baseline or in this run: never counted as a failure (webeval diff)."},
]


def save(run_dir: RunDir, comparison: dict[str, Any]) -> None:
    aside = run_dir.path / f".{SAVED}.tmp"
    aside.write_text(json.dumps(comparison, indent=2), encoding="utf-8")
    aside.replace(run_dir.path / SAVED)


def saved(run_dir: RunDir) -> dict[str, Any] | None:
    try:
        return json.loads((run_dir.path / SAVED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _labels(data: dict[str, Any], change: str | None, baseline: str) -> list[dict[str, Any]]:
    kept = [label for label in data.get("labels") or [] if label.get("name") not in (LABEL, BASELINE_LABEL)]
    value = VALUES.get(change or "")
    return kept + ([{"name": LABEL, "value": value}, {"name": BASELINE_LABEL, "value": baseline}] if value else [])


def mark_results(results_dir: Path, run_dir: RunDir, comparison: dict[str, Any]) -> int:
    """Label every result of the run's tasks with its change against the baseline; returns how many carry one."""
    population = run_dir.population()
    changes = {task_id: task["change"] for task_id, task in comparison["tasks"].items()}
    count = comparison["candidate"].get("epochs", 1)
    owner = {history_id(population.name, task_id): epochs.base_id(task_id)[0] if count > 1 else task_id
             for task_id in population.ids}
    baseline = comparison["baseline"]["run_id"]
    marked = 0
    for path in results_dir.glob("*-result.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a result being written right now, or not a result
        task_id = owner.get(data.get("historyId"))
        if task_id is None:
            continue
        labels = _labels(data, changes.get(task_id), baseline)
        marked += any(label["name"] == LABEL for label in labels)
        if labels != data.get("labels"):
            data["labels"] = labels
            aside = path.with_name(path.name + ".tmp")
            aside.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            aside.replace(path)
    return marked
