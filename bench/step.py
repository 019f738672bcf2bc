"""step_overhead_ratio and settle_ms: the real agent loop acting out local tasks, beside the bare floor.

A harness step is observe + validate + execute + record: the loop's own `step` time less its `settle` and `policy`
times, on steps whose one action is a click. The floor, taken in the same run on the same screens: an X-display grab
encoded as JPEG (sampled inside the policy's turn, on the screen the step observed) plus one bare PyAutoGUI click.
The grab is the issue's own: PIL's `ImageGrab.grab(xdisplay=...)` (XGetImage). The details also give the floor with
the harness's shared-memory grab (XShmGetImage) instead, and the ratio against it.
settle_ms is the time from an executed action to the observation the policy gets (settle + observe of the next step).
The stale check clicks a page whose request is answered after 300 ms and then redraws; it must be seen redrawn.

    .venv/bin/python -m bench.step [--tasks N] [--stale-trials N] [--json]
"""

from __future__ import annotations

import asyncio
import io
import json
import tempfile
import time
from pathlib import Path

from PIL import Image, ImageGrab

from bench.common import SCREEN, Figure, cli, median, ms
from bench.site import all_sites
from webeval.actions import Observation, parse_call
from webeval.agent.episode import Episode
from webeval.agent.loop import AgentLoop, Budgets
from webeval.benchmarks.local import local_population
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.policy.oracle import OraclePolicy
from webeval.runtime.display import x_client
from webeval.runtime.executor import execute
from webeval.runtime.input import _pyautogui
from webeval.runtime.observe import grab, screenshot_png
from webeval.runtime.slot import Slot


class FloorSampling:
    """The oracle, plus one floor sample (grab + JPEG of the screen just observed) per turn: policy time, excluded."""

    def __init__(self, oracle: OraclePolicy, display, samples: list[float], shm_samples: list[float]) -> None:
        self.oracle, self.display, self.samples, self.shm_samples = oracle, display, samples, shm_samples
        self.name, self.model = oracle.name, None

    async def begin(self, task) -> None:
        await self.oracle.begin(task)

    async def end(self) -> None:
        await self.oracle.end()

    async def act(self, observation: Observation):
        display = self.display
        def pil_grab():
            with x_client(display.env()):
                return ImageGrab.grab(bbox=(0, 0, display.width, display.height), xdisplay=display.name)

        for capture, samples in ((pil_grab, self.samples),
                                 (lambda: grab(display), self.shm_samples)):
            began = time.perf_counter()
            capture().save(io.BytesIO(), format="JPEG")
            samples.append(time.perf_counter() - began)
        return await self.oracle.act(observation)


def bare_clicks(runtime: Slot, count: int) -> list[float]:
    gui = _pyautogui(runtime.device._connect(), runtime.display.env())
    times = []
    for index in range(count):
        began = time.perf_counter()
        gui.click(900 + 40 * index, 400)
        times.append(time.perf_counter() - began)
    return times


def is_click(step) -> bool:
    return len(step.actions) == 1 and step.actions[0].get("action") == "click"


async def stale_checks(runtime: Slot, server: SiteServer, folder: Path, trials: int) -> int:
    """How many observations after the slow page's click were taken before its late redraw (must be 0)."""
    stale = 0
    action = parse_call("computer", json.dumps({"action": "click", "x": 150, "y": 50}), SCREEN)
    for _ in range(trials):
        session = await runtime.browser.new_session(folder)
        try:
            await session.goto(server.origin + "/bench/slow")
            await session.settle()
            await execute(action, session, runtime.device)
            await session.settle()
            png = await screenshot_png(runtime.display)
            blue = Image.open(io.BytesIO(png)).convert("RGB").getpixel((1000, 600)) == (0, 0, 255)
            text = await session.active.locator("#out").text_content()
            stale += not (blue and text == "after")
        finally:
            await session.close()
    return stale


async def measure(task_count: int = 12, stale_trials: int = 5) -> list[Figure]:
    _, tasks = local_population()
    # The same number of tasks from each site, in a fixed order.
    by_site: dict[str, list] = {}
    for task in tasks:
        by_site.setdefault(task.site, []).append(task)
    chosen = [t for i in range(9) for site in sorted(by_site) for t in by_site[site][i:i + 1]][:task_count]
    runtime = await Slot(*SCREEN, None).ready()
    floor_grab: list[float] = []
    floor_shm: list[float] = []
    floor_click: list[float] = []
    steps = []
    failed = []
    try:
        with SiteServer(all_sites()) as server, tempfile.TemporaryDirectory(prefix="webeval-bench-") as tmp:
            environment = OfflineSites(server)
            for task in chosen:
                prepared = environment.prepare(task)
                folder = Path(tmp) / task.id
                folder.mkdir()
                session = await runtime.browser.new_session(folder)
                try:
                    await session.context.add_cookies(prepared.cookies)

                    policy = FloorSampling(OraclePolicy(session.locate, prepared.rewrite_url), runtime.display, floor_grab,
                                           floor_shm)
                    episode = await AgentLoop(session, runtime.device, policy, Budgets()).run(prepared.task, Episode(prepared.task.id, folder))
                    if episode.infra or episode.failure_class:
                        failed.append(f"{task.id}: {episode.infra or episode.reason}")
                    steps.append(episode.steps)
                    await session.goto(server.origin + "/bench/blank")
                    floor_click += bare_clicks(runtime, 5)
                finally:
                    await session.close()
            stale = await stale_checks(runtime, server, Path(tmp), stale_trials)
    finally:
        await runtime.close()
    overhead = [s.timings["step"] - s.timings["settle"] - s.timings["policy"]
                for episode in steps for s in episode if is_click(s) and "execute" in s.timings]
    observe = [s.timings["observe"] for episode in steps for s in episode if is_click(s)]
    execute_s = [s.timings["execute"] for episode in steps for s in episode if is_click(s) and "execute" in s.timings]
    # settle + observe of every step that follows an executed action (the first step follows the start page)
    after_action = [s.timings["settle"] + s.timings["observe"] for episode in steps for s in episode[1:]]
    settle_only = [s.timings["settle"] for episode in steps for s in episode[1:]]
    floor = median(floor_grab) + median(floor_click)
    step_ratio = Figure("step_overhead_ratio", round(median(overhead) / floor, 2), 1.5, "x", "<=", {
        "harness_step_ms": ms(median(overhead)), "observe_ms": ms(median(observe)), "execute_ms": ms(median(execute_s)),
        "floor_ms": ms(floor), "floor_grab_jpeg_ms": ms(median(floor_grab)), "floor_click_ms": ms(median(floor_click)),
        "floor_shm_grab_jpeg_ms": ms(median(floor_shm)),
        "ratio_to_shm_floor": round(median(overhead) / (median(floor_shm) + median(floor_click)), 2),
        "click_steps": len(overhead), "tasks": len(chosen), "failed_tasks": failed})
    settle = Figure("settle_ms", ms(median(after_action)) if stale == 0 else None, 150, "ms", "<=", {
        "settle_only_ms": ms(median(settle_only)), "p90_ms": ms(sorted(after_action)[int(0.9 * len(after_action))]),
        "steps": len(after_action), "stale_observations": stale, "stale_trials": stale_trials})
    return [step_ratio, settle]


def main() -> None:
    cli(__doc__, lambda tasks, stale_trials: asyncio.run(measure(tasks, stale_trials)), lambda parser: (
        parser.add_argument("--tasks", type=int, default=12), parser.add_argument("--stale-trials", type=int, default=5)))


if __name__ == "__main__":
    main()
