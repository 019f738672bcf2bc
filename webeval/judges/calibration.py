"""A labelled evidence set for measuring judges: the oracle's own attempts, and variants of them that fail the way
agents fail.

From each passing oracle attempt come three successes (its answer as given, restated in a sentence, in lower case)
and three realistic failures: a near-miss value (the last number one off, or the last word dropped; for a task
judged by the site's state, one checked field of the state wrong), a stop one step early (the last observation and
action dropped, with that near miss), and another task's answer (for a state task, the checked field missing). The
truth of every variant is what the task's own verifier says of it, never what the variant was meant to be.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webeval.judges.verifier import verify
from webeval.outcomes.evidence import Evidence
from webeval.tasks import Task

SUCCESSES = ("oracle", "restated", "lowercase")
FAILURES = ("near-miss", "early-stop", "other-answer")
_NUMBER = re.compile(r"\d+")


@dataclass
class Variant:
    name: str
    task: Task
    evidence: Evidence  # not yet written: its folder is the source attempt's
    success: bool
    reason: str


def near_miss(answer: str) -> str:
    """A value close to the answer and not it: the last number one off, else the last word dropped."""
    numbers = list(_NUMBER.finditer(answer))
    if numbers:
        last = numbers[-1]
        return answer[:last.start()] + str(int(last.group()) + 1) + answer[last.end():]
    words = answer.split()
    return " ".join(words[:-1]) if len(words) > 1 else answer[:-1] or "none"


def _off(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return near_miss(value) if value else "x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict) and value:
        key = sorted(value)[-1]
        return {**value, key: _off(value[key])}
    return "x"


def _at(document: dict[str, Any], path: str) -> tuple[Any, str] | None:
    *parents, leaf = path.split(".")
    node: Any = document
    for part in parents:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return (node, leaf) if isinstance(node, dict) and leaf in node else None


def wrong_state(task: Task, state: dict[str, Any], drop: bool = False) -> dict[str, Any]:
    """The state with the first checked field one off (or, with `drop`, missing)."""
    changed = copy.deepcopy(state)
    for check in task.verifier.state if task.verifier else []:
        found = _at(changed, check.path)
        if found is not None:
            parent, leaf = found
            if drop:
                del parent[leaf]
            else:
                parent[leaf] = _off(parent[leaf])
            break
    return changed


def _early(evidence: Evidence) -> dict[str, Any]:
    """One step fewer: the last observation and the last action before the answer are gone."""
    actions = list(evidence.actions)
    answer_at = next((i for i in range(len(actions) - 1, -1, -1) if actions[i].get("tool") == "terminate"), None)
    if answer_at is not None and answer_at > 0:
        del actions[answer_at - 1]
    elif actions:
        actions.pop()
    cut = lambda items: items[:-1] if len(items) > 1 else items  # noqa: E731
    urls = cut(evidence.urls)
    return {"actions": actions, "screenshots": cut(evidence.screenshots), "urls": urls,
            "titles": cut(evidence.titles), "final_url": urls[-1] if urls else evidence.final_url}


def _changes(name: str, task: Task, evidence: Evidence, other: str) -> dict[str, Any]:
    answer = evidence.answer or ""
    by_state = bool(task.verifier and task.verifier.state and not task.verifier.answer)
    if name == "restated":
        return {"answer": f"The answer is: {answer}."}
    if name == "lowercase":
        return {"answer": answer.lower()}
    if name == "near-miss":
        return {"state": wrong_state(task, evidence.state or {})} if by_state else {"answer": near_miss(answer)}
    if name == "early-stop":
        changed = _early(evidence)
        if by_state:
            return {**changed, "state": wrong_state(task, evidence.state or {})}
        return {**changed, "answer": near_miss(answer)}
    if name == "other-answer":
        return {"state": wrong_state(task, evidence.state or {}, drop=True)} if by_state else {"answer": other}
    return {}


def variants(task: Task, evidence: Evidence, other_answer: str) -> list[Variant]:
    """Every variant of one oracle attempt, each labelled by the task's verifier."""
    made = []
    for name in SUCCESSES + FAILURES:
        changed = evidence.model_copy(update=_changes(name, task, evidence, other_answer))
        verdict = verify(task.verifier, changed.answer, changed.state or {})
        made.append(Variant(name, task, changed, verdict.success, verdict.reason))
    return made


def write_attempt(evidence: Evidence, folder: Path, task_id: str) -> Evidence:
    """The evidence in a folder of its own, its screenshots linked (copied where links cannot be made)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in evidence.screenshots:
        source, target = evidence.folder / name, folder / name
        if source.is_file() and not target.exists():
            try:
                os.link(source, target)
            except OSError:
                shutil.copyfile(source, target)
    written = evidence.model_copy(update={"folder": folder, "task_id": task_id})
    written.write()
    return written
