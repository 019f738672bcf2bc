"""What a trainer gets back: one record per rollout, its turns token-exact, its reward, or a mask and why.

The reward is the task's own verdict: 1 for a pass and 0 for an agent's failure (or the benchmark's graded reward,
such as MiniWoB's page reward). Everything evaluation masks is masked here too: `mask_sample` true, `reward` null,
with a `failure_kind` and a reason; infrastructure never reaches a trainer as a 0. Screenshots stay on disk, written
once; a turn references them by path (relative to the collection's folder, or on Ray to `node_root` on `node`) and
sha256.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from webeval.agent.client_policy import SESSION_EXPIRED
from webeval.outcomes.record import AttemptRecord, FailureClass, Outcome

# Kinds of mask the engine adds to those of an attempt record (infra_error[<kind>], judge_failed[<kind>], ...).
CUT = "cut"  # a straggler cancelled once the batch reached its completion threshold and grace
INTERRUPTED = "interrupted"  # the collection was stopped (Ctrl-C, SIGTERM) with the rollout in flight
HARNESS_ERROR = "harness_error"  # a bug of the harness: never a reward, always reported
NODE_LOST = "node_lost"  # the node (or actor) running it died
# SESSION_EXPIRED: a session of the step service not stepped within its time to live (its policy raises it as an
# infra kind; the rollout reports it under its own name)
OWN_NAMED = frozenset({SESSION_EXPIRED})
TRUNCATING = (FailureClass.step_budget, FailureClass.time_budget)


class ImageRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str  # relative to the collection's folder
    sha256: str


class TurnRecord(BaseModel):
    step: int
    prompt_token_ids: list[int] | None = None
    generation_token_ids: list[int] | None = None
    generation_log_probs: list[float] | None = None
    image_refs: list[ImageRef] = Field(default_factory=list)  # the screenshot the policy saw at this turn
    action: list[dict[str, Any]] = Field(default_factory=list)  # the validated actions, as executed
    error: str | None = None  # the turn's reply was invalid: what the policy was told
    timings: dict[str, float] = Field(default_factory=dict)


class RolloutIdentity(BaseModel):
    """Which rollout: of which task, in which group, with which seed, under which policy versions. A record and
    the rollout service's verify response both carry it."""

    rollout_id: str
    task_id: str
    group_id: str
    sample_index: int
    seed: int
    policy_version_start: str = ""
    policy_version_end: str = ""


class RolloutRecord(RolloutIdentity):
    model_config = ConfigDict(extra="ignore")

    turns: list[TurnRecord] = Field(default_factory=list)
    reward: float | None = None
    mask_sample: bool = True
    failure_kind: str | None = None  # masked: why (infra_error[browser], cut, ...); reward 0: the agent's failure
    failure_reason: str = ""
    verifier: dict[str, Any] | None = None  # the verdict: who judged, success, reason, details
    steps: int = 0
    truncated: bool = False  # the episode was ended by a budget, not by the agent
    timings: dict[str, float] = Field(default_factory=dict)
    outcome: str = ""  # the evaluation outcome it maps from (passed, failed, infra_error, ...)
    history: str | None = None  # windowed | append-only: how the policy's prompt was kept (None: no model)
    attempt_path: str | None = None  # the attempt's folder, relative to the collection's folder (or node_root)
    curriculum: dict[str, Any] | None = None
    slot: str | None = None
    node: str | None = None  # the Ray node that ran it (None: this machine)
    node_root: str | None = None  # the folder on `node` that attempt_path and image paths are relative to


def reward_of(verdict: dict[str, Any] | None, passed: bool) -> float:
    """The benchmark's graded reward when its verdict gives one, else 1 for a pass and 0 for a failure."""
    graded = (verdict or {}).get("reward")
    if isinstance(graded, (int, float)) and not isinstance(graded, bool):
        return float(graded)
    return 1.0 if passed else 0.0


def scored(record: AttemptRecord) -> dict[str, Any]:
    """reward, mask_sample, failure_kind, failure_reason and truncated, from an attempt's outcome."""
    if record.outcome.valid:
        passed = record.outcome is Outcome.passed
        failure = record.failure_class
        return {"reward": reward_of(record.verdict, passed), "mask_sample": False,
                "failure_kind": None if passed else (failure.value if failure else "failed"),
                "failure_reason": "" if passed else record.reason, "truncated": failure in TRUNCATING}
    kind = record.kind if record.outcome is Outcome.infra_error and record.kind in OWN_NAMED else record.masked_key
    return masked(kind, record.reason)


def masked(kind: str, reason: str) -> dict[str, Any]:
    return {"reward": None, "mask_sample": True, "failure_kind": kind, "failure_reason": reason, "truncated": False}


def turn_records(steps: list[Any], folder_from_root: str) -> list[TurnRecord]:
    """The turns of an episode (its StepRecords), screenshots referenced where they lie."""
    turns = []
    for step in steps:
        tokens = step.tokens or {}
        turns.append(TurnRecord(
            step=step.step, image_refs=[ImageRef(path=f"{folder_from_root}/{step.screenshot}",
                                                 sha256=step.screenshot_sha256)],
            action=step.actions, error=step.error, timings=step.timings, **tokens))
    return turns
