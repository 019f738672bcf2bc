"""Outcomes of one attempt at a task, as written one per line to a run's results.jsonl."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Outcome(str, Enum):
    passed = "passed"
    failed = "failed"
    infra_error = "infra_error"
    judge_failed = "judge_failed"
    not_run = "not_run"
    harness_error = "harness_error"

    @property
    def valid(self) -> bool:
        """A valid outcome scores; every other one masks the task and leaves the run incomplete."""
        return self in _VALID


_VALID = frozenset({Outcome.passed, Outcome.failed})


class FailureClass(str, Enum):
    wrong_answer = "wrong_answer"
    wrong_state = "wrong_state"
    no_answer = "no_answer"
    gave_up = "gave_up"
    step_budget = "step_budget"
    time_budget = "time_budget"
    invalid_output = "invalid_output"
    refusal = "refusal"
    closed_last_tab = "closed_last_tab"
    judge_unparseable = "judge_unparseable"
    replay_diverged = "replay_diverged"
    safety_check = "safety_check"  # a hosted computer-use model's pending safety check, not acknowledged


class _OfKind(Exception):
    """An error of a named kind (`browser`, `site_unreachable`, ...), which says `kind: message`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class InfraError(_OfKind):
    """The episode broke for a reason that is not the model's: it is masked, never scored as 0."""


class JudgeError(Exception):
    """The judge could not give a verdict: the attempt is judge_failed, masked and re-judgeable from its evidence.

    `kind` is one of transport, timeout, auth, http, schema, unparseable (no readable verdict after the re-asks,
    an empty reply or a refusal), config (no judge is configured).
    """

    def __init__(self, message: str, kind: str = "transport") -> None:
        super().__init__(message)
        self.kind = kind


class NotRun(_OfKind):
    """A precondition failed before the first action (site unreachable, no display, a missing credential)."""


class AttemptRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    run_id: str
    session: str = ""  # the pytest session that made it (shared by its xdist workers)
    task_id: str
    site: str = ""
    attempt: int = 1
    outcome: Outcome
    failure_class: FailureClass | None = None
    kind: str | None = None  # the infra / precondition kind of a masked outcome
    reason: str = ""
    answer: str | None = None
    steps: int = 0
    duration_s: float = 0.0
    verdict: dict[str, Any] | None = None
    worker: str = "main"
    finished_at: str = ""
    path: str | None = None  # the attempt folder, relative to the run directory
    usage: dict[str, float] = Field(default_factory=dict)  # policy tokens, retries and seconds over the attempt
    judge_usage: dict[str, float] = Field(default_factory=dict)  # the judge's tokens for this attempt's verdict
    cost_usd: dict[str, float] = Field(default_factory=dict)  # "policy", "judge": a side with a price table only
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def masked_key(self) -> str:
        """How a masked record is counted in a summary: `infra_error[browser]`, `judge_failed[timeout]`, ..."""
        return f"{self.outcome.value}[{self.kind}]" if self.kind else self.outcome.value
