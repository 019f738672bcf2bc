"""Website-level train/test splits (WebGym's out-of-distribution test: its websites are never trained on), and the
leakage check that says whether a split keeps that promise.

A split draws whole units for test: sites (`by="site"`) or registered domains (`by="domain"`, see
registered_domains). Whatever the unit, a split leaks when a test task shares with a training task its site, its
registered domain, its id, or its goal up to trivial differences (goal_key: Unicode NFKC, case folded, every run of
digits one `0`, punctuation a space, whitespace collapsed: "Find 2 hotels in Paris!" and "find 3 hotels in paris"
are one goal).
"""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Literal, Sequence

from webeval.tasks.model import Task
from webeval.tasks.registered_domains import registered_domain_of

SplitBy = Literal["site", "domain"]
_DIGITS = re.compile(r"\d+")


def _is_punctuation(char: str) -> bool:
    return unicodedata.category(char)[0] in "PS"


def goal_key(goal: str) -> str:
    """A goal's text with what makes near-duplicates differ taken out (the rule in the module's docstring)."""
    text = unicodedata.normalize("NFKC", goal).casefold()
    text = "".join(" " if _is_punctuation(char) else char for char in text)
    return " ".join(_DIGITS.sub("0", text).split())


def unit_of(task: Task, by: SplitBy) -> str:
    return task.site if by == "site" else registered_domain_of(task.start_url)


def draw(units: Sequence[str], count: int, seed: int, by: SplitBy = "site") -> list[str]:
    """`count` of the distinct units for test, drawn with the seed (sorted first, so the draw depends on the set of
    units only)."""
    distinct = sorted(set(units))
    if not 1 <= count < len(distinct):
        raise ValueError(f"--test-sites {count}: choose between 1 and {len(distinct) - 1} of the {len(distinct)} "
                         f"{'sites' if by == 'site' else 'registered domains'}")
    return sorted(random.Random(seed).sample(distinct, count))


@dataclass(frozen=True)
class Leak:
    """One thing test shares with training, with a task of each side that has it."""

    kind: Literal["site", "registered domain", "task id", "goal"]
    value: str
    train_task: str
    test_task: str

    def line(self) -> str:
        return f"{self.kind} {self.value!r} is in both train ({self.train_task}) and test ({self.test_task})"


class LeakFinder:
    """What test shares with training: built from the test side, then shown every training task in one pass; it
    holds the test side's sites, domains, ids and goal keys only."""

    KINDS = ("site", "registered domain", "task id", "goal")

    def __init__(self, test: Iterable[Task]) -> None:
        self._test: dict[str, dict[str, str]] = {kind: {} for kind in self.KINDS}
        for task in test:
            for kind, value in zip(self.KINDS, _values(task)):
                self._test[kind].setdefault(value, task.id)
        self._found: dict[tuple[str, str], Leak] = {}

    def check(self, task: Task) -> None:
        for kind, value in zip(self.KINDS, _values(task)):
            test_task = self._test[kind].get(value)
            if test_task is not None and value and (kind, value) not in self._found:
                self._found[kind, value] = Leak(kind, value, task.id, test_task)

    def leaks(self) -> list[Leak]:
        return sorted(self._found.values(), key=lambda leak: (self.KINDS.index(leak.kind), leak.value))


def _values(task: Task) -> tuple[str, str, str, str]:
    return task.site, registered_domain_of(task.start_url), task.id, goal_key(task.goal)


def leaks(train: Iterable[Task], test: Iterable[Task]) -> list[Leak]:
    finder = LeakFinder(test)
    for task in train:
        finder.check(task)
    return finder.leaks()
