"""Each task file verifier as a judge over the evidence, and the page probe that puts the page's text into it.

The answer, final-URL and page verifiers are programmatic; a rubric goes to a model judge with its criteria added
to the task, so the judge's protocol (screenshots outrank the answer; every part must be done) covers them too.
"""

from __future__ import annotations

from typing import Any, Mapping

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from webeval.agent.environment import Environment, PageHooks, Prepared
from webeval.benchmarks.tasks.spec import Match, PageProbe, TaskEntry
from webeval.judges.decide import Judge
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import FailureClass, JudgeError
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

STATE_KEY = "probe"  # the evidence's state holds the probed text under this key
NAME = "task-file"
# The first element's text as a person sees it (innerText), or why there is none; `error` for a selector that is
# not CSS, so that the task's bug is not taken for the agent's failure.
READ_PROBE = """(selector) => {
  let element;
  try { element = document.querySelector(selector); } catch (e) { return {error: String(e.message || e)}; }
  return element ? {text: element.innerText} : {text: null};
}"""


class Probe(PageHooks):
    def __init__(self, probe: PageProbe) -> None:
        self.probe = probe

    async def state(self, page: Page) -> dict[str, Any]:
        try:
            read = await page.evaluate(READ_PROBE, self.probe.selector)
        except PlaywrightError as exc:  # a page between two documents, or gone: nothing to read
            read = {"text": None, "unread": str(exc).splitlines()[0]}
        return {STATE_KEY: {"selector": self.probe.selector, "url": page.url, **read}}


class TaskFileSites(Environment):
    """Tasks run against their sites as written; a page verifier's probe reads the page before the context closes."""

    def __init__(self, entries: Mapping[str, TaskEntry]) -> None:
        self.entries = entries

    def prepare(self, task: Task) -> Prepared:
        entry = self.entries.get(task.id)
        return Prepared(task=task, page=Probe(entry.page) if entry is not None and entry.page is not None else None)


def _verdict(check: Match, what: str, seen: str | None, failure: FailureClass) -> Verdict:
    details = {"verifier": what, "kind": check.kind, "expected": check.expected, "seen": seen}
    if seen is not None and check.holds(seen):
        return Verdict(success=True, reason=f"the {what} is {check.describe()}", judge=NAME, details=details)
    reason = f"the {what} {seen!r} is not {check.describe()}" if seen is not None else f"there is no {what}"
    return Verdict(success=False, reason=reason, judge=NAME, details={**details, "failure_class": failure.value})


def _probed(entry: TaskEntry, evidence: Evidence) -> Verdict:
    probe = entry.page
    read = (evidence.state or {}).get(STATE_KEY)
    if not isinstance(read, dict):
        raise JudgeError(f"{evidence.folder}: the evidence holds no page probe (state.{STATE_KEY}): was the episode "
                         "run by webeval.benchmarks.tasks?", kind="config")
    if read.get("error"):
        raise JudgeError(f"task {entry.id}: the selector {probe.selector!r} is not CSS: {read['error']}", kind="config")
    verdict = _verdict(probe, f"text of {probe.selector!r}", read.get("text"), FailureClass.wrong_state)
    if read.get("text") is None:
        return verdict.model_copy(update={"reason": f"no element matches {probe.selector!r} on {read.get('url')}"})
    return verdict


def judge_of(entries: Mapping[str, TaskEntry], model: Judge | None) -> Judge:
    """The judge of a task file: each task by its own verifier; `model` judges rubrics (None: not configured)."""

    async def judge(task: Task, evidence: Evidence) -> Verdict:
        entry = entries.get(task.id)
        if entry is None:
            raise JudgeError(f"task {task.id} is not in the task file", kind="config")
        if entry.answer is not None:
            return _verdict(entry.answer, "answer", evidence.answer, FailureClass.wrong_answer)
        if entry.url is not None:
            return _verdict(entry.url, "final URL", evidence.final_url or None, FailureClass.wrong_state)
        if entry.page is not None:
            return _probed(entry, evidence)
        if model is None:
            raise JudgeError(f"task {task.id} has a rubric and no judge is configured: pass --judge-base-url and "
                             "--judge-model (or --judge-profile), then re-judge with --rejudge", kind="config")
        return await rubric_verdict(model, task, entry, evidence)

    return judge


async def rubric_verdict(model: Judge, task: Task, entry: TaskEntry, evidence: Evidence) -> Verdict:
    criteria = "\n".join(f"- {criterion}" for criterion in entry.criteria)
    goal = f"{evidence.goal or task.goal}\n\nThe task is accomplished only when all of these hold:\n{criteria}"
    verdict = await model(task, evidence.model_copy(update={"goal": goal}))
    return verdict.model_copy(update={"judge": f"{NAME}-rubric ({verdict.judge})",
                                      "details": {**verdict.details, "rubric": entry.rubric}})
