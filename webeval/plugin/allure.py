"""Allure results of a webeval run, in `<run-dir>/allure-results` unless `--alluredir` says where.

Each task test's result carries the task's labels, its parameters (volatile ones excluded from the history id),
one step per agent step with the screenshot it saw, its actions and the model's raw reply, the final answer and the
verdict. At the end of the session the controller completes the results to the population's N
(webeval.report.results).

The workers decode and encode no image: a step's screenshot is attached as the file it is. The click marks and the
animated replay are drawn once, when the report is built (webeval.report.pictures), so that the run being measured
does not pay for them after every test.

allure-pytest writes results only when `--alluredir` is given, and decides that in its own pytest_configure.
Without the option we start its writer ourselves, once collection shows that the session runs tasks: a session of
the harness's own tests then leaves no run directory behind. With xdist every worker collects, so every worker
starts a writer into the same folder.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from webeval.agent.episode import Episode
from webeval.outcomes import epochs
from webeval.outcomes.disk import disk_error
from webeval.outcomes.reconcile import reconcile
from webeval.outcomes.record import Outcome
from webeval.outcomes.redact import redact
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.spending import cost_environment, record_cost, record_tokens
from webeval.outcomes.verdict import Verdict
from webeval.plugin.allure_writes import guard
from webeval.plugin.keys import ATTEMPT, RECORD, RUN_DIR, TASK, dry_run, finished_run_dir
from webeval.plugin.unwritten import unwritten
from webeval.report.categories import allure_status, status_message
from webeval.report.run_environment import environment
from webeval.report.identity import (DEFAULT_SUITE_LABELS, full_name, history_id, task_labels, test_case_id)
from webeval.report.results import RESULTS_DIR, complete_results
from webeval.report.links import link_or_copy
from webeval.report.steps import step_length_s, step_parameters, step_title
from webeval.tasks import Task

_POPULATION = pytest.StashKey[str]()
_COMPLETED = pytest.StashKey[tuple[Path, int, int]]()  # results folder, placeholders, N
LISTENER = "allure_listener"  # the name allure-pytest registers its listener under


def allure_loaded(config: pytest.Config) -> bool:
    return config.pluginmanager.has_plugin("allure_pytest")


def results_dir(config: pytest.Config) -> Path | None:
    explicit = getattr(config.option, "allure_report_dir", None)
    if explicit:
        return Path(explicit).absolute()
    run_dir: RunDir | None = config.stash.get(RUN_DIR, None)
    return run_dir.path.absolute() / RESULTS_DIR if run_dir is not None else None


def _start_writer(config: pytest.Config, folder: Path) -> None:
    """What allure-pytest's pytest_configure does when given --alluredir, done once we know tasks will run."""
    from allure_commons import plugin_manager
    from allure_commons.logger import AllureFileLogger
    from allure_pytest.listener import AllureListener

    listener = AllureListener(config)
    config.pluginmanager.register(listener, LISTENER)
    plugin_manager.register(listener)
    writer = AllureFileLogger(str(folder))  # never cleaned: a resumed run adds to the same folder
    plugin_manager.register(writer)
    config.option.allure_report_dir = str(folder)
    config.add_cleanup(lambda: plugin_manager.unregister(writer))
    config.add_cleanup(lambda: plugin_manager.unregister(listener))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    if dry_run(config) or not allure_loaded(config) or not any(TASK in item.stash for item in session.items):
        return
    folder = results_dir(config)
    if folder is not None and not config.pluginmanager.get_plugin(LISTENER):
        _start_writer(config, folder)
    if config.pluginmanager.get_plugin(LISTENER) is not None:
        guard(config, session)


def _population_name(config: pytest.Config) -> str:
    if _POPULATION not in config.stash:
        run_dir: RunDir = config.stash[RUN_DIR]
        config.stash[_POPULATION] = run_dir.population().name
    return config.stash[_POPULATION]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if TASK in item.stash:
        if report.when == "teardown":
            # allure-pytest has set its labels and history id by now, and writes the result after this report.
            listener = item.config.pluginmanager.get_plugin(LISTENER)
            result = listener.allure_logger.get_test(None) if listener is not None else None
            if result is not None:
                try:
                    decorate(item, result)
                except Exception as exc:  # a report detail must never change a task's outcome
                    item.warn(pytest.PytestWarning(f"webeval: Allure details of {item.nodeid} are incomplete: {exc!r}"))
    return report


def forget(item: pytest.Item) -> None:
    """A task that will not start after all (--cost-limit): allure-pytest has scheduled a result for it already, one
    without the task's identity; it is dropped, and the task's placeholder stands for it as for any missing task."""
    listener = item.config.pluginmanager.get_plugin(LISTENER)
    uuid = listener._cache.pop(item.nodeid) if listener is not None else None
    if uuid is not None:
        listener.allure_logger.drop_test(uuid)


def decorate(item: pytest.Item, result: Any) -> None:
    from allure_commons.model2 import Label, Parameter, StatusDetails
    from allure_pytest.utils import pytest_markers

    task: Task = item.stash[TASK]
    population = _population_name(item.config)
    attempt = item.stash.get(ATTEMPT, None)
    episode = attempt.episode if attempt is not None else None
    verdict = attempt.verdict if attempt is not None else None
    folder = episode.folder if episode is not None else None
    run_dir: RunDir = item.config.stash[RUN_DIR]

    result.name = task.id
    result.fullName = full_name(population, task.id)
    result.testCaseId = test_case_id(population, task.id)
    result.historyId = history_id(population, task.id)
    result.titlePath = [population, task.site]
    result.description = f"**Goal:** {task.goal}\n\n**Start:** {redact(task.start_url)}" + (
        f"\n\n**Attempt folder:** `{folder.relative_to(run_dir.path)}`" if folder is not None else "")

    markers = set(pytest_markers(item))  # allure-pytest turns markers such as `asyncio` into tags: noise here
    labels = [label for label in result.labels
              if label.name not in DEFAULT_SUITE_LABELS and not (label.name == "tag" and label.value in markers)]
    labels += [Label(name=name, value=value) for name, value in task_labels(population, task.site, task.id, task.tags)]

    record = item.stash.get(RECORD, None)
    outcome = record.outcome if record is not None else Outcome.harness_error
    labels.append(Label(name="outcome", value=outcome.value))
    if outcome is not Outcome.passed:
        fclass = record.failure_class.value if record is not None and record.failure_class else None
        if fclass:
            labels.append(Label(name="failure_class", value=fclass))
        details = result.statusDetails or StatusDetails()
        details.message = status_message(outcome, record.reason if record else "no outcome was recorded",
                                         kind=record.kind if record else None, failure_class=fclass)
        result.statusDetails = details
    result.status = allure_status(outcome)
    result.labels = labels

    kept = [p for p in result.parameters if p.name != "task"]
    result.parameters = [Parameter(name="task", value=task.id), *kept,
                         Parameter(name="worker", value=record.worker if record else "main", excluded=True),
                         Parameter(name="attempt", value=str(record.attempt if record else 0), excluded=True),
                         Parameter(name="run id", value=run_dir.run_id, excluded=True)]
    for name, shown in (("tokens", record_tokens), ("cost", record_cost)):
        value = shown(record) if record is not None else None
        if value is not None:
            result.parameters.append(Parameter(name=name, value=value, excluded=True))
    if episode is not None:
        _add_steps(result, episode, results_dir(item.config))
        _add_outcome(result, episode, verdict)


def _attach(owner: Any, name: str, mime: str, ext: str, *, data: bytes | str | None = None,
            source: Path | None = None, into: Path | None = None) -> None:
    """Write an attachment through Allure's writer (ours or allure-pytest's) and list it on a step or result; a file
    that is not text is linked into the results folder `into` (webeval.report.links), not copied."""
    from allure_commons import plugin_manager
    from allure_commons.model2 import Attachment

    file_name = f"{uuid.uuid4()}-attachment.{ext}"
    if mime.startswith("text/") or mime == "application/json":
        # Text goes out through redact: a URL the agent visited may carry credentials, and reports are shared.
        text = source.read_text(encoding="utf-8", errors="replace") if source is not None else data
        plugin_manager.hook.report_attached_data(body=redact(text), file_name=file_name)
    elif source is not None and into is not None:
        link_or_copy(source, into / file_name)
    elif source is not None:
        plugin_manager.hook.report_attached_file(source=str(source), file_name=file_name)
    else:
        plugin_manager.hook.report_attached_data(body=data, file_name=file_name)
    owner.attachments.append(Attachment(name=name, source=file_name, type=mime))


def _add_steps(result: Any, episode: Episode, into: Path | None) -> None:
    from allure_commons.model2 import Parameter, StatusDetails, TestStepResult

    clock = result.start or 0
    for step in episode.steps:
        node = TestStepResult(name=step_title(step.step, step.actions, step.error), stage="finished",
                              status="failed" if step.error else "passed", start=clock,
                              stop=clock + int(step_length_s(step.timings, step.latency_s) * 1000))
        clock = node.stop
        if step.error:
            node.statusDetails = StatusDetails(message=step.error)
        node.parameters = [Parameter(name=name, value=value) for name, value in
                           step_parameters(redact(step.url), step.title, step.results, step.timings, step.usage)]
        screenshot = episode.folder / step.screenshot
        if screenshot.is_file():
            _attach(node, "screenshot", "image/png", "png", source=screenshot, into=into)
        if step.raw:
            _attach(node, "model reply", "text/plain", "txt", data=step.raw)
        if step.actions:  # also what webeval.report.pictures marks the screenshot with
            _attach(node, "actions", "application/json", "json",
                    data=json.dumps(step.actions, indent=2, ensure_ascii=False))
        result.steps.append(node)


def _add_outcome(result: Any, episode: Episode, verdict: Verdict | None) -> None:
    if episode.answer is not None:
        _attach(result, "final answer", "text/plain", "txt", data=episode.answer)
    if verdict is not None:
        _attach(result, f"verdict: {'success' if verdict.success else 'failure'}", "application/json", "json",
                data=verdict.model_dump_json(indent=2))
        if verdict.raw:
            _attach(result, "judge reply", "text/plain", "txt", data=verdict.raw)
    elif episode.infra is not None:
        _attach(result, "infrastructure error", "text/plain", "txt",
                data=f"{episode.infra.kind}: {episode.infra.message}")
    evidence = episode.folder / "evidence.json"
    if evidence.is_file():
        _attach(result, "evidence", "application/json", "json", source=evidence)


def _model_name(config: pytest.Config) -> str | None:
    """The served model's name, as the policy resolved it (its profile), else as the option gave it; never its URL."""
    from webeval.plugin import policies

    return policies.chosen(config).model or getattr(config.option, "policy_model", None)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Once, on the controller: the results complete to N, with the run's environment."""
    config = session.config
    run_dir = finished_run_dir(config)
    folder = results_dir(config)
    if run_dir is None or folder is None or not allure_loaded(config):
        return
    from webeval.runtime.browser import find_chromium

    population = run_dir.population()
    records = run_dir.records()
    from webeval.plugin import policies
    from webeval.plugin.browsers import provider as browser_provider

    provider = browser_provider(config)

    env = environment(population, records, policy=config.option.policy, model=_model_name(config),
                      chromium=find_chromium(config.option.browser_path), root=Path(config.rootpath),
                      recipe=policies.chosen(config).recipe(), browser=(str(provider), provider.input_path))
    summary = reconcile(population, records, run_dir.conventions())
    env["score"] = summary.headline()  # an interval while the run is incomplete
    env.update(epochs.environment(summary.epochs))
    env.update(cost_environment(summary.cost))
    try:
        missing = complete_results(folder, run_dir, env)
    except OSError as exc:
        if disk_error(exc) is None:
            raise
        unwritten(config, "the Allure results of the tasks without one", disk_error(exc), run_dir.path)
        return
    config.stash[_COMPLETED] = (folder, len(missing), population.size)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    completed = config.stash.get(_COMPLETED, None)
    run_dir = config.stash.get(RUN_DIR, None)
    if completed is None or run_dir is None:
        return
    folder, placeholders, n = completed
    terminalreporter.write_line(f"  allure results: {folder} ({n} tasks, {placeholders} without a test result)")
    extra = "" if folder == run_dir.path.absolute() / RESULTS_DIR else f" --results {folder}"
    terminalreporter.write_line(f"  report: webeval report {run_dir.path}{extra}")
