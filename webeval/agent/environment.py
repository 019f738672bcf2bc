"""What a suite adds around each episode: where its sites live, what the browser starts with, what state to keep."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from webeval.tasks import Task


@dataclass
class Prepared:
    task: Task  # the task as this run sees it (start URL moved to where its site really is)
    cookies: list[dict[str, Any]] = field(default_factory=list)
    read_state: Callable[[], dict[str, Any]] | None = None  # the site's server-side state, kept as evidence
    rewrite_url: Callable[[str], str] = lambda url: url
    proxy: dict[str, str] | None = None  # Playwright's proxy setting for this task's browser context


class Environment:
    """The default: tasks run against their sites as written."""

    def prepare(self, task: Task) -> Prepared:
        return Prepared(task=task)
