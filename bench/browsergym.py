"""miniwob_step_vs_browsergym and miniwob_reset_vs_browsergym: webeval and BrowserGym 0.14 side by side, on the same
MiniWoB++ tasks, seeds and scripted actions, in one run.

Both serve the `miniwob` package's pages from one local server. BrowserGym runs in its own virtual environment
(.tools/browsergym, installed by `make bench`: it pins Playwright 1.44), headless as it is by default, on Debian's
Chromium through a symlink where Playwright 1.44 looks for its own build. Each task's page seed is the one BrowserGym
derives from the task seed, so both pages pose the same problem (the utterances are compared); webeval's oracle
makes the solution on its page and BrowserGym acts the same steps as its own actions (bench/browsergym_driver.py).

- A step: BrowserGym's `env.step` (the action, its waits, the observation); webeval's action, settling and next
  observation (from the end of one policy turn to the start of the next, or to the episode's end): the policy's own
  time is left out on both sides.
- A reset: BrowserGym's `env.reset` (it launches a browser per episode); webeval's time from a fresh browser context
  to the first observation, on a worker's running browser.
- BrowserGym runs each task twice: with its default settings (the task's slow_mo of 100 ms, 0.5 s before each
  observation) and with zero delays (slow_mo 0, pre_observation_delay 0). Task after task, webeval and both settings
  take turns, so that a machine whose load changes meets all three alike. The first task runs once more before the
  others: a warm-up of each side, not measured.

    .venv/bin/python -m bench.browsergym [--tasks N] [--seeds 0,1] [--json]
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import ROOT, SCREEN, Figure, cli, median, ms
from webeval.agent.episode import Episode
from webeval.agent.loop import AgentLoop, Budgets
from webeval.benchmarks.miniwob import catalogue
from webeval.benchmarks.miniwob.page import MiniwobSites, STATE_KEY
from webeval.benchmarks.miniwob.server import PageServer
from webeval.benchmarks.miniwob.solutions import SOLVERS
from webeval.policy.oracle import OraclePolicy
from webeval.runtime.browser import find_chromium
from webeval.runtime.slot import Slot

VENV = ROOT / ".tools" / "browsergym"
DRIVER = ROOT / "bench" / "browsergym_driver.py"
# Solutions by plain selectors (BrowserGym's page has no marks of ours), one of each kind of action.
TASKS = ["click-button", "click-checkboxes", "enter-text", "login-user", "click-tab", "use-spinner", "drag-box",
         "enter-date", "click-collapsible", "click-widget"]
SETTINGS = {"default": {}, "zero": {"slow_mo": 0, "pre_observation_delay": 0}}


class Unavailable(Exception):
    """BrowserGym cannot run here; the message says why in one line."""


def page_seed(seed: int) -> int:
    """The seed BrowserGym's MiniWoB++ task gives the page for a task seed (its first draw from its generator)."""
    return int(np.random.RandomState(seed).randint(0, 1000000))


def browsergym_env() -> dict[str, str]:
    """The environment for BrowserGym's interpreter, Debian's Chromium linked where Playwright 1.44 looks."""
    python = VENV / "bin" / "python"
    pins = sorted(VENV.glob("lib/python*/site-packages/playwright/driver/package/browsers.json"))
    if not python.exists() or not pins:
        raise Unavailable(f"BrowserGym is not installed in {VENV} (`make bench` installs it)")
    revision = next(b["revision"] for b in json.loads(pins[0].read_text())["browsers"] if b["name"] == "chromium")
    chromium = find_chromium()
    if chromium is None:
        raise Unavailable("no Chromium on this machine for BrowserGym to launch")
    browsers = VENV / "browsers"
    link = browsers / f"chromium-{revision}" / "chrome-linux" / "chrome"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink() or os.readlink(link) != chromium:
        link.unlink(missing_ok=True)
        link.symlink_to(chromium)
    return {**os.environ, "PLAYWRIGHT_BROWSERS_PATH": str(browsers)}


class Timed:
    """The oracle, with the moments each of its turns began and ended, and the solution it was given."""

    def __init__(self, oracle: OraclePolicy) -> None:
        self.oracle, self.name, self.model = oracle, oracle.name, None
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.solution: list[dict] = []

    async def begin(self, task) -> None:
        self.solution = [step.model_dump(exclude_none=True) for step in task.solution or []]
        await self.oracle.begin(task)

    async def end(self) -> None:
        await self.oracle.end()

    async def act(self, observation):
        self.starts.append(time.perf_counter())
        turn = await self.oracle.act(observation)
        self.ends.append(time.perf_counter())
        return turn


async def one_episode(runtime: Slot, sites: MiniwobSites, name: str, seed: int, folder: Path) -> dict:
    task = catalogue.tasks([name], [seed])[0]
    prepared = sites.prepare(task)
    began = time.perf_counter()
    session = await runtime.browser.new_session(folder)
    try:
        policy = Timed(OraclePolicy(session.locate))
        loop = AgentLoop(session, runtime.input_for(session), policy, Budgets(), hooks=prepared.page,
                         observer=runtime.observer_for(session))
        episode = await loop.run(prepared.task, Episode(task.id, folder))
        ended = time.perf_counter()
        page = (await prepared.page.state(session.require_active()))[STATE_KEY]
    finally:
        await session.close()
    steps = [start - end for start, end in zip(policy.starts[1:], policy.ends)] + [ended - policy.ends[-1]]
    return {"name": name, "seed": seed, "goal": episode.goal, "reset_s": policy.starts[0] - began, "steps_s": steps,
            "done": page.get("done"), "reward": page.get("raw_reward"), "solution": policy.solution,
            "problem": episode.reason or (episode.infra and str(episode.infra))}


class Driver:
    """BrowserGym's interpreter running bench/browsergym_driver.py: one task per request, answered in turn."""

    def __init__(self, env: dict[str, str], miniwob_url: str, timeout_s: float) -> None:
        self.miniwob_url = miniwob_url
        self.timeout_s = timeout_s
        # Isolated (-I): the driver's folder, which holds this module, must not shadow the `browsergym` package.
        self.proc = subprocess.Popen([str(VENV / "bin" / "python"), "-I", str(DRIVER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)

    def _ask(self, request: dict) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(10)
            last = (self.proc.stderr.read().strip().splitlines() or ["no output"])[-1]
            raise Unavailable(f"BrowserGym did not run (exit {self.proc.returncode}): {last[:300]}")
        return json.loads(line)

    async def run(self, setting: str, ours: dict) -> dict:
        request = {"setting": setting, "options": SETTINGS[setting], "name": ours["name"],
                   "seed": ours["task_seed"], "steps": ours["solution"], "miniwob_url": self.miniwob_url}
        try:
            return await asyncio.wait_for(asyncio.to_thread(self._ask, request), self.timeout_s)
        except TimeoutError:
            raise Unavailable(f"BrowserGym took longer than {self.timeout_s:.0f} s over one task") from None

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


async def side_by_side(server: PageServer, chosen: list[tuple[str, int]], env: dict[str, str]
                       ) -> tuple[list[dict], list[dict]]:
    """Task after task, webeval then BrowserGym in each setting, so that both meet the machine in the same state.
    The first task is run once more before: a warm-up of each side, not measured."""
    runtime = await Slot(*SCREEN, None).ready()
    sites = MiniwobSites(server, SOLVERS)
    driver = Driver(env, f"{server.origin}/miniwob/", timeout_s=120)
    ours: list[dict] = []
    theirs: list[dict] = []
    try:
        with tempfile.TemporaryDirectory(prefix="webeval-bench-") as tmp:
            for index, (name, seed) in enumerate([chosen[0], *chosen]):
                folder = Path(tmp) / str(index)
                folder.mkdir()
                episode = await one_episode(runtime, sites, name, page_seed(seed), folder)
                episode["task_seed"] = seed
                answers = [await driver.run(setting, episode) for setting in SETTINGS]
                if index:
                    ours.append(episode)
                    theirs += answers
    finally:
        driver.close()
        await runtime.close()
    return ours, theirs


def figures(ours: list[dict], theirs: list[dict]) -> list[Figure]:
    by_setting = {name: [r for r in theirs if r["setting"] == name and "failed" not in r] for name in SETTINGS}
    our_step = median(s for r in ours for s in r["steps_s"])
    our_reset = median(r["reset_s"] for r in ours)
    step = {name: median(s for r in rows for s in r["steps_s"]) for name, rows in by_setting.items()}
    reset = {name: median(r["reset_s"] for r in rows) for name, rows in by_setting.items()}
    goals = {(r["name"], r["task_seed"]): r["goal"] for r in ours}
    same = sum(goals.get((r["name"], r["seed"])) == r["goal"] for r in by_setting["default"])
    common = {"tasks": [f"{r['name']}--{r['task_seed']} (page seed {r['seed']})" for r in ours],
              "same_utterance": f"{same}/{len(ours)}",
              "webeval_solved": sum(bool(r["done"]) and (r["reward"] or 0) > 0 for r in ours),
              "browsergym_solved": {name: sum(r.get("reward", 0) > 0 for r in rows)
                                    for name, rows in by_setting.items()},
              "browsergym_failed": [r for r in theirs if "failed" in r],
              "browsergym_action_errors": sorted({e for r in theirs for e in r.get("errors", [])})[:5]}
    return [
        Figure("miniwob_step_vs_browsergym", round(our_step / step["default"], 3), 0.35, "x", "<=", {
            "webeval_step_ms": ms(our_step), "browsergym_step_ms": ms(step["default"]),
            "browsergym_zero_delay_step_ms": ms(step["zero"]), "ratio_to_zero_delay": round(our_step / step["zero"], 3),
            "steps": {"webeval": sum(len(r["steps_s"]) for r in ours),
                      **{name: sum(len(r["steps_s"]) for r in rows) for name, rows in by_setting.items()}},
            **common}),
        Figure("miniwob_reset_vs_browsergym", round(our_reset / reset["default"], 3), 0.2, "x", "<=", {
            "webeval_first_observation_s": round(our_reset, 3), "browsergym_reset_s": round(reset["default"], 3),
            "browsergym_zero_delay_reset_s": round(reset["zero"], 3),
            "ratio_to_zero_delay": round(our_reset / reset["zero"], 3), **common}),
    ]


def measure(tasks: int = len(TASKS), seeds: str = "0") -> list[Figure]:
    chosen = [(name, seed) for name in TASKS[:tasks] for seed in catalogue.parse_seeds(seeds)]
    try:
        env = browsergym_env()
        with PageServer(catalogue.package_dir() / "html") as server:
            ours, theirs = asyncio.run(side_by_side(server, chosen, env))
    except Unavailable as exc:
        print(f"bench: browsergym: {exc}; the side-by-side figures are not measured", flush=True)
        return []
    return figures(ours, theirs)


def main() -> None:
    cli(__doc__, measure, lambda parser: (
        parser.add_argument("--tasks", type=int, default=len(TASKS), help=f"the first N of {', '.join(TASKS)}"),
        parser.add_argument("--seeds", default="0", help="task seeds: 0, 0,1 or 0-2 (default 0)")))


if __name__ == "__main__":
    main()
