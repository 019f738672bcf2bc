"""A MiniWoB++ episode on its page, as the package runs one: the seed set, the episode started, the utterance as the
goal, the page's own timer as the time limit, the end when the page says so, and its reward kept as evidence."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urldefrag

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from webeval.agent.environment import Environment, PageHooks, Prepared
from webeval.benchmarks.miniwob.catalogue import PLACEHOLDER_ORIGIN
from webeval.benchmarks.miniwob.server import PageServer
from webeval.benchmarks.miniwob.solutions import Solver
from webeval.outcomes.record import InfraError
from webeval.tasks import Task

STATE_KEY = "miniwob"  # the evidence's state holds the page's reward under this key
DATA_MODE = "train"  # the package's default data mode, set before every episode as it does
READY_S = 10.0
# One round trip: the page's onload has made the cover that startEpisodeReal hides (wait for it if not), then the
# seed, the package's data mode and the episode; the page is ready when WOB_TASK_READY says so (FlightWoB's wait for
# their site's frame). Returns the utterance.
START = """async ([seed, mode]) => {
  const loaded = () => typeof core !== 'undefined' && core.cover_div != null;
  if (!loaded()) await new Promise(resolve => window.addEventListener('load', resolve, {once: true}));
  Math.seedrandom(seed);
  core.setDataMode(mode);
  core.startEpisodeReal();
  while (WOB_TASK_READY !== true) await new Promise(resolve => setTimeout(resolve, 20));
  return core.getUtterance();
}"""
ENDED = "() => typeof WOB_DONE_GLOBAL !== 'undefined' && WOB_DONE_GLOBAL === true"
REWARD = """() => typeof core === 'undefined' ? null : {
  done: WOB_DONE_GLOBAL, reward: WOB_REWARD_GLOBAL, raw_reward: WOB_RAW_REWARD_GLOBAL, reason: WOB_REWARD_REASON,
  episodes: WOB_EPISODE_ID, time_limit_ms: core.EPISODE_MAX_TIME}"""


def seed_of(task: Task) -> int:
    for tag in task.tags:
        if tag.startswith("seed="):
            return int(tag.removeprefix("seed="))
    raise ValueError(f"task {task.id} has no seed= tag: it was not made by webeval.benchmarks.miniwob")


class MiniwobPage(PageHooks):
    def __init__(self, seed: int, page_url: str, solver: Solver | None = None) -> None:
        self.seed = seed
        self.page_url = page_url
        self.solver = solver

    async def start(self, page: Page, task: Task) -> Task:
        try:
            said = await asyncio.wait_for(page.evaluate(START, [self.seed, DATA_MODE]), READY_S)
        except (PlaywrightError, TimeoutError) as exc:
            why = str(exc).splitlines()[0] if str(exc) else "no answer"
            raise InfraError("site", f"the MiniWoB++ page {page.url} did not start an episode within "
                                     f"{READY_S:g} s: {why}") from None
        if isinstance(said, dict):  # FlightWoB's: the utterance with its fields
            said = said.get("utterance", "")
        goal = " ".join(str(said).split()) or task.goal
        update: dict[str, Any] = {"goal": goal}
        if self.solver is not None:
            update["solution"] = await self.solver(page, goal)
        return task.model_copy(update=update)

    async def ended(self, page: Page) -> bool:
        try:
            return bool(await page.evaluate(ENDED))
        except PlaywrightError:  # a page between two documents (the agent navigated): not the episode's end
            return False

    async def state(self, page: Page) -> dict[str, Any]:
        on_page = urldefrag(page.url).url == self.page_url
        try:
            reward = await page.evaluate(REWARD) if on_page else None
        except PlaywrightError:
            reward = None
        return {STATE_KEY: {"url": page.url, "task_page": self.page_url, "on_task_page": on_page,
                            **(reward or {"done": False})}}


class MiniwobSites(Environment):
    """The package's pages on our server; with `solvers`, each task that has one gets its solution at the start."""

    def __init__(self, server: PageServer, solvers: dict[str, Solver] | None = None) -> None:
        self.server = server
        self.solvers = solvers

    def prepare(self, task: Task) -> Prepared:
        moved = task.with_origin(PLACEHOLDER_ORIGIN, self.server.origin)
        solver = self.solvers.get(task.site) if self.solvers is not None else None
        return Prepared(task=moved, page=MiniwobPage(seed_of(task), moved.start_url, solver))
