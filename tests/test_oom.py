"""A Chromium killed by the kernel's out-of-memory killer, for real: the slot's Chromium processes are moved into a
child memory cgroup with a small limit (cgroup v1, as root), the browser process is made the killer's choice
(oom_score_adj 1000), and a page takes memory until the kernel kills it. The task is infra, and its reason says the
out-of-memory killer killed Chromium. Where cgroups cannot be written (not root, no v1 memory controller), the test
says so and is skipped.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import psutil
import pytest

from tests import lab
from webeval.agent.evaluate import run_task
from webeval.agent.environment import Environment
from webeval.agent.loop import Budgets
from webeval.benchmarks.local.site_server import SiteServer
from webeval.judges.verifier import verifier_judge
from webeval.outcomes.record import Outcome
from webeval.policy.base import PolicyTurn, ToolCall
from webeval.runtime.oom import memory_cgroup
from webeval.runtime.slot import Slot
from webeval.tasks import Task

# Small enough that the killer strikes while the page's renderer is still smaller than the browser process's
# score with oom_score_adj 1000 (a share of this limit); large enough for Chromium to run a page at all.
LIMIT_MB = 256


class Waits:
    """A policy that only waits (the page does the rest); with `browser_first`, it first makes Chromium's browser
    process the out-of-memory killer's choice (oom_score_adj 1000; the renderers keep Chromium's 300)."""

    name, model = "waits", None

    def __init__(self, slot: Slot, browser_first: bool) -> None:
        self.slot, self.browser_first = slot, browser_first

    def __call__(self, session, prepared) -> "Waits":
        return self

    async def begin(self, task) -> None:
        pass

    async def end(self) -> None:
        pass

    async def act(self, observation) -> PolicyTurn:
        if observation.step == 1 and self.browser_first:
            browser = psutil.Process(self.slot.browser.browser_pid)
            Path(f"/proc/{browser.pid}/oom_score_adj").write_text("1000")
        return PolicyTurn(calls=[ToolCall.of("computer", action="wait", seconds=2)])


@pytest.fixture
def small_memory_cgroup():
    """A child of this process's memory cgroup, limited to LIMIT_MB; removed afterwards."""
    parent = memory_cgroup(os.getpid())
    if os.geteuid() != 0 or parent is None or not (parent / "memory.limit_in_bytes").exists():
        pytest.skip("needs root and the cgroup v1 memory controller (this machine and CI have both)")
    child = parent / f"webeval-oom-{uuid.uuid4().hex[:8]}"
    try:
        child.mkdir()
        (child / "memory.limit_in_bytes").write_text(str(LIMIT_MB << 20))
    except OSError as exc:
        pytest.skip(f"cannot make a child memory cgroup under {parent}: {exc.strerror}")
    yield child
    for pid in (child / "cgroup.procs").read_text().split():  # anything left goes back to the parent
        try:
            (parent / "cgroup.procs").write_text(pid)
        except OSError:
            pass
    child.rmdir()


def move(pid: int, cgroup: Path) -> None:
    (cgroup / "cgroup.procs").write_text(str(pid))


@pytest.mark.parametrize("victim", ["renderer", "browser"])
async def test_a_chromium_killed_by_the_out_of_memory_killer_is_infra_and_says_so(small_memory_cgroup, tmp_path,
                                                                                   victim):
    with SiteServer({"lab": lab.site}) as server:
        task = Task(id="Lab--hog", site="Lab", goal="Wait.", start_url=server.origin + "/lab/hog")
        slot = Slot(1280, 720)
        try:
            await slot.ready()
            browser = psutil.Process(slot.browser.browser_pid)
            for process in [browser, *browser.children(recursive=True)]:
                move(process.pid, small_memory_cgroup)  # its renderers to come are forked inside it too
            record = await run_task(task, slot, Waits(slot, victim == "browser"), verifier_judge, tmp_path / "run",
                                    environment=Environment(), budgets=Budgets(max_steps=60, task_timeout_s=180))
        finally:
            await slot.close()
    assert record.outcome is Outcome.infra_error and record.kind == victim, record
    gone = {"renderer": "the renderer of the active tab (", "browser": "Chromium died"}[victim]
    assert record.reason.startswith(f"infra[{victim}]: {gone}"), record.reason
    # The killer may strike more than once before the browser's death is seen (a renderer dies with it).
    assert re.search(rf": the kernel's out-of-memory killer killed it \(memory cgroup {small_memory_cgroup.name}, "
                     rf"limit {LIMIT_MB} MB: oom_kill 0 -> [1-9]\d*\)$", record.reason), record.reason
