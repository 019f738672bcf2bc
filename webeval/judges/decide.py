"""From evidence to an outcome: the judge's verdict, or why there is none. Used by a run and by a re-judge alike."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Awaitable, Callable, Literal

from webeval.outcomes.cost import metered
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import FailureClass, InfraError, JudgeError, Outcome
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

Judge = Callable[[Task, Evidence], Awaitable[Verdict]]  # the one judge signature: it reads the evidence only
Unparseable = Literal["mask", "fail"]


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    verdict: Verdict | None = None
    failure_class: FailureClass | None = None
    kind: str | None = None  # of a judge_failed outcome
    reason: str = ""
    judge_usage: dict[str, int] = field(default_factory=dict)  # what the judge's calls used, whatever came of them
    judge_usd: float | None = None


def failure_class_of(task: Task, evidence: Evidence, verdict: Verdict) -> FailureClass:
    """Why an agent failed: its own run's reason first, then the judge's, then what the evidence shows."""
    if evidence.failure_class:
        return FailureClass(evidence.failure_class)
    named = verdict.details.get("failure_class")
    if named:
        return FailureClass(named)
    if evidence.answer is None:
        return FailureClass.no_answer
    if task.verifier and task.verifier.state and not task.verifier.answer:
        return FailureClass.wrong_state
    return FailureClass.wrong_answer


async def decide(task: Task, evidence: Evidence, judge: Judge, unparseable: Unparseable = "mask") -> Decision:
    """The outcome of a finished episode. A judge that fails masks the attempt (judge_failed), never scores it 0;
    with `unparseable="fail"` a reply with no readable verdict counts as a failure (NeMo Gym's convention).
    The judge's calls are metered: the decision (and its verdict) carry their tokens and, where priced, their cost
    (a verdict from the cache cost nothing)."""
    with metered() as meter:
        decision = await _decide(task, evidence, judge, unparseable)
    if not meter.calls:
        return decision
    usage, usd = meter.usage(), meter.usd
    verdict = decision.verdict
    if verdict is not None:
        verdict = verdict.model_copy(update={"usage": usage, "cost_usd": usd})
    return replace(decision, verdict=verdict, judge_usage=usage, judge_usd=usd)


async def _decide(task: Task, evidence: Evidence, judge: Judge, unparseable: Unparseable) -> Decision:
    if evidence.failure_class:
        # The agent's own run decided it: no answer, a budget spent, invalid output, the last tab closed.
        verdict = Verdict(success=False, reason=evidence.reason, judge="agent")
        return Decision(Outcome.failed, verdict, FailureClass(evidence.failure_class), reason=evidence.reason)
    try:
        verdict = await judge(task, evidence)
    except InfraError as exc:  # what the evidence shows was not the agent's to pass: a bot wall, a CAPTCHA
        return Decision(Outcome.infra_error, kind=exc.kind, reason=f"infra[{exc.kind}]: {exc.message}")
    except JudgeError as exc:
        if exc.kind == "unparseable" and unparseable == "fail":
            verdict = Verdict(success=False, reason=f"the judge's reply could not be read: {exc}", judge="unparseable",
                              details={"failure_class": FailureClass.judge_unparseable.value})
            return Decision(Outcome.failed, verdict, FailureClass.judge_unparseable, reason=verdict.reason)
        return Decision(Outcome.judge_failed, kind=exc.kind, reason=f"judge_failed: {exc}")
    if verdict.success:
        return Decision(Outcome.passed, verdict)
    return Decision(Outcome.failed, verdict, failure_class_of(task, evidence, verdict), reason=verdict.reason)
