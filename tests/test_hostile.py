"""Hostile pages, made to happen for real: every page of fixtures/sites/hostile is one task of one run, one after the
other on one worker (one browser), acted on by a scripted model through the OpenAI-compatible stub.

For each page the task ends within its budgets with the outcome docs/reliability.md gives it, the next task starts
clean (its first screenshot shows its start page's marker, with one tab), and nothing hangs. The script also takes the
forbidden ways out (file: and chrome: links, redirects, typed addresses, `navigate`) and reads the refusals back.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Callable

import psutil
import pytest
from PIL import Image

from fixtures.openai_stub import OpenAIStub, Reply
from fixtures.sites.hostile import DONE, ENTER, MARKER_RGB, PAGES, slot
from tests.conftest import renderers
from tests.runs import Run, browser_main_pids, records, wait_for
from tests.scripted import Seen, click, finish, focus_tab, key, navigate, seen, type_text, wait

# Two real-browser suites run in subprocesses here: one worker takes them in turn (`--dist loadgroup`, make test),
# so they never compete with each other for the two cores (docs/reliability.md, "Dialogs are answered in the page").
pytestmark = pytest.mark.xdist_group("browser-suites")

MAX_STEPS, STEP_TIMEOUT, TASK_TIMEOUT = 20, 30, 90
BUDGETS = ["--max-steps", str(MAX_STEPS), "--step-timeout", str(STEP_TIMEOUT), "--task-timeout", str(TASK_TIMEOUT),
           "--settle-cap", "1", "--download-max-mb", "1"]


def _chain(seen_now: Seen) -> str:
    return seen_now.url.split("/hostile/")[0] + "/hostile/chain/0"


# What the model does on each page after entering it (step 2 on), before it presses Done until the page says so.
MIDDLE: dict[str, list[Callable[[Seen], Reply]]] = {
    "dialogs": [lambda s: wait(1)],
    "popups": [lambda s: focus_tab(0)],
    "links": [*(lambda s, i=i: click(slot(i)) for i in range(5)), lambda s: navigate(back=True),
              lambda s: click(slot(5)), lambda s: navigate(back=True), lambda s: navigate("file:///etc/passwd"),
              lambda s: key("ctrl", "l"), lambda s: type_text("chrome://version\n"),
              lambda s: key("ctrl", "l"), lambda s: type_text("chrome://settings\n")],
    "redirects": [lambda s: click(slot(0)), lambda s: navigate(back=True), lambda s: navigate(_chain(s)),
                  lambda s: navigate(back=True)],
    "fullscreen": [lambda s: click(slot(0))],
    "focus": [lambda s: focus_tab(0), lambda s: click(slot(0))],
    "downloads": [lambda s: click(slot(0)), lambda s: click(slot(1)), lambda s: wait(1)],
}


def page_of(goal: str) -> str:
    return goal.removeprefix("Hostile page ").split(":", 1)[0]


class Script:
    """The model: step 1 enters the page, then the page's MIDDLE, then Done until the title says so; on the crash page
    it kills the tab's renderer and waits."""

    def __init__(self) -> None:
        self.seen: dict[str, list[Seen]] = {}
        self.job: Run | None = None

    def __call__(self, request: dict) -> Reply:
        now = seen(request)
        page = page_of(now.goal)
        self.seen.setdefault(page, []).append(now)
        if page == "loading-start":
            return finish() if now.title.startswith("Done") else click(DONE)
        if now.step == 1:
            return click(ENTER)
        if page == "crash":
            _kill_renderers(self.job)
            return wait(1)
        middle = MIDDLE.get(page, [])
        if now.step - 2 < len(middle):
            return middle[now.step - 2](now)
        return finish() if now.title.startswith("Done") else click(DONE)

    def lasts(self, page: str) -> str:
        return "\n".join(s.last for s in self.seen.get(page, []))


def _kill_renderers(job: Run | None) -> None:
    """SIGKILL every renderer of the run's browser: the active tab's page crashes, the browser lives on."""
    for pid in browser_main_pids(job) if job is not None else []:
        for process in renderers(pid):
            with contextlib.suppress(psutil.Error):
                process.send_signal(signal.SIGKILL)


def _pixel(path: Path, x: int, y: int) -> tuple[int, int, int]:
    with Image.open(path) as image:
        return image.convert("RGB").getpixel((x, y))


def test_every_hostile_page_ends_in_its_outcome_and_the_next_task_starts_clean(tmp_path):
    run_dir = tmp_path / "run"
    script = Script()
    with OpenAIStub(script) as stub:
        job = Run(["-p", "no:xdist", "fixtures/suites/hostile", "--run-dir", str(run_dir), "--policy", "openai",
                   "--policy-base-url", stub.base_url, "--policy-model", "stub-model", "--policy-retries", "0",
                   *BUDGETS], run_dir)
        script.job = job
        job.wait(timeout=600)
    wait_for(lambda: not job.processes(), timeout=30, what="every process of the run to end")
    found = {r["task_id"].removeprefix("Hostile--"): r for r in records(run_dir)}
    assert sorted(found) == sorted([*PAGES, "loading-start"]), job.output
    outcomes = {page: r["outcome"] + (f"[{r['kind']}]" if r.get("kind") else "") for page, r in found.items()}
    expected = {page: "passed" for page in found} | {"crash": "infra_error[renderer]"}
    assert outcomes == expected, job.output
    for page, record in found.items():
        assert record["steps"] <= MAX_STEPS and record["duration_s"] < TASK_TIMEOUT, (page, record)
        first = script.seen[page][0]
        assert first.step == 1 and first.tabs.count("[") == 1, (page, first)  # one tab, nothing left over
        shot = run_dir / record["path"] / "step-001.png"
        assert _pixel(shot, 5, 5) == MARKER_RGB, f"{page}: the first screenshot is not of its start page"
    _assert_what_the_model_was_told(script, run_dir, found)


def _assert_what_the_model_was_told(script: Script, run_dir: Path, found: dict[str, dict]) -> None:
    links = script.lasts("links")
    assert "navigate: url 'file:///etc/passwd' is not an http(s) URL" in links
    assert "a link to file:///etc/passwd was refused" in links
    assert "a link to chrome://settings/ was refused" in links
    assert "chrome://version/ was refused: file: and chrome: URLs are blocked" in links
    assert "a window outside the task (chrome://settings/) was closed" in links
    urls = [s.url for page in script.seen for s in script.seen[page]]
    assert not [u for u in urls if u.startswith(("file:", "chrome:"))], urls
    assert "ERR_TOO_MANY_REDIRECTS" in script.lasts("redirects")
    dialogs = [s.last for s in script.seen["dialogs"]]
    assert any("dialog said" in last for last in dialogs) and max(map(len, dialogs)) < 2000, dialogs
    assert "kept from opening more than 10 windows" in script.lasts("popups")
    assert max(s.tabs.count("[") for s in script.seen["popups"]) <= 10
    assert "the page asked to be stayed on (beforeunload) and was left" in script.lasts("beforeunload")
    assert "printing is off" in script.lasts("print")
    downloads = run_dir / found["downloads"]["path"]
    assert (downloads / "downloads" / "small.txt").read_text() == "a small download"
    assert not (downloads / "downloads" / "big.bin").exists()
    assert "the download of big.bin was stopped at" in script.lasts("downloads")
    served = json.loads((downloads / "evidence.json").read_text())["state"]["hostile"]["big_bytes"]
    assert served < 100 << 20, f"{served} bytes of the 1 GB download were sent before it was stopped"
