"""Real episodes through the agent loop: what decides pass and fail, and what stays between tasks."""

from __future__ import annotations

import json

import pytest

from webeval.agent.episode import Episode
from webeval.agent.loop import AgentLoop, Budgets
from webeval.benchmarks.local import local_population
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.judges.verifier import verifier_judge
from webeval.outcomes.record import FailureClass
from webeval.policy.base import PolicyTurn, ToolCall
from webeval.policy.oracle import OraclePolicy

_, TASKS = local_population()
BY_ID = {task.id: task for task in TASKS}


class Scripted:
    """A policy that replies with fixed tool calls, one turn each (the last repeats)."""

    name, model = "scripted", None

    def __init__(self, *turns: list[ToolCall]) -> None:
        self.turns = list(turns)
        self.seen = []

    async def begin(self, task) -> None:
        pass

    async def end(self) -> None:
        pass

    async def act(self, observation) -> PolicyTurn:
        self.seen.append(observation)
        return PolicyTurn(calls=self.turns.pop(0) if len(self.turns) > 1 else self.turns[0])


@pytest.fixture(scope="module")
def sites():
    with SiteServer() as server:
        yield server


async def episode_of(runtime, sites, tmp_path, task_id, policy_for, budgets=Budgets()):
    environment = OfflineSites(sites)
    prepared = environment.prepare(BY_ID[task_id])
    session = await runtime.browser.new_session(tmp_path)
    await session.context.add_cookies(prepared.cookies)
    try:
        policy = policy_for(session, prepared)
        episode = await AgentLoop(session, runtime.device, policy, budgets).run(prepared.task,
                                                                                    Episode(prepared.task.id, tmp_path))
        episode.state = prepared.read_state()
    finally:
        await session.close()
    return episode


def oracle(session, prepared):
    return OraclePolicy(session.locate, prepared.rewrite_url, session.page_ready)


async def test_oracle_solves_a_state_task_and_leaves_a_trajectory(runtime, sites, tmp_path):
    episode = await episode_of(runtime, sites, tmp_path, "Shop--6", oracle)
    verdict = await verifier_judge(BY_ID["Shop--6"], episode.evidence("goal"))
    assert verdict.success, verdict.reason
    lines = (tmp_path / "trajectory.jsonl").read_text().splitlines()
    assert len(lines) == len(episode.steps) >= 10
    first = json.loads(lines[0])
    assert (tmp_path / first["screenshot"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {"observe", "policy", "execute", "settle"} <= set(first["timings"])


async def test_a_wrong_answer_fails_the_verifier_for_that_reason(runtime, sites, tmp_path):
    wrong = Scripted([ToolCall.of("terminate", status="success", answer="Aurora X1")])
    episode = await episode_of(runtime, sites, tmp_path, "Shop--0", lambda s, p: wrong)
    verdict = await verifier_judge(BY_ID["Shop--0"], episode.evidence("goal"))
    assert not verdict.success
    assert "'Aurora X1' matches none of" in verdict.reason


async def test_untouched_state_fails_the_state_checks(runtime, sites, tmp_path):
    lazy = Scripted([ToolCall.of("terminate", status="success", answer="done")])
    episode = await episode_of(runtime, sites, tmp_path, "Shop--6", lambda s, p: lazy)
    verdict = await verifier_judge(BY_ID["Shop--6"], episode.evidence("goal"))
    assert not verdict.success and "shop.cart is" in verdict.reason


async def test_invalid_replies_end_as_invalid_output_after_bounded_attempts(runtime, sites, tmp_path):
    bad = Scripted([ToolCall("computer", '{"action": "click", "x": 5000, "y": 1}')])
    episode = await episode_of(runtime, sites, tmp_path, "Shop--0", lambda s, p: bad, Budgets(max_invalid=3))
    assert episode.failure_class is FailureClass.invalid_output and len(episode.steps) == 3
    # The validation error went back to the model as the next observation's text.
    assert "outside the 1280x720 screenshot" in bad.seen[1].last_result


async def test_step_budget(runtime, sites, tmp_path):
    idle = Scripted([ToolCall.of("computer", action="move", x=10, y=10)])
    episode = await episode_of(runtime, sites, tmp_path, "Shop--0", lambda s, p: idle, Budgets(max_steps=4))
    assert episode.failure_class is FailureClass.step_budget and len(episode.steps) == 4


async def test_closing_the_last_tab_is_the_agents_failure(runtime, sites, tmp_path):
    closer = Scripted([ToolCall.of("tabs", action="close", tab_id=0)])
    episode = await episode_of(runtime, sites, tmp_path, "Shop--0", lambda s, p: closer)
    assert episode.failure_class is FailureClass.closed_last_tab and episode.infra is None


async def test_nothing_leaks_from_one_task_to_the_next(runtime, lab_server, tmp_path):
    first = await runtime.browser.new_session(tmp_path)
    await first.goto(lab_server.origin + "/lab/cookie")
    assert await first.active.locator("#seen").text_content() == "visited=yes"
    await first.new_tab()
    await first.close()
    second = await runtime.browser.new_session(tmp_path)
    try:
        await second.goto(lab_server.origin + "/lab/probe")
        seen = json.loads(await second.active.locator("#out").text_content())
        # History: the new tab's about:blank and this page, nothing of the first task.
        assert seen == {"cookie": "", "storage": None, "history": 2}
        assert len(second.pages) == 1 and len(second.context.pages) == 1
    finally:
        await second.close()


async def test_a_tasks_page_is_its_only_renderer(runtime, sites, tmp_path):
    """A task's context starts one renderer, its page's: no spare kept warm for another site, no renderer for the
    omnibox's popups in a toolbar above the screen (each a process started and closed unused with every task)."""
    from tests.conftest import renderers

    await runtime.ready()
    session = await runtime.browser.new_session(tmp_path)
    try:
        await session.goto(OfflineSites(sites).prepare(BY_ID["Shop--0"]).task.start_url)
        await session.settle()
        started = renderers(runtime.browser.browser_pid)
        assert len(started) == 1, f"{len(started)} renderers for one page"
    finally:
        await session.close()


async def test_a_dead_browser_is_relaunched_before_the_next_task(runtime, tmp_path):
    from tests.conftest import chromium_pids
    import os
    import signal

    for pid in chromium_pids(runtime.display.name):
        os.kill(pid, signal.SIGKILL)
    await runtime.ready()
    assert runtime.browser.alive
    session = await runtime.browser.new_session(tmp_path)
    await session.close()


async def test_an_error_seen_as_the_display_is_killed_is_infra(runtime):
    """The X server closes its connections before its process can be reaped: an error raised in that moment must
    still find the display dead, never pass for a bug of the harness."""
    import os
    import signal

    await runtime.ready()
    os.kill(runtime.display.pid, signal.SIGKILL)
    failure = await runtime.failure()  # at once, as the loop asks when an action raised
    assert failure is not None and failure.kind == "display", failure
    await runtime.ready()  # started again for the tests after this one
    assert runtime.display.alive and runtime.browser.alive


async def test_an_error_raised_as_the_browser_is_killed_under_watched_work_is_infra(runtime, tmp_path):
    """Work the runtime watches may fail on its own before the 0.5 s look finds the browser gone (Playwright raises
    TargetClosedError at once): that error is the browser's death, never a bug of the harness."""
    import os
    import signal

    from tests.conftest import chromium_pids
    from webeval.outcomes.record import InfraError

    await runtime.ready()
    session = await runtime.browser.new_session(tmp_path)
    try:
        for pid in chromium_pids(runtime.display.name):
            os.kill(pid, signal.SIGKILL)
        with pytest.raises(InfraError) as info:
            await runtime.watched(session.context.add_cookies([{"name": "a", "value": "b", "url": "http://127.0.0.1/"}]))
        assert info.value.kind == "browser", info.value
    finally:
        await session.close()
    await runtime.ready()
    assert runtime.browser.alive


async def test_a_tab_whose_renderer_dies_as_it_opens_is_infra(runtime, tmp_path):
    """Every renderer the browser starts is killed as soon as it is seen, so the task's first tab cannot open
    (Chromium answers "Target crashed"): the renderer's death, never a bug of the harness; the browser lives on.
    (A tab that opened before its renderer was seen is tried again: the race is the killer's, at most 5 times.)"""
    import contextlib
    import threading

    import psutil

    from tests.conftest import renderers
    from webeval.outcomes.record import InfraError

    def kill_renderers(browser_pid: int, stop: threading.Event) -> None:
        while not stop.wait(0.001):
            for process in renderers(browser_pid):
                with contextlib.suppress(psutil.Error):
                    process.kill()

    await runtime.ready()
    stop = threading.Event()
    killer = threading.Thread(target=kill_renderers, args=(runtime.browser.browser_pid, stop))
    killer.start()
    raised = None
    try:
        for _ in range(5):
            try:
                opened = await runtime.browser.new_session(tmp_path)
            except InfraError as error:
                raised = error
                break
            await opened.close()
    finally:
        stop.set()
        killer.join()
    assert raised is not None, "the tab opened every time before its renderer was killed"
    assert raised.kind == "renderer" and "Target crashed" in str(raised), raised
    assert runtime.browser.alive
    session = await runtime.browser.new_session(tmp_path)
    await session.close()
