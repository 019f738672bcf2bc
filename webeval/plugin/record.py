"""Recording each test's outcome into the run directory, as it happens, by whichever worker ran it."""

from __future__ import annotations

import pytest

from webeval.outcomes.record import AttemptRecord, FailureClass, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.plugin.episode import worker_id
from webeval.plugin.keys import ATTEMPT, EPISODE, TASK, VERDICT


def _failure_class(item: pytest.Item) -> FailureClass:
    episode = item.stash.get(EPISODE, None)
    if episode is not None and episode.failure_class is not None:
        return episode.failure_class
    task = item.stash[TASK]
    verdict = item.stash.get(VERDICT, None)
    if episode is not None and episode.answer is None:
        return FailureClass.no_answer
    if verdict is not None and task.verifier and task.verifier.state and not task.verifier.answer:
        return FailureClass.wrong_state
    return FailureClass.wrong_answer


def outcome_of(item: pytest.Item, report: pytest.TestReport) -> tuple[Outcome, str | None, str]:
    """(outcome, kind, reason) of a finished test, from its pytest report."""
    if hasattr(report, "wasxfail"):
        reason = report.wasxfail
        if reason.startswith("judge_failed"):
            return Outcome.judge_failed, None, reason
        kind = reason[len("infra["):reason.index("]")] if reason.startswith("infra[") else "unknown"
        return Outcome.infra_error, kind, reason
    if report.skipped:
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        kind = reason[len("precondition["):reason.index("]")] if reason.startswith("precondition[") else "skipped"
        return Outcome.not_run, kind, reason
    if report.passed:
        return Outcome.passed, None, ""
    verdict = item.stash.get(VERDICT, None)
    if report.when == "call" and verdict is not None and not verdict.success:
        return Outcome.failed, None, verdict.reason
    return Outcome.harness_error, None, report.longreprtext.strip().splitlines()[-1] if report.longreprtext else ""


def record_report(item: pytest.Item, report: pytest.TestReport, run_dir: RunDir) -> None:
    if TASK not in item.stash:
        return
    outcome, kind, reason = outcome_of(item, report)
    task = item.stash[TASK]
    episode = item.stash.get(EPISODE, None)
    verdict = item.stash.get(VERDICT, None)
    attempt, folder = item.stash.get(ATTEMPT, (0, None))
    run_dir.append(AttemptRecord(
        run_id=run_dir.run_id,
        task_id=task.id,
        site=task.site,
        attempt=attempt,
        outcome=outcome,
        failure_class=_failure_class(item) if outcome is Outcome.failed else None,
        kind=kind,
        reason=reason,
        answer=episode.answer if episode else None,
        steps=len(episode.steps) if episode else 0,
        duration_s=round(report.duration, 3),
        verdict=verdict.model_dump(mode="json") if verdict else None,
        worker=worker_id(),
        path=str(folder.relative_to(run_dir.path)) if folder else None,
        usage=episode.totals() if episode else {},
    ))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    # One record per test: its call phase, or the setup phase when it never got that far.
    if report.when == "call" or (report.when == "setup" and not report.passed):
        run_dir = item.config.stash.get(RUN_DIR, None)
        if run_dir is not None:
            record_report(item, report, run_dir)
    return report


RUN_DIR = pytest.StashKey[RunDir]()
