"""What a suite adds around each episode: where its sites live, what the browser starts with, what state to keep."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from playwright.async_api import Page

from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import InfraError
from webeval.tasks import Task


@dataclass
class Prepared:
    task: Task  # the task as this run sees it (start URL moved to where its site really is)
    cookies: list[dict[str, Any]] = field(default_factory=list)
    read_state: Callable[[], dict[str, Any]] | None = None  # the site's server-side state, kept as evidence
    rewrite_url: Callable[[str], str] = lambda url: url
    proxy: dict[str, str] | None = None  # Playwright's proxy setting for this task's browser context
    page: PageHooks | None = None  # what the suite does on the task's page itself, unseen by the agent


class PageHooks:
    """A suite's own calls on the task's page through Playwright, never seen by the agent: a page that makes up its
    problem when started, a page that ends the episode itself, a page whose state is the evidence."""

    async def start(self, page: Page, task: Task) -> Task:
        """After the start page opened, before the first observation: the task as the agent gets it."""
        return task

    async def ended(self, page: Page) -> bool:
        """After each step: whether the page itself ended the episode (then the loop stops, with no answer)."""
        return False

    async def state(self, page: Page) -> dict[str, Any]:
        """Before the context closes: what of the page the judge needs, merged into the evidence's state."""
        return {}


class Environment:
    """The default: tasks run against their sites as written."""

    def prepare(self, task: Task) -> Prepared:
        return Prepared(task=task)

    def blocked(self, evidence: Evidence) -> InfraError | None:
        """Whether the site kept the agent out (a CAPTCHA, an anti-bot wall): then the episode is infrastructure,
        whatever the agent or a judge would make of it."""
        return None
