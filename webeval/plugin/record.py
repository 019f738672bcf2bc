"""Recording each test's outcome into the run directory, as it happens, by whichever worker ran it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from webeval.agent.episode import Episode
from webeval.outcomes.record import AttemptRecord, FailureClass, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.plugin.keys import ATTEMPT, EPISODE, RUN_DIR, SESSION_ID, TASK, VERDICT
from webeval.tasks import Task

__all__ = ["RUN_DIR", "outcome_of", "record_attempt"]
_CRASH = re.compile(r"worker '([^']+)' crashed while running")
_HARNESS = "webeval_outcome"


def worker_id() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def _kind(reason: str, prefix: str) -> str | None:
    match = re.match(re.escape(prefix) + r"\[([^\]]+)\]", reason)
    return match[1] if match else None


def failure_class(task: Task, episode: Episode | None, verdict_details: dict | None) -> FailureClass:
    if episode is not None and episode.failure_class is not None:
        return episode.failure_class
    if verdict_details and verdict_details.get("failure_class"):
        return FailureClass(verdict_details["failure_class"])
    if episode is not None and episode.answer is None:
        return FailureClass.no_answer
    if task.verifier and task.verifier.state and not task.verifier.answer:
        return FailureClass.wrong_state
    return FailureClass.wrong_answer


def outcome_of(item: pytest.Item, report: pytest.TestReport) -> tuple[Outcome, str | None, str]:
    """(outcome, kind, reason) of a finished test, from its pytest report."""
    if hasattr(report, "wasxfail"):
        reason = report.wasxfail
        if reason.startswith("judge_failed"):
            return Outcome.judge_failed, None, reason
        return Outcome.infra_error, _kind(reason, "infra") or "unknown", reason
    if report.skipped:
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        return Outcome.not_run, _kind(reason, "precondition") or "skipped", reason
    if report.passed:
        return Outcome.passed, None, ""
    verdict = item.stash.get(VERDICT, None)
    if report.when == "call" and verdict is not None and not verdict.success:
        return Outcome.failed, None, verdict.reason
    lines = report.longreprtext.strip().splitlines()
    return Outcome.harness_error, None, lines[-1] if lines else ""


def record_attempt(
    config: pytest.Config, task: Task, outcome: Outcome, *, kind: str | None = None, reason: str = "",
    episode: Episode | None = None, attempt: tuple[int, Path | None] = (0, None), duration_s: float = 0.0,
) -> None:
    """Append one attempt's record; called for every finished test and for every retried infra attempt."""
    run_dir: RunDir | None = config.stash.get(RUN_DIR, None)
    if run_dir is None:
        return
    verdict = None
    if outcome in (Outcome.passed, Outcome.failed):
        verdict = episode and episode.verdict
    number, folder = attempt
    run_dir.append(AttemptRecord(
        run_id=run_dir.run_id,
        session=config.stash.get(SESSION_ID, ""),
        task_id=task.id,
        site=task.site,
        attempt=number,
        outcome=outcome,
        failure_class=(failure_class(task, episode, verdict.details if verdict else None)
                       if outcome is Outcome.failed else None),
        kind=kind,
        reason=reason,
        answer=episode.answer if episode else None,
        steps=len(episode.steps) if episode else 0,
        duration_s=round(duration_s, 3),
        verdict=verdict.model_dump(mode="json") if verdict else None,
        worker=worker_id(),
        path=str(folder.relative_to(run_dir.path)) if folder else None,
        usage=episode.totals() if episode else {},
    ))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    # One record per test: its call phase, or the setup phase when it never got that far.
    if TASK in item.stash and (report.when == "call" or (report.when == "setup" and not report.passed)):
        outcome, kind, reason = outcome_of(item, report)
        episode = item.stash.get(EPISODE, None)
        if episode is not None:
            episode.verdict = item.stash.get(VERDICT, None)
        record_attempt(item.config, item.stash[TASK], outcome, kind=kind, reason=reason, episode=episode,
                       attempt=item.stash.get(ATTEMPT, (0, None)), duration_s=report.duration)
        if outcome is Outcome.harness_error:
            report.user_properties.append((_HARNESS, outcome.value))
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    """A bug of the harness is an error, never a model's failure."""
    if report.when == "call" and (_HARNESS, Outcome.harness_error.value) in report.user_properties:
        return "error", "E", "ERROR"
    return None


class CrashRecorder:
    """On the xdist controller: a task lost with a crashed worker is infrastructure, never a failure."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not isinstance(report.longrepr, str) or not _CRASH.search(report.longrepr):
            return
        task_id = re.search(r"\[(.+)\]$", report.nodeid)
        if task_id is not None:
            task = Task(id=task_id[1], site=task_id[1].split("--")[0], goal="-", start_url="http://unknown/")
            record_attempt(self.config, task, Outcome.infra_error, kind="worker_crashed", reason=report.longrepr)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(CrashRecorder(config), "webeval-crash-recorder")
