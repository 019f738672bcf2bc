"""Task sets made from others: website-level train/test splits (with a leakage check) and rubric decompositions.

A split keeps each row of the source files as it was written; a task's site is its `site` (or WebVoyager's
`web_name`), and two sites leak into each other when they share a start URL's host and first path segment.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from webeval.tasks.model import Task
from webeval.tasks.population import TaskFileError


def read_rows(paths: list[Path]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise TaskFileError(f"{path}: cannot read it ({exc.strerror})") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                raise TaskFileError(f"{path}:{number}: not a JSON object") from None
            if not isinstance(row, dict) or not isinstance(row.get("site", row.get("web_name")), str) \
                    or not isinstance(row.get("id"), str):
                raise TaskFileError(f"{path}:{number}: a task needs an 'id' and a 'site' (or 'web_name')")
            rows.append(row)
    return rows


def site_of(row: dict[str, Any]) -> str:
    return row.get("site", row.get("web_name"))


def location_of(row: dict[str, Any]) -> str:
    """Where a site lives: its start URL's host and first path segment (sites may share a host: /shop, /news)."""
    parts = urlsplit(str(row.get("start_url", row.get("web", ""))))
    host = (parts.hostname or "").removeprefix("www.")
    return f"{host}/{parts.path.strip('/').split('/')[0]}" if host else ""


def split_by_site(rows: list[dict[str, Any]], test_sites: int, seed: int) -> tuple[list[dict], list[dict], list[str]]:
    """(train rows, test rows, the test sites): `test_sites` sites drawn with the seed, every task of a site on one
    side."""
    sites = sorted({site_of(row) for row in rows})
    if not 1 <= test_sites < len(sites):
        raise ValueError(f"--test-sites {test_sites}: choose between 1 and {len(sites) - 1} of the {len(sites)} sites")
    chosen = sorted(random.Random(seed).sample(sites, test_sites))
    test = [row for row in rows if site_of(row) in chosen]
    train = [row for row in rows if site_of(row) not in chosen]
    return train, test, chosen


def leaks(train: list[dict[str, Any]], test: list[dict[str, Any]]) -> list[str]:
    """Why the test side is not unseen: a test site, host or task id that is also in train."""
    found = []
    for what, key in (("site", site_of), ("start URL", location_of), ("task id", lambda row: row["id"])):
        shared = sorted({key(row) for row in test} & {key(row) for row in train} - {""})
        found += [f"{what} {value!r} is in both train and test" for value in shared]
    return found


def decompose(task: Task, sizes: set[int] | None = None) -> list[Task]:
    """Easier tasks from subsets of a rubric task's fact groups (every proper, non-empty subset, or those of the
    given sizes): part k of the task goes with group k, and a task's difficulty is its number of facts."""
    if not task.rubric or len(task.rubric) < 2:
        return []
    groups = len(task.rubric)
    made = []
    for size in range(1, groups):
        if sizes and size not in sizes:
            continue
        for subset in itertools.combinations(range(1, groups + 1), size):
            rubric = [task.rubric[k - 1] for k in subset]
            parts = ", ".join(f"({k})" for k in subset)
            facts = sum(len(group) for group in rubric)
            made.append(task.model_copy(update={
                "id": f"{task.id}.parts-{'-'.join(map(str, subset))}",
                "goal": f"{task.goal}\n\nOnly part{'s' if size > 1 else ''} {parts} of this task "
                        f"{'are' if size > 1 else 'is'} asked; leave the others out of your answer.",
                "rubric": rubric, "solution": None,
                "tags": [t for t in task.tags if not t.startswith("facts-")]
                        + [f"facts-{facts}", f"decomposed-from:{task.id}"]}))
    return made
