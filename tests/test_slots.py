"""Several slots in one process: each its own Xvfb, Chromium and X input connection, driven at once through the
episode API, and a Chromium killed under one slot is that slot's alone."""

from __future__ import annotations

import asyncio
import os
import signal
import time

from webeval import Slot, oracle, run_task
from webeval.benchmarks.local import local_population
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.judges.verifier import verifier_judge
from webeval.outcomes.record import Outcome
from webeval.outcomes.rundir import RunDir
from webeval.runtime.input import VisibleInput

SLOTS = 4


class KillsItsBrowser:
    """The oracle, but at the episode's second step its slot's Chromium is SIGKILLed: a real death mid-episode."""

    def __init__(self, policy, slot: Slot) -> None:
        self.policy, self.slot = policy, slot
        self.name, self.model = policy.name, None
        self.killed: int | None = None

    async def begin(self, task) -> None:
        await self.policy.begin(task)

    async def end(self) -> None:
        await self.policy.end()

    async def act(self, observation):
        if observation.step == 2 and self.killed is None:
            self.killed = self.slot.browser.browser_pid
            os.kill(self.killed, signal.SIGKILL)
        return await self.policy.act(observation)


def twelve_tasks():
    _, tasks = local_population()
    return [task for task in tasks if len(task.solution or ()) >= 3][::3][:12]


async def test_four_slots_run_twelve_tasks_at_once_and_a_killed_chromium_is_its_slots_alone(tmp_path):
    tasks = twelve_tasks()
    assert len(tasks) == 12
    victim = tasks[1]  # the second task taken: its slot has others to run after the kill
    run_dir = RunDir(tmp_path / "run")
    queue: asyncio.Queue = asyncio.Queue()
    for task in tasks:
        queue.put_nowait(task)
    records, running, overlap = {}, set(), [0]
    killer: list[KillsItsBrowser] = []

    async def work(slot: Slot) -> None:
        def policy(session, prepared):
            made = oracle(session, prepared)
            if prepared.task.id == victim.id:
                killer.append(KillsItsBrowser(made, slot))
                return killer[-1]
            return made

        while not queue.empty():
            task = queue.get_nowait()
            running.add(task.id)
            overlap[0] = max(overlap[0], len(running))
            records[task.id] = (slot, await run_task(task, slot, policy, verifier_judge, run_dir,
                                                     environment=environment))
            running.discard(task.id)

    with SiteServer() as server:
        environment = OfflineSites(server)
        slots = [Slot(1280, 720) for _ in range(SLOTS)]
        try:
            await asyncio.gather(*(slot.ready() for slot in slots))
            started = {id(slot): slot.browser.browser_pid for slot in slots}
            assert len({slot.display.name for slot in slots}) == SLOTS  # a display each
            assert all(isinstance(slot.device, VisibleInput) for slot in slots)  # input through X, never CDP
            began = time.monotonic()
            await asyncio.wait_for(asyncio.gather(*(work(slot) for slot in slots)), 600)
            took = time.monotonic() - began
            hit = records[victim.id][0]
            assert killer and killer[0].killed == started[id(hit)]
            again = await run_task(victim, hit, oracle, verifier_judge, run_dir, environment=environment)
            after = {id(slot): slot.browser.browser_pid for slot in slots}
        finally:
            await asyncio.gather(*(slot.close() for slot in slots))

    victim_record = records[victim.id][1]
    assert victim_record.outcome is Outcome.infra_error and victim_record.kind == "browser", victim_record.reason
    others = {task_id: record for task_id, (_, record) in records.items() if task_id != victim.id}
    assert {task_id: record.outcome for task_id, record in others.items()} == dict.fromkeys(others, Outcome.passed), \
        {task_id: record.reason for task_id, record in others.items() if record.outcome is not Outcome.passed}
    assert again.outcome is Outcome.passed, again.reason  # the slot started again and runs tasks as before
    assert hit.restarts == 1 and after[id(hit)] != started[id(hit)]
    for slot in slots:
        if slot is not hit:  # the others never noticed: the same Chromium throughout, never started again
            assert slot.restarts == 0 and after[id(slot)] == started[id(slot)]
    assert overlap[0] == SLOTS, overlap  # the episodes ran at once, not in turn
    assert sum(1 for _ in run_dir.records()) == len(tasks) + 1
    print(f"12 tasks on {SLOTS} slots in {took:.1f} s")


async def test_an_attempt_broken_by_infrastructure_is_run_again_and_both_are_on_record(tmp_path):
    """--infra-retries: the first attempt's Chromium is killed; the retried attempt runs in a browser started again."""
    task = twelve_tasks()[0]
    run_dir = RunDir(tmp_path / "run")
    made: list[KillsItsBrowser] = []
    with SiteServer() as server:
        async with Slot(1280, 720) as slot:
            def policy(session, prepared):
                made.append(KillsItsBrowser(oracle(session, prepared), slot) if not made else oracle(session, prepared))
                return made[-1]

            record = await run_task(task, slot, policy, verifier_judge, run_dir, environment=OfflineSites(server),
                                    infra_retries=1)
    assert record.outcome is Outcome.passed and record.attempt == 2, record.reason
    first, final = run_dir.records()
    assert (first.outcome, first.kind, first.attempt) == (Outcome.infra_error, "browser", 1)
    assert first.reason.endswith("(retried)")
    assert final.model_copy(update={"finished_at": ""}) == record


def test_the_scripts_of_docs_api_md_run_as_written(tmp_path):
    """The episode API's example, taken from the page and run in a fresh interpreter, prints its three outcomes."""
    import re
    import subprocess
    import sys

    from tests.conftest import ROOT

    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    script = re.findall(r"```python\n(.*?)```", page, re.DOTALL)[0]
    assert len(script.strip().splitlines()) <= 15
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and all(line.split()[1] == "passed" for line in lines), done.stdout
    assert lines[0].startswith("Dictionary--0 passed")


async def test_slots_started_behind_the_first_are_free_as_they_come_and_one_that_cannot_start_is_left_out(caplog):
    from webeval.runtime.pool import SlotPool

    pool = SlotPool([Slot(640, 480), Slot(640, 480), Slot(640, 480), Slot(640, 480, "/nonexistent/chromium")])
    try:
        began = time.monotonic()
        await pool.start(at_once=2, all_ready=False)
        assert pool.free() == 2  # the first two: episodes may begin while the others start
        first = await pool.take()
        await asyncio.wait_for(pool._behind, 60)
        assert pool.free() == 2 and time.monotonic() - began < 60  # the third came free; the fourth never will
        assert first.browser is not None and first.browser.alive
        assert pool.slots[3].browser is None or not pool.slots[3].browser.alive
        assert any("slot-3 did not start" in message and "going on with the other slots" in message
                   for message in caplog.messages), caplog.messages
    finally:
        await pool.close()
    assert all(slot.browser is None or not slot.browser.alive for slot in pool.slots)
