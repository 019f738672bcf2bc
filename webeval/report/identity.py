"""Who a task is in Allure: its history id, names and labels, the same for a real result and for a placeholder.

The history id is ours, not allure-pytest's: that one hashes the pytest parameters (the whole Task object), so it
changes when a goal is reworded and cannot be computed for a task that never ran. Ours depends only on the
population's name and the task id, so a run that lost a task still lines up with the runs that had it.
"""

from __future__ import annotations

import hashlib
import uuid

# allure-pytest adds these from the module path; a task's place is its benchmark and site instead.
DEFAULT_SUITE_LABELS = frozenset({"parentSuite", "suite", "subSuite"})
_PLACEHOLDER_NAMESPACE = uuid.UUID("6f6b1f0e-8a52-4c1e-9a39-2f0d5b7c1e42")


def full_name(population: str, task_id: str) -> str:
    return f"{population}#{task_id}"


def history_id(population: str, task_id: str) -> str:
    return hashlib.md5(f"webeval\n{population}\n{task_id}".encode("utf-8")).hexdigest()


def test_case_id(population: str, task_id: str) -> str:
    return hashlib.md5(full_name(population, task_id).encode("utf-8")).hexdigest()


def placeholder_uuid(population: str, task_id: str) -> str:
    """A fixed uuid per task, so writing placeholders again replaces them instead of piling up."""
    return str(uuid.uuid5(_PLACEHOLDER_NAMESPACE, full_name(population, task_id)))


def placeholder_file(population: str, task_id: str) -> str:
    return f"{placeholder_uuid(population, task_id)}-result.json"


def task_labels(population: str, site: str, task_id: str, tags: list[str] | tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """suite = benchmark, subSuite and feature = site, story = task id, one tag label per task tag."""
    labels = [("suite", population), ("subSuite", site), ("feature", site), ("story", task_id)]
    labels += [("tag", tag) for tag in tags]
    return labels


def report_name(population: str, run_id: str) -> str:
    """The report's title, and the key of its point in the history: one point per run, however often rebuilt."""
    return f"webeval · {population} · {run_id}"
