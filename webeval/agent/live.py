"""Live websites as a suite environment: start URLs moved by a site map, a proxy per site, bot walls counted."""

from __future__ import annotations

from typing import Iterable

from webeval.agent.environment import Environment, Prepared
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import InfraError
from webeval.runtime.sites import SiteProxy, blocked_page
from webeval.tasks import Task

ALL_SITES = "*"


class LiveSites(Environment):
    """`site_map` moves every task of a site to another start URL (a mirror, or an offline copy in tests)."""

    def __init__(self, site_map: dict[str, str] | None = None, proxies: dict[str, SiteProxy] | None = None,
                 origins: dict[str, str] | None = None, block_budget: int = 3) -> None:
        self.block_budget = block_budget
        self.site_map = site_map or {}
        self.proxies = proxies or {}
        self.origins = origins or {}  # site -> the start URL its tasks are written with, for rewriting links

    def start_url(self, task: Task) -> str:
        return self.site_map.get(task.site, task.start_url)

    def proxy(self, site: str) -> SiteProxy | None:
        return self.proxies.get(site) or self.proxies.get(ALL_SITES)

    def rewrite(self, url: str) -> str:
        for site, target in self.site_map.items():
            origin = self.origins.get(site)
            if origin and url.startswith(origin):
                return target + url[len(origin):]
        return url

    def prepare(self, task: Task) -> Prepared:
        moved = task.model_copy(update={"start_url": self.start_url(task)}) if task.site in self.site_map else task
        prepared = Prepared(task=moved, rewrite_url=self.rewrite)
        proxy = self.proxy(task.site)
        if proxy is not None:
            prepared.proxy = proxy.playwright()
        return prepared


    def blocked(self, evidence: Evidence) -> InfraError | None:
        why = blocked_steps(evidence.titles, evidence.urls, self.block_budget)
        return InfraError("site_blocked", why) if why else None


def blocked_steps(titles: Iterable[str], urls: Iterable[str], budget: int) -> str | None:
    """Why an episode was blocked: `budget` observations in a row were a CAPTCHA or anti-bot page; else None."""
    run, why = 0, None
    for title, url in zip(titles, urls):
        reason = blocked_page(title, url)
        run = run + 1 if reason else 0
        if reason:
            why = reason
        if run >= budget:
            return f"{why}, {run} steps in a row (budget {budget})"
    return None
