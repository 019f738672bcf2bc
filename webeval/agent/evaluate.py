"""`evaluate()`: one task, one attempt record. The episode in a fresh browser context, its evidence, the verdict.

It is the one way a task is run: the pytest plugin maps its record to a test outcome, the rollout engine to a
rollout, and a script calls it through `run_task()`. Infrastructure never becomes a reward of 0: a part of the runtime that died (or stopped answering)
makes the attempt infra_error, a judge that failed makes it judge_failed, a runtime that cannot start makes it
not_run (NotRun is raised). An exception while every part is alive and answering is a bug of the harness: it is
raised, never masked.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

from tenacity import AsyncRetrying, RetryCallState, retry_if_result, stop_after_attempt

from webeval.agent.environment import Environment, Prepared
from webeval.agent.episode import Episode
from webeval.agent.loop import AgentLoop, Budgets
from webeval.judges.decide import Decision, Judge, Unparseable, decide
from webeval.judges.rejudge import rejudge_record
from webeval.outcomes.cost import Prices
from webeval.outcomes.disk import DISK, PROFILE_BYTES, disk_error, full_disk
from webeval.outcomes.record import AttemptRecord, InfraError, NotRun, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.spending import spent
from webeval.outcomes.verdict import Verdict
from webeval.policy.base import Policy
from webeval.runtime.downloads import DEFAULT_MAX_BYTES
from webeval.runtime.session import TaskSession
from webeval.runtime.pool import AnySlot, started
from webeval.tasks import Task

PolicyFactory = Callable[[TaskSession, Prepared], Policy]  # a fresh policy for each episode, given its session
# Beyond the task's own budget, what opening and closing its context may take (20 s and 10 s bounds) and a margin.
WATCHDOG_MARGIN_S = 45.0
INTERRUPTED = "interrupted"  # the session (or collection) was stopped with the attempt in flight: SIGTERM, Ctrl-C
# A refused key fails every retry the same way; a full disk is still full; a stopped session starts nothing more.
NOT_RETRIED = frozenset({"policy_auth", DISK, INTERRUPTED})


@dataclass(frozen=True)
class Evaluation:
    """Everything `evaluate` needs besides the task: the slot it runs on, the run's directory and choices."""

    slot: AnySlot
    run_dir: RunDir
    judge: Judge
    policy: PolicyFactory
    environment: Environment = field(default_factory=Environment)
    budgets: Budgets = field(default_factory=Budgets)
    settle_cap_s: float = 3.0
    download_max_bytes: int = DEFAULT_MAX_BYTES
    infra_retries: int = 0
    unparseable: Unparseable = "mask"
    session_id: str = ""
    policy_prices: Prices | None = None  # what the policy's tokens cost (its profile's price table)
    # Why the session is stopping (a signal), once it is: a cancelled episode then ends as infra[interrupted].
    stopping: Callable[[], str | None] | None = None


@dataclass
class Attempt:
    """What one attempt left: its record, and the episode and verdict behind it. `recorded` says the record is in
    results.jsonl already (a re-judge that kept a task as it was); otherwise the caller appends it."""

    record: AttemptRecord
    episode: Episode | None = None
    verdict: Verdict | None = None
    recorded: bool = False
    retried: list[AttemptRecord] = field(default_factory=list)  # the infra attempts before it, appended already

    @property
    def spent_usd(self) -> float:
        """What this attempt and the retried ones before it cost, as far as it is priced."""
        spending = spent([*self.retried, self.record])
        return spending.policy.usd + spending.judge.usd


def attempt_record(how: Evaluation, task: Task, outcome: Outcome, *, episode: Episode | None = None,
                   decision: Decision | None = None, kind: str | None = None, reason: str = "",
                   duration_s: float = 0.0) -> AttemptRecord:
    folder = episode.folder if episode is not None else None
    verdict = decision.verdict if decision is not None and outcome.valid else None
    usage = episode.totals() if episode else {}
    cost = {"policy": round(how.policy_prices.usd(usage), 8)} if how.policy_prices is not None and episode else {}
    if decision is not None and decision.judge_usd is not None:
        cost["judge"] = decision.judge_usd
    return AttemptRecord(
        run_id=how.run_dir.run_id, session=how.session_id, task_id=task.id, site=task.site,
        attempt=episode.attempt if episode is not None else 0,
        outcome=outcome, failure_class=decision.failure_class if decision else None,
        kind=decision.kind if decision else kind, reason=decision.reason if decision else reason,
        answer=episode.answer if episode else None, steps=len(episode.steps) if episode else 0,
        duration_s=round(duration_s, 3), verdict=verdict.model_dump(mode="json") if verdict else None,
        worker=os.environ.get("PYTEST_XDIST_WORKER", "main"),
        path=str(folder.relative_to(how.run_dir.path)) if folder is not None else None,
        usage=usage, judge_usage=decision.judge_usage if decision else {}, cost_usd=cost,
    )


def _infra(how: Evaluation, task: Task, error: InfraError, episode: Episode | None, duration_s: float,
           suffix: str = "") -> AttemptRecord:
    return attempt_record(how, task, Outcome.infra_error, episode=episode, kind=error.kind,
                          reason=f"infra[{error.kind}]: {error.message}{suffix}", duration_s=duration_s)


async def evaluate(task: Task, how: Evaluation) -> Attempt:
    """Run one task to one attempt record: the episode on the slot, then the verdict on its evidence."""
    return await judge_acted(await act(task, how), how)


@dataclass
class Acted:
    """An episode that has ended, its evidence written and its browser context closed: the slot is free again.
    `attempt` is set when there is nothing to judge (the episode ended as infrastructure)."""

    task: Task
    prepared: Prepared
    episode: Episode | None
    began: float
    attempt: Attempt | None = None
    retried: list[AttemptRecord] = field(default_factory=list)  # infra attempts before it, appended already


async def act(task: Task, how: Evaluation) -> Acted:
    """The episode, on the slot; infrastructure errors are retried `how.infra_retries` times, each retried attempt
    on record too (appended here), in a fresh context of a slot started again if it died."""
    began = time.monotonic()
    prepared = how.environment.prepare(task)
    episodes: list[Episode] = []  # the last one's is kept when a retry cannot start the slot again
    retried: list[AttemptRecord] = []  # the infra attempts run again, appended already: what they spent counts

    async def attempt() -> Episode:
        await started(how.slot)  # a slot that cannot exist here (Xvfb missing, say) raises NotRun
        try:
            number, folder = how.run_dir.attempt_dir(task.id)
        except OSError as exc:
            raise _full(exc, how) from None
        episodes.append(await run_episode(prepared, how, Episode(task_id=task.id, folder=folder, attempt=number)))
        return episodes[-1]

    def keep_retried(state: RetryCallState) -> None:
        episode = state.outcome.result()
        retried.append(_infra(how, task, episode.infra, episode, episode.duration_s, " (retried)"))
        try:
            how.run_dir.append(retried[-1])
        except OSError as exc:
            raise _full(exc, how) from None

    try:
        episode = await AsyncRetrying(stop=stop_after_attempt(how.infra_retries + 1), retry=retry_if_result(_retried),
                                      before_sleep=keep_retried, reraise=True,
                                      retry_error_callback=lambda state: state.outcome.result())(attempt)
    except InfraError as exc:  # a part died while it started, every time
        last = episodes[-1] if episodes else None
        return Acted(task, prepared, last, began, Attempt(
            _infra(how, task, exc, last, time.monotonic() - began), last, retried=retried))
    episode.infra = episode.infra or how.environment.blocked(episode.evidence(prepared.task.goal))
    if episode.infra is not None:
        return Acted(task, prepared, episode, began, Attempt(
            _infra(how, task, episode.infra, episode, time.monotonic() - began), episode, retried=retried))
    return Acted(task, prepared, episode, began, retried=retried)


def _retried(episode: Episode) -> bool:
    """An episode that infrastructure broke is run again, unless no second try can go otherwise (a refused key)."""
    return episode.infra is not None and episode.infra.kind not in NOT_RETRIED


async def judge_acted(acted: Acted, how: Evaluation) -> Attempt:
    """The verdict on an ended episode's evidence (no slot needed), and the attempt record it makes."""
    if acted.attempt is not None:
        return acted.attempt
    episode = acted.episode
    decision = await decide(acted.prepared.task, episode.evidence(acted.prepared.task.goal), how.judge,
                            how.unparseable)
    if decision.verdict is not None:
        episode.verdict = decision.verdict
        try:
            (episode.folder / "verdict.json").write_text(decision.verdict.model_dump_json(indent=2), encoding="utf-8")
        except OSError as exc:  # the verdict is known but not kept: the attempt met the full disk
            episode.infra = _full(exc, how)
            return Attempt(_infra(how, acted.task, episode.infra, episode, time.monotonic() - acted.began), episode,
                           retried=acted.retried)
    record = attempt_record(how, acted.task, decision.outcome, episode=episode, decision=decision,
                            duration_s=time.monotonic() - acted.began)
    return Attempt(record, episode, decision.verdict, retried=acted.retried)


def interrupted(task: Task, how: Evaluation, acted: Acted | None, why: str) -> Attempt:
    """The attempt of a task that a stop from outside (a signal) cancelled where its episode could not say so itself:
    while its slot started (`acted` None), or while it was judged (its evidence is whole: judge it again later)."""
    if acted is not None and acted.attempt is not None:
        return acted.attempt
    if acted is None or acted.episode is None:
        error = InfraError(INTERRUPTED, f"{why} with the task in flight")
        return Attempt(_infra(how, task, error, None, 0.0))
    record = attempt_record(how, task, Outcome.judge_failed, episode=acted.episode, kind=INTERRUPTED,
                            reason=f"judge_failed: {why} while the judge decided; the evidence is kept",
                            duration_s=time.monotonic() - acted.began)
    return Attempt(record, acted.episode, retried=acted.retried)


async def run_episode(prepared: Prepared, how: Evaluation, episode: Episode) -> Episode:
    """The episode in a fresh context, watched: if a part of the runtime dies, it ends at once as infrastructure.
    Its evidence is written before the context closes; a wall-clock watchdog bounds set-up, steps and tear-down."""
    runtime = how.slot
    folder = episode.folder
    bound = how.budgets.task_timeout_s + WATCHDOG_MARGIN_S
    session: TaskSession | None = None
    try:
        async with asyncio.timeout(bound):
            session = await runtime.watched(runtime.browser.new_session(
                folder, how.settle_cap_s, proxy=prepared.proxy, download_max_bytes=how.download_max_bytes))
            if prepared.cookies:
                await runtime.watched(session.context.add_cookies(prepared.cookies))
            loop = AgentLoop(session, runtime.input_for(session), how.policy(session, prepared), how.budgets,
                             runtime.failure, prepared.page, observer=runtime.observer_for(session))
            await runtime.watched(loop.run(prepared.task, episode))
            if prepared.read_state is not None:
                episode.state = await asyncio.to_thread(prepared.read_state)
            page = session.active
            if prepared.page is not None and episode.infra is None and page is not None and not page.is_closed():
                episode.state = {**(episode.state or {}), **await runtime.watched(prepared.page.state(page))}
    except InfraError as exc:
        episode.infra = exc
    except TimeoutError:
        episode.infra = await runtime.failure() or InfraError(
            "watchdog", f"the attempt took over {bound:.0f} s with every part of the runtime answering")
    except OSError as exc:
        episode.infra = _full(exc, how)
    except asyncio.CancelledError:
        why = how.stopping() if how.stopping is not None else None
        if not why:
            raise
        asyncio.current_task().uncancel()  # the stop is ours to report: the episode ends as infrastructure
        episode.infra = InfraError(INTERRUPTED, f"{why} with the task in flight")
    finally:
        if episode.infra is not None and hasattr(runtime, "explained"):
            episode.infra = runtime.explained(episode.infra)  # a signal, or the out-of-memory killer, named
        try:
            episode.evidence(prepared.task.goal).write()
        except OSError as exc:
            episode.infra = episode.infra or _full(exc, how)
        if session is not None:
            # A context that does not close in time leaves the episode as it was: the next task's ready() finds
            # the browser not answering and starts another.
            await session.close()
    return episode


def _full(error: OSError, how: Evaluation) -> InfraError:
    """The InfraError of a full disk; any other OSError is raised again (with every part alive it is a bug)."""
    if disk_error(error) is None:
        raise error
    return full_disk(disk_error(error), how.run_dir.path, PROFILE_BYTES + how.download_max_bytes)


async def rejudge(task: Task, record: AttemptRecord, run_dir: RunDir, judge: Judge,
                  unparseable: Unparseable = "mask") -> Attempt:
    """The verdict on a finished attempt's stored evidence, with no display and no browser: a new record that
    supersedes `record`, or `record` itself (recorded) when its episode did not finish or the agent's run decided it."""
    after, verdict, _ = await rejudge_record(run_dir, record, task, judge, unparseable=unparseable)
    if after is None:
        return Attempt(record, recorded=True)
    return Attempt(after, verdict=verdict)


async def run_task(task: Task, slot: AnySlot, policy: PolicyFactory, judge: Judge,
                   run_dir: RunDir | Path | str | None = None, *, environment: Environment | None = None,
                   budgets: Budgets | None = None, settle_cap_s: float = 3.0, infra_retries: int = 0,
                   unparseable: Unparseable = "mask", policy_prices: Prices | None = None) -> AttemptRecord:
    """Run one task on `slot` to its attempt record, appended to the run directory's results.jsonl.

    `policy` makes each episode's policy (`webeval.oracle`, or a model's); `judge` reads the evidence; `environment`
    is the benchmark's (where its sites are); `policy_prices` prices the policy's tokens. Without `run_dir` the
    attempt goes to a new folder under the system's temporary directory (the record's `path` is relative to it:
    `record.run_id` names it). A slot that cannot start here (no Xvfb, no Chromium) gives a not_run record; an
    exception while every part of the slot is alive is a bug of the harness, and it is raised.
    """
    folder = run_dir if isinstance(run_dir, RunDir) else RunDir(Path(run_dir) if run_dir else _scratch_run_dir())
    folder.path.mkdir(parents=True, exist_ok=True)
    how = Evaluation(slot=slot, run_dir=folder, judge=judge, policy=policy, environment=environment or Environment(),
                     budgets=budgets or Budgets(), settle_cap_s=settle_cap_s, infra_retries=infra_retries,
                     unparseable=unparseable, policy_prices=policy_prices)
    began = time.monotonic()
    try:
        record = (await evaluate(task, how)).record
    except NotRun as exc:
        record = attempt_record(how, task, Outcome.not_run, kind=exc.kind,
                                reason=f"precondition[{exc.kind}]: {exc.message}", duration_s=time.monotonic() - began)
    folder.append(record)
    return record


def _scratch_run_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix=f"webeval-{datetime.now():%Y%m%d-%H%M%S}-"))
