"""Completing a run's Allure results: categories, environment, executor, and one result for every task of the
population, so that the report's total is always N.

A task without an Allure result of its final attempt gets one with the history id its test would have had:
`skipped` with a `missing:` message when it has no record at all (not selected, interrupted, its worker died), or,
when only the Allure result was lost, one made from its record and attempt folder (webeval.report.recorded: steps,
screenshots, answer, verdict). These have fixed file names; writing them again replaces them, and a task that has a
real result by now loses its placeholder.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from webeval.outcomes.reconcile import Summary, final_records, reconcile
from webeval.outcomes.record import AttemptRecord
from webeval.outcomes.rundir import POPULATION, RunDir
from webeval.report.categories import allure_status, status_message, write_categories
from webeval.report.compared import mark_results, saved
from webeval.report.run_environment import read_environment, write_environment, write_executor
from webeval.report.recorded import add_attempt, written_for
from webeval.report.identity import (full_name, history_id, placeholder_file, placeholder_uuid, task_labels,
                                     test_case_id)
from webeval.tasks import Population

RESULTS_DIR = "allure-results"


def _ms(timestamp: str) -> int | None:
    try:
        return int(datetime.fromisoformat(timestamp).timestamp() * 1000)
    except (TypeError, ValueError):
        return None


def scan_results(results_dir: Path, ignore: set[str] = frozenset()) -> list[dict[str, Any]]:
    """uuid, historyId, status and attempt (its parameter) of every test result in the folder, placeholders named
    in `ignore` aside."""
    found = []
    for path in results_dir.glob("*-result.json"):
        if path.name in ignore:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            attempt = next((p.get("value") for p in data.get("parameters") or []
                            if isinstance(p, dict) and p.get("name") == "attempt"), None)
            found.append({**{key: data.get(key) for key in ("uuid", "historyId", "status")}, "attempt": attempt})
        except (OSError, ValueError, AttributeError):
            continue  # a result being written right now, or not a result
    return found


def detach_fixtures(results_dir: Path, uuids: set[str]) -> None:
    """allure-pytest links each fixture's set-up and tear-down to every test that used it: for a task, a dozen
    harness fixtures shown above the agent's steps. Unlink them from these results (containers left with no test
    are removed)."""
    for path in results_dir.glob("*-container.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        children = data.get("children") or []
        kept = [child for child in children if child not in uuids]
        if kept == children:
            continue
        if kept:
            data["children"] = kept
            aside = path.with_name(path.name + ".tmp")
            aside.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            aside.replace(path)
        else:
            path.unlink(missing_ok=True)


def placeholder(population: Population, run_id: str, task_id: str, record: AttemptRecord | None,
                started_ms: int | None = None) -> dict[str, Any]:
    """A result for a task without one; `started_ms` (the run's start) dates a task that never ran."""
    site = (record.site if record is not None else "") or population.site(task_id) or "-"
    now = started_ms or int(time.time() * 1000)
    if record is None:
        # One message for all of them, so that the report groups them as one kind of problem.
        message = status_message(None, "no result in this run: not selected, the run was interrupted, "
                                       "or its worker died")
        outcome, when = "missing", now
    else:
        message = status_message(record.outcome, record.reason, kind=record.kind,
                                 failure_class=record.failure_class.value if record.failure_class else None)
        outcome, when = record.outcome.value, _ms(record.finished_at) or now
    labels = task_labels(population.name, site, task_id) + [("outcome", outcome)]
    if record is not None and record.failure_class is not None:
        labels.append(("failure_class", record.failure_class.value))
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
        "parameters": [{"name": "task", "value": task_id}, {"name": "run id", "value": run_id, "excluded": True}],
    }


def write_placeholders(results_dir: Path, population: Population, run_id: str,
                       records: list[AttemptRecord], started_ms: int | None = None,
                       run_dir: RunDir | None = None) -> list[str]:
    """A result for every task whose final record has none of its own: made from the record and its attempt
    folder where there is one (webeval.report.recorded, given `run_dir`), else a placeholder. Returns their ids."""
    names = {task_id: placeholder_file(population.name, task_id) for task_id in population.ids}
    ours = {history_id(population.name, task_id) for task_id in population.ids}
    scanned = [r for r in scan_results(results_dir, ignore=set(names.values())) if r["historyId"] in ours]
    have = {r["historyId"] for r in scanned}
    attempts = {(r["historyId"], r["attempt"]) for r in scanned}
    # A broken task is a harness error: there the fixtures' set-up and tear-down may be what explains it.
    detach_fixtures(results_dir, {r["uuid"] for r in scanned if r["status"] != "broken"})
    final, _ = final_records(population, records)
    written = []
    for task_id in population.ids:
        path, record, hid = results_dir / names[task_id], final.get(task_id), history_id(population.name, task_id)
        if hid in have and (record is None or (hid, str(record.attempt)) in attempts):
            path.unlink(missing_ok=True)  # the test's own result of its final attempt is there
            continue
        written.append(task_id)
        from_attempt = run_dir is not None and record is not None and record.path is not None
        if from_attempt and written_for(path, record):
            continue  # written from this very record before, with its pictures since: left as it is
        result = placeholder(population, run_id, task_id, record, started_ms)
        if from_attempt:
            add_attempt(result, run_dir, record, results_dir)
        aside = path.with_name(path.name + ".tmp")
        aside.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
        aside.replace(path)
    return written


def score_values(summary: Summary) -> dict[str, str]:
    """The score over the fixed denominator, first in the report's metadata: Allure's own success rate leaves
    skipped results out, so it would read 100% for a run that scored 3 of 45."""
    masked = sum(summary.masked.values())
    state = "yes" if summary.complete else (f"no: {len(summary.missing)} missing, {masked} masked"
                                            + (f", {len(summary.duplicates)} duplicates" if summary.duplicates else ""))
    return {"score": f"{summary.passed}/{summary.n} = {summary.score:.1%}", "complete": state}


def complete_results(results_dir: Path, run_dir: RunDir, env: dict[str, str] | None = None) -> list[str]:
    """Everything a run's results need besides the tests' own; returns the tasks given a placeholder.

    `env` replaces the environment (else the one written before is kept); the score is recomputed every time,
    since records change after the session (a resumed run, a task judged again).
    """
    results_dir.mkdir(parents=True, exist_ok=True)
    for half_written in results_dir.glob("*.tmp"):  # a writer met a full disk (its session has ended)
        half_written.unlink(missing_ok=True)
    population = run_dir.population()
    records = run_dir.records()
    write_categories(results_dir)
    write_executor(results_dir, population, run_dir.run_id)
    values = env if env is not None else read_environment(results_dir) or {
        "population": population.name, "population.sha256": population.sha256,
        "population.size": str(population.size)}
    scores = score_values(reconcile(population, records))
    write_environment(results_dir, {**scores, **{k: v for k, v in values.items() if k not in scores}})
    started_ms = int((run_dir.path / POPULATION).stat().st_mtime * 1000)  # written when the run collected its tasks
    missing = write_placeholders(results_dir, population, run_dir.run_id, records, started_ms, run_dir)
    comparison = saved(run_dir)
    if comparison is not None:  # `webeval diff` compared this run with a baseline: its labels, on every result
        mark_results(results_dir, run_dir, comparison)
    return missing
