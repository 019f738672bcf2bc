"""Running one task as one test: `verdict = await run_task(task)`, then the suite's test asserts the verdict.

The fixture only maps what `evaluate()` (or, with `--rejudge DIR`, a re-judge of the stored evidence) returns: a
valid verdict is handed to the test; any other outcome raises `Unscored`, and the report is decided from the
attempt's record (webeval.plugin.outcome), whatever pytest flags such as --runxfail do with xfails.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
from typing import Awaitable, Callable, Iterator

import pytest
import pytest_asyncio

from webeval.agent.environment import Environment
from webeval.agent.evaluate import Acted, Attempt, Evaluation, act, interrupted, judge_acted, rejudge
from webeval.judges.decide import Judge
from webeval.outcomes.disk import DISK, PROFILE_BYTES, short_of_space
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import AttemptRecord, JudgeError, NotRun
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.verdict import Verdict
from webeval.runtime.pool import SlotPool
from webeval.plugin.browsers import make_runtime
from webeval.plugin.concurrent_tasks import SCHEDULER, TaskScheduler
from webeval.plugin.keys import ATTEMPT, SESSION_ID
from webeval.plugin.rejudge_selection import FINAL, unparseable
from webeval.plugin.options import Settings
from webeval.plugin.policies import EPISODE_POLICY, chosen, stop_session
from webeval.plugin.halting import Halt, halt, halted
from webeval.plugin.stops import stopping
from webeval.tasks import Task

# Every wait of an attempt has its own bound (the task's budget, 20 s to open a context, 10 s to close it, the
# judge's timeout and retries); this one is far past all of them together.
LAST_RESORT_FACTOR, LAST_RESORT_S = 2, 1800
NO_POLICY = ("no policy: pass --policy openai with --policy-base-url and --policy-model, "
             "or --policy-profile PATH (see docs/models.md)")


class Unscored(Exception):
    """Raised by run_task for an attempt without a valid verdict; its record decides the test's report."""

    def __init__(self, record: AttemptRecord) -> None:
        super().__init__(record.reason)
        self.record = record


@pytest.fixture
def webeval_environment() -> Environment:
    """Suites with sites of their own override this."""
    return Environment()


@pytest.fixture
def webeval_judge() -> Judge:
    """Suites choose their judge by overriding this fixture."""

    async def no_judge(task: Task, evidence: Evidence) -> Verdict:
        raise JudgeError("this suite chose no judge", kind="config")

    return no_judge


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def webeval_scheduler(pytestconfig: pytest.Config):
    """With --slots N: the tasks' scheduler, made at the first task (it needs that task's fixtures), closed here."""
    yield
    scheduler = pytestconfig.stash.get(SCHEDULER, None)
    if scheduler is not None:
        del pytestconfig.stash[SCHEDULER]
        await scheduler.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def webeval_runtime(pytestconfig: pytest.Config, webeval_settings: Settings):
    """The worker's display (or remote browser), browser and input device, started when the first task needs them."""
    runtime = make_runtime(pytestconfig, webeval_settings)
    try:
        yield runtime
    finally:
        await runtime.close()


def _handed(item: pytest.Item, attempt: Attempt) -> Verdict:
    item.stash[ATTEMPT] = attempt
    if attempt.record.outcome.valid and attempt.verdict is not None:
        return attempt.verdict
    raise Unscored(attempt.record)


@pytest.fixture
def run_task(request: pytest.FixtureRequest, webeval_settings: Settings, webeval_run_dir: RunDir,
             webeval_environment: Environment, webeval_judge: Judge) -> Iterator[Callable[[Task], Awaitable[Verdict]]]:
    """`verdict = await run_task(task)`: the episode, its evidence and the judge's verdict (or, re-judging, the
    verdict on the stored evidence: no display, no browser)."""
    config = request.config
    item = request.node
    if config.option.rejudge:
        async def run_again(task: Task) -> Verdict:
            record = config.stash[FINAL][task.id]  # collection kept only tasks that have one
            return _handed(item, await rejudge(task, record, webeval_run_dir, webeval_judge,
                                               unparseable(config)))

        yield run_again
        return
    if webeval_settings.policy is None:
        # Every task would break the same way: stop after this one, with the one thing to do.
        stop_session(item, NO_POLICY)
        raise NotRun("no_policy", NO_POLICY)
    attempt = _attempts(request, webeval_settings, webeval_run_dir, webeval_environment, webeval_judge)

    async def run(task: Task) -> Verdict:
        stopped = halted(config) or _short_of_space(item, webeval_run_dir, webeval_settings.download_max_bytes)
        if stopped is not None:  # the session is stopping, or the disk is too full for a task: it is not started
            raise NotRun(stopped.kind, f"{stopped.why}: the task was not started")
        try:
            return _handed(item, await attempt(task))
        except NotRun as exc:
            if exc.kind in ("display", "browser"):  # no task can run on this machine: stop with the one thing to do
                stop_session(item, exc.message)
            raise

    # The last resort, for an event loop that is itself blocked (no timer can fire): the worker process dumps its
    # stacks and exits, xdist replaces it, and the task is recorded as infra[worker_crashed] by the controller.
    faulthandler.dump_traceback_later(LAST_RESORT_FACTOR * webeval_settings.budgets.task_timeout_s + LAST_RESORT_S,
                                      exit=True)
    yield run
    faulthandler.cancel_dump_traceback_later()


def _attempts(request: pytest.FixtureRequest, settings: Settings, run_dir: RunDir, environment: Environment,
              judge: Judge) -> Callable[[Task], Awaitable[Attempt]]:
    """What makes a task's attempt: evaluate() on the worker's slot, or (--slots N) the session's scheduler. A stop
    (SIGTERM, Ctrl-C) cancels the attempts in flight into ones masked `interrupted`; an attempt that met a full disk
    stops the session from starting more."""
    config, item = request.config, request.node
    stop = stopping(config)

    def evaluation(slot) -> Evaluation:
        return Evaluation(
            slot=slot, run_dir=run_dir, judge=judge, policy=config.stash[EPISODE_POLICY], environment=environment,
            budgets=settings.budgets, settle_cap_s=settings.settle_cap_s,
            download_max_bytes=settings.download_max_bytes, infra_retries=settings.infra_retries,
            unparseable=unparseable(config), session_id=config.stash.get(SESSION_ID, ""),
            policy_prices=chosen(config).prices, stopping=lambda: (halted(config) or (None, None))[1])

    if settings.slots > 1:
        request.getfixturevalue("webeval_scheduler")

        async def scheduled(task: Task) -> Attempt:
            if SCHEDULER not in config.stash:  # the first task: every selected task is handed to the slots now
                pool = SlotPool([make_runtime(config, settings) for _ in range(settings.slots)])
                config.stash[SCHEDULER] = scheduler = TaskScheduler(pool, evaluation)
                scheduler.schedule(request.session.items)
                for attempt in scheduler.attempts.values() if stop is not None else ():
                    stop.watch(attempt)
            return await _unless_stopped(item, evaluation(None), task, config.stash[SCHEDULER].attempt(item))

        return scheduled
    how = evaluation(request.getfixturevalue("webeval_runtime"))

    async def evaluated(task: Task) -> Attempt:
        with stop.in_flight() if stop is not None else contextlib.nullcontext():
            progress: dict[str, Acted] = {}
            return await _unless_stopped(item, how, task, _acted_then_judged(task, how, progress), progress)

    return evaluated


async def _acted_then_judged(task: Task, how: Evaluation, progress: dict[str, Acted]) -> Attempt:
    progress["acted"] = await act(task, how)
    return await judge_acted(progress["acted"], how)


async def _unless_stopped(item: pytest.Item, how: Evaluation, task: Task, work: Awaitable[Attempt],
                          progress: dict[str, Acted] | None = None) -> Attempt:
    """The attempt `work` makes; cancelled by a stop, the one masked `interrupted` (where it had got to)."""
    config = item.config
    try:
        attempt = await work
    except asyncio.CancelledError:
        stopped = halted(config)
        if stopped is None:
            raise
        asyncio.current_task().uncancel()
        attempt = interrupted(task, how, (progress or {}).get("acted"), stopped.why)
    if attempt.record.kind == DISK:
        halt(config, DISK, attempt.record.reason.removeprefix(f"infra[{DISK}]: "), item.session)
    return attempt


def _short_of_space(item: pytest.Item, run_dir: RunDir, download_max_bytes: int) -> Halt | None:
    short = short_of_space(run_dir.path, PROFILE_BYTES + download_max_bytes)
    if short is None:
        return None
    halt(item.config, DISK, short.line, item.session)
    return halted(item.config)
