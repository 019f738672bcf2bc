"""A task test's outcome, decided from the harness's own records in one pytest_runtest_makereport wrapper.

The attempt's record (what evaluate() returned, in item.stash) decides; pytest's report is made to say the same,
whatever the test body did or pytest's flags (--runxfail) would do with xfails:

| record        | report                                                                     |
|---------------|----------------------------------------------------------------------------|
| passed        | passed (a test that passed without any verdict is a harness_error)         |
| failed        | failed with the judge's reason, even when the test body did not assert it  |
| infra_error   | xfailed, `infra[<kind>]: ...`                                              |
| judge_failed  | xfailed, `judge_failed: ...`                                               |
| not_run       | skipped, `precondition[<kind>]: ...`                                       |
| harness_error | error, with the traceback in the record                                    |

A user's own non-strict xfail marker keeps its meaning: the task is scored by its verdict, pytest shows xfail/xpass.
"""

from __future__ import annotations

import os
import re

import pytest

from webeval.outcomes.disk import DISK, disk_error, full_disk
from webeval.outcomes.record import AttemptRecord, NotRun, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.plugin.episode_fixtures import Unscored
from webeval.plugin.keys import ATTEMPT, RECORD, RUN_DIR, SESSION_ID, TASK
from webeval.plugin.halting import halt

OUTCOME_PROPERTY = "webeval_outcome"  # (name, value) in a report's user_properties: read on the xdist controller
KIND_PROPERTY = "webeval_kind"
COST_PROPERTY = "webeval_cost_usd"  # what the test's attempts cost (priced tokens), for --cost-limit's sum
_CRASH = re.compile(r"worker '([^']+)' crashed while running")


def _record(item: pytest.Item, outcome: Outcome, *, kind: str | None = None, reason: str = "",
            traceback: str | None = None) -> AttemptRecord:
    """A record for a test that has no attempt of its own (it never ran one, or it broke around it)."""
    task = item.stash[TASK]
    run_dir: RunDir = item.config.stash[RUN_DIR]
    return AttemptRecord(run_id=run_dir.run_id, session=item.config.stash.get(SESSION_ID, ""), task_id=task.id,
                         site=task.site, attempt=0, outcome=outcome, kind=kind, reason=reason,
                         worker=os.environ.get("PYTEST_XDIST_WORKER", "main"),
                         extra={"traceback": traceback} if traceback else {})


def _first_line(report: pytest.TestReport) -> str:
    lines = [line for line in report.longreprtext.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("E ")]
    return (errors[0][1:].strip() if errors else lines[-1]) if lines else ""


def decide(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> AttemptRecord:
    """The test's final record, from its attempt's record and what the test body did around it."""
    error = call.excinfo.value if call.excinfo is not None else None
    if isinstance(error, Unscored):
        return error.record
    if isinstance(error, NotRun):
        return _record(item, Outcome.not_run, kind=error.kind, reason=f"precondition[{error.kind}]: {error.message}")
    if call.excinfo is not None and call.excinfo.errisinstance(pytest.skip.Exception):
        return _record(item, Outcome.not_run, kind="skipped", reason=f"precondition[skipped]: {error}")
    attempt = item.stash.get(ATTEMPT, None)
    if attempt is None:
        if report.passed or hasattr(report, "wasxfail"):
            return _record(item, Outcome.harness_error, reason="harness_error: the test ended without a verdict: "
                           "a suite's test must `assert verdict.success` on what run_task returned")
        return _record(item, Outcome.harness_error, reason=f"harness_error: {_first_line(report)}",
                       traceback=report.longreprtext)
    record = attempt.record
    if error is None or isinstance(error, AssertionError) and record.outcome is Outcome.failed:
        return record
    # The verdict was handed over, then the test body raised something else: the suite's code broke.
    return record.model_copy(update={"outcome": Outcome.harness_error, "kind": None,
                                     "reason": f"harness_error: after the verdict: {_first_line(report)}",
                                     "extra": {**record.extra, "traceback": report.longreprtext}})


def apply(report: pytest.TestReport, record: AttemptRecord, item: pytest.Item) -> None:
    """Make pytest's report say what the record says."""
    outcome = record.outcome
    if outcome is Outcome.passed:
        return
    if outcome is Outcome.failed:
        if report.passed and not hasattr(report, "wasxfail"):
            report.outcome = "failed"
            report.longrepr = f"{record.reason}\n(the verdict is not success; the test did not assert it)"
        return
    if hasattr(report, "wasxfail"):
        del report.wasxfail
    if outcome in (Outcome.infra_error, Outcome.judge_failed):
        report.outcome, report.wasxfail, report.longrepr = "skipped", record.reason, None
    elif outcome is Outcome.not_run:
        path, line, _ = item.location
        report.outcome, report.longrepr = "skipped", (str(item.path), (line or 0) + 1, f"Skipped: {record.reason}")
    else:
        report.outcome = "failed"
        if not report.longrepr:
            report.longrepr = record.reason


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    # One record per test: its call phase, or the setup phase when it never got that far.
    if TASK in item.stash and (report.when == "call" or (report.when == "setup" and not report.passed)):
        record = decide(item, call, report)
        attempt = item.stash.get(ATTEMPT, None)
        if not (attempt is not None and attempt.recorded and attempt.record is record):
            record = kept(item, record)
        apply(report, record, item)
        item.stash[RECORD] = record
        report.user_properties += [(OUTCOME_PROPERTY, record.outcome.value), (KIND_PROPERTY, record.kind),
                                   (COST_PROPERTY, attempt.spent_usd if attempt is not None else 0.0)]
    return report


def kept(item: pytest.Item, record: AttemptRecord) -> AttemptRecord:
    """The record, appended to results.jsonl; on a full disk nothing is appended (no torn line), the attempt is
    masked `infra_error[disk]` (it met the full disk) and the session starts no more tasks."""
    run_dir: RunDir = item.config.stash[RUN_DIR]
    try:
        run_dir.append(record)
        return record
    except OSError as exc:
        error = disk_error(exc)
        if error is None:
            raise
        full = full_disk(error, run_dir.path)
    halt(item.config, DISK, full.line, item.session)
    return record.model_copy(update={"outcome": Outcome.infra_error, "kind": DISK, "failure_class": None,
                                     "verdict": None,
                                     "reason": f"infra[{DISK}]: {full.line}; the attempt's record was not kept"})


def outcome_of(report: pytest.TestReport) -> tuple[Outcome, str | None] | None:
    """(outcome, kind) of a task test's report, on any process (xdist ships user_properties to the controller)."""
    properties = dict(getattr(report, "user_properties", ()))
    if OUTCOME_PROPERTY not in properties:
        return None
    return Outcome(properties[OUTCOME_PROPERTY]), properties.get(KIND_PROPERTY)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    """A bug of the harness is an error, never a model's failure."""
    found = outcome_of(report)
    if found is not None and found[0] is Outcome.harness_error:
        return "error", "E", "ERROR"
    return None


class CrashRecorder:
    """On the xdist controller: a task lost with a crashed worker is infrastructure, never a failure."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not isinstance(report.longrepr, str) or not _CRASH.search(report.longrepr):
            return
        run_dir: RunDir | None = self.config.stash.get(RUN_DIR, None)
        task_id = re.search(r"\[(.+)\]$", report.nodeid)  # the controller collects nothing: the id is in the node id
        if run_dir is None or task_id is None or not (run_dir.path / "population.json").exists():
            return
        site = run_dir.population().site(task_id[1])
        record = AttemptRecord(run_id=run_dir.run_id, session=self.config.stash.get(SESSION_ID, ""),
                               task_id=task_id[1], site=site, outcome=Outcome.infra_error, kind="worker_crashed",
                               reason=f"infra[worker_crashed]: {report.longrepr.splitlines()[0]}", worker="controller")
        try:
            run_dir.append(record)
        except OSError as exc:
            if disk_error(exc) is None:
                raise
            halt(self.config, DISK, full_disk(disk_error(exc), run_dir.path).line)
        report.outcome, report.wasxfail = "skipped", record.reason
        report.user_properties += [(OUTCOME_PROPERTY, record.outcome.value), (KIND_PROPERTY, record.kind)]


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(CrashRecorder(config), "webeval-crash-recorder")
