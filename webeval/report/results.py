"""Completing a run's Allure results: categories, environment, executor, and one result for every task of the
population, so that the report's total is always N.

A task without an Allure result gets a placeholder with the history id its test would have had: `skipped` with a
`missing:` message when it has no record at all (not selected, interrupted, its worker died), or its recorded
outcome when only the Allure result was lost. Placeholders have fixed file names; writing them again replaces them,
and a task that has a real result by now loses its placeholder.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from webeval.outcomes.reconcile import final_records
from webeval.outcomes.record import AttemptRecord
from webeval.outcomes.rundir import RunDir
from webeval.report.categories import allure_status, status_message, write_categories
from webeval.report.environment import ENVIRONMENT, write_environment, write_executor
from webeval.report.identity import (full_name, history_id, placeholder_file, placeholder_uuid, site_of,
                                     task_labels, test_case_id)
from webeval.tasks import Population

RESULTS_DIR = "allure-results"


def _ms(timestamp: str) -> int | None:
    try:
        return int(datetime.fromisoformat(timestamp).timestamp() * 1000)
    except (TypeError, ValueError):
        return None


def history_ids_with_results(results_dir: Path, ignore: set[str] = frozenset()) -> set[str]:
    found = set()
    for path in results_dir.glob("*-result.json"):
        if path.name in ignore:
            continue
        try:
            found.add(json.loads(path.read_text(encoding="utf-8")).get("historyId"))
        except (OSError, ValueError, AttributeError):
            continue  # a result being written right now, or not ours
    return found


def placeholder(population: Population, run_id: str, task_id: str, record: AttemptRecord | None) -> dict[str, Any]:
    site = record.site if record is not None and record.site else site_of(task_id)
    now = int(time.time() * 1000)
    if record is None:
        message = status_message(None, f"no result for {task_id} in run {run_id}: it was not selected, the run was "
                                       "interrupted, or its worker died")
        outcome, when = "missing", now
    else:
        message = status_message(record.outcome, record.reason, kind=record.kind,
                                 failure_class=record.failure_class.value if record.failure_class else None)
        outcome, when = record.outcome.value, _ms(record.finished_at) or now
    labels = task_labels(population.name, site, task_id) + [("outcome", outcome)]
    return {
        "uuid": placeholder_uuid(population.name, task_id),
        "historyId": history_id(population.name, task_id),
        "testCaseId": test_case_id(population.name, task_id),
        "fullName": full_name(population.name, task_id),
        "name": task_id,
        "status": allure_status(record.outcome if record is not None else None),
        "statusDetails": {"message": message},
        "stage": "finished",
        "description": ("This task has no test result in this run; it counts in the population's N."
                        if record is None else
                        "The run recorded this outcome, but the test's own Allure result was lost."),
        "start": when,
        "stop": when,
        "labels": [{"name": name, "value": value} for name, value in labels],
        "titlePath": [population.name, site],
        "parameters": [{"name": "task", "value": task_id}],
    }


def write_placeholders(results_dir: Path, population: Population, run_id: str,
                       records: list[AttemptRecord]) -> list[str]:
    """A placeholder for every task without an Allure result; returns their ids."""
    names = {task_id: placeholder_file(population.name, task_id) for task_id in population.ids}
    have = history_ids_with_results(results_dir, ignore=set(names.values()))
    final, _ = final_records(population, records)
    written = []
    for task_id in population.ids:
        path = results_dir / names[task_id]
        if history_id(population.name, task_id) in have:
            path.unlink(missing_ok=True)
            continue
        aside = path.with_name(path.name + ".tmp")
        aside.write_text(json.dumps(placeholder(population, run_id, task_id, final.get(task_id)),
                                    ensure_ascii=False), encoding="utf-8")
        aside.replace(path)
        written.append(task_id)
    return written


def complete_results(results_dir: Path, run_dir: RunDir, env: dict[str, str] | None = None) -> list[str]:
    """Everything a run's results need besides the tests' own; `env` replaces environment.properties when given."""
    results_dir.mkdir(parents=True, exist_ok=True)
    population = run_dir.population()
    records = run_dir.records()
    write_categories(results_dir)
    write_executor(results_dir, population, run_dir.run_id)
    if env is not None or not (results_dir / ENVIRONMENT).exists():
        write_environment(results_dir, env or {"population": population.name,
                                               "population.sha256": population.sha256,
                                               "population.size": str(population.size)})
    return write_placeholders(results_dir, population, run_dir.run_id, records)
