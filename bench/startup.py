"""worker_start_s and task_setup_s: a worker's display and browser from nothing, and one task's isolation.

worker_start_s: a fresh Slot (Xvfb, Playwright, headed Chromium) until ready(), then closed; median.
task_setup_s: what run_episode does before the first step: a fresh browser context and placed tab, the task's
cookies, and its start page opened (loaded); median over local tasks, on one warm browser.

    .venv/bin/python -m bench.startup [--starts N] [--setups N] [--json]
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from bench.common import SCREEN, Figure, cli, median
from webeval.agent.loop import open_start_page
from webeval.benchmarks.local import local_population
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.runtime.slot import Slot


async def worker_starts(count: int) -> tuple[list[float], list[dict[str, float]]]:
    times, parts = [], []
    for _ in range(count):
        began = time.monotonic()
        runtime = Slot(*SCREEN, None)
        try:
            await runtime.ready()
            times.append(time.monotonic() - began)
            parts.append({"display_s": round(runtime.display.started_s, 3),
                          "browser_s": round(runtime.browser.launched_s, 3)})
        finally:
            await runtime.close()
    return times, parts


async def task_setups(count: int) -> list[float]:
    _, tasks = local_population()
    times = []
    runtime = await Slot(*SCREEN, None).ready()
    try:
        with SiteServer() as server, tempfile.TemporaryDirectory(prefix="webeval-bench-") as tmp:
            environment = OfflineSites(server)
            warm = await runtime.browser.new_session(Path(tmp))  # the first task of a worker is not the steady state
            await open_start_page(warm, server.origin + "/", 0)
            await warm.close()
            for task in (tasks * 2)[::5][:count]:
                prepared = environment.prepare(task)
                folder = Path(tmp) / task.id
                folder.mkdir(exist_ok=True)
                began = time.monotonic()
                session = await runtime.browser.new_session(folder)
                await session.context.add_cookies(prepared.cookies)
                await open_start_page(session, prepared.task.start_url, 0)
                times.append(time.monotonic() - began)
                await session.close()
    finally:
        await runtime.close()
    return times


async def measure(starts: int = 5, setups: int = 9) -> list[Figure]:
    start_times, parts = await worker_starts(starts)
    setup_times = await task_setups(setups)
    return [
        Figure("worker_start_s", round(median(start_times), 2), 1.5, "s", "<=",
               {"samples_s": [round(t, 2) for t in start_times],
                "display_s": median(p["display_s"] for p in parts), "browser_s": median(p["browser_s"] for p in parts)}),
        Figure("task_setup_s", round(median(setup_times), 3), 0.4, "s", "<=",
               {"samples_s": [round(t, 3) for t in setup_times]}),
    ]


def main() -> None:
    cli(__doc__, lambda starts, setups: asyncio.run(measure(starts, setups)), lambda parser: (
        parser.add_argument("--starts", type=int, default=5), parser.add_argument("--setups", type=int, default=9)))


if __name__ == "__main__":
    main()
