"""Running one task as one test: episode, evidence, verdict; infrastructure failures become xfail, never a 0."""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

import pytest
from playwright.async_api import Error as PlaywrightError

from webeval.agent.environment import Environment
from webeval.agent.episode import Episode
from webeval.agent.loop import AgentLoop
from webeval.outcomes.record import InfraError, JudgeError, Outcome
from webeval.outcomes.verdict import Verdict
from webeval.outcomes.rundir import RunDir
from webeval.plugin.keys import ATTEMPT, EPISODE, VERDICT
from webeval.plugin.options import Settings
from webeval.plugin.policies import make_policy
from webeval.plugin.record import record_attempt
from webeval.plugin.runtime import WorkerRuntime
from webeval.tasks import Task

Judge = Callable[[Task, dict[str, Any]], Awaitable[Verdict]]  # reads the evidence only


@pytest.fixture
def webeval_environment() -> Environment:
    """Suites with sites of their own override this."""
    return Environment()


@pytest.fixture
def webeval_judge() -> Judge:
    """Suites choose their judge by overriding this fixture."""

    async def no_judge(task: Task, evidence: dict[str, Any]) -> Verdict:
        raise JudgeError("this suite chose no judge")

    return no_judge


def write_evidence(episode: Episode, task: Task) -> None:
    (episode.folder / "evidence.json").write_text(
        json.dumps(episode.evidence(task.goal), indent=2, ensure_ascii=False), encoding="utf-8")


async def run_episode(
    item: pytest.Item, task: Task, runtime: WorkerRuntime, settings: Settings, run_dir: RunDir,
    environment: Environment,
) -> Episode:
    if settings.policy is None:
        # Every task would break the same way: stop after this one, with the one thing to do.
        message = ("no policy: pass --policy openai with --policy-base-url and --policy-model, "
                   "or --policy-profile PATH (see docs/models.md)")
        item.session.shouldstop = message
        pytest.skip(f"precondition[no_policy]: {message}")
    prepared = environment.prepare(task)
    attempt, folder = run_dir.attempt_dir(task.id)
    item.stash[ATTEMPT] = (attempt, folder)
    try:
        session = await runtime.browser.new_session(folder, settings.settle_cap_s, proxy=prepared.proxy)
        if prepared.cookies:
            await session.context.add_cookies(prepared.cookies)
    except (InfraError, PlaywrightError) as exc:
        # The browser died between tasks, or while this one was being set up: the episode ran and broke.
        infra = exc if isinstance(exc, InfraError) else InfraError("browser", str(exc).splitlines()[0])
        episode = Episode(task_id=task.id, folder=folder, infra=infra)
        write_evidence(episode, prepared.task)
        item.stash[EPISODE] = episode
        return episode
    try:
        policy = make_policy(settings, session, prepared)
        episode = await AgentLoop(session, runtime.device, policy, settings.budgets).run(prepared.task, folder)
        if prepared.read_state is not None:
            episode.state = prepared.read_state()
        write_evidence(episode, prepared.task)
    finally:
        await session.close()
    item.stash[EPISODE] = episode
    return episode


async def judge_episode(judge: Judge, task: Task, episode: Episode) -> Verdict:
    if episode.failure_class is not None:
        # The agent's own run decided it: no answer, a budget spent, invalid output, the last tab closed.
        return Verdict(success=False, reason=episode.reason, judge="agent")
    return await judge(task, episode.evidence(task.goal))


@pytest.fixture
def run_task(
    request: pytest.FixtureRequest, webeval_ready_runtime: WorkerRuntime, webeval_settings: Settings,
    webeval_run_dir: RunDir, webeval_environment: Environment, webeval_judge: Judge,
) -> Callable[[Task], Awaitable[Verdict]]:
    """`verdict = await run_task(task)`: the episode, its evidence and the judge's verdict."""

    async def run(task: Task) -> Verdict:
        for retry in range(webeval_settings.infra_retries + 1):
            if retry:
                try:
                    await webeval_ready_runtime.ready()  # a fresh browser (and display) if they died
                except InfraError as exc:
                    pytest.xfail(f"infra[{exc.kind}]: {exc.message}")
            episode = await run_episode(request.node, task, webeval_ready_runtime, webeval_settings,
                                        webeval_run_dir, webeval_environment)
            # A refused key fails every retry the same way: never retried.
            if episode.infra is None or episode.infra.kind == "policy_auth" or retry == webeval_settings.infra_retries:
                break
            # Every attempt is on record; only the last one is the test's outcome.
            record_attempt(request.config, task, Outcome.infra_error, kind=episode.infra.kind,
                           reason=f"infra[{episode.infra.kind}]: {episode.infra.message} (retried)", episode=episode,
                           attempt=request.node.stash[ATTEMPT], duration_s=episode.duration_s)
        if episode.infra is not None:
            pytest.xfail(f"infra[{episode.infra.kind}]: {episode.infra.message}")
        try:
            verdict = await judge_episode(webeval_judge, task, episode)
        except JudgeError as exc:
            pytest.xfail(f"judge_failed: {exc}")
        request.node.stash[VERDICT] = verdict
        (episode.folder / "verdict.json").write_text(verdict.model_dump_json(indent=2), encoding="utf-8")
        return verdict

    return run

