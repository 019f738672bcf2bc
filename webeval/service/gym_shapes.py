"""The JSON the rollout service speaks, in NeMo Gym's shapes (docs/training.md, "The rollout service").

NeMo Gym's resources server seeds a session (`/seed_session`), exposes one route per tool, and answers `/verify` with
the verify request plus a `reward`; its agent server runs a whole episode with `/run` from a request holding
`responses_create_params` and answers with the same verify response. NeMo Gym's simple agent posts the whole dataset
row to `/seed_session` and to `/verify`, so those requests accept fields they do not use. What this service adds are
the mask fields NeMo-RL reads to drop a broken sample (`mask_sample`, with `failure_kind` and `failure_reason`): a
masked sample has `reward: null`, never 0.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from webeval.rollouts.records import RolloutIdentity


class _Open(BaseModel):
    """A request that carries the rest of a dataset row: fields it does not name are accepted and ignored."""

    model_config = ConfigDict(extra="allow")


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskReference(_Open):
    """Which task a rollout runs, in which group, with which seed: a RolloutRequest's identity."""

    task_id: str = Field(min_length=1, max_length=300)
    group_id: str | None = None  # default: the task id
    sample_index: StrictInt = 0
    seed: StrictInt = 0
    policy_version: str | StrictInt = ""
    rollout_id: str | None = None  # default: made by the service, unique


class SeedSessionRequest(TaskReference):
    """NeMo Gym's BaseSeedSessionRequest: the task to seed a step session with."""


class Screenshot(_Closed):
    url: str  # on this service, readable with the session's cookie
    width: int
    height: int
    sha256: str


class Tab(_Closed):
    id: int
    url: str
    title: str
    active: bool


class Observation(_Closed):
    """What a tool route answers: the screen after the call, or `done` once the episode has ended."""

    session_id: str
    step: int
    done: bool = False
    screenshot: Screenshot | None = None
    url: str = ""
    title: str = ""
    tabs: list[Tab] = Field(default_factory=list)
    last_result: str | None = None  # what the call did, or the action contract's error for an invalid call
    text: str = ""  # for a person reading it: what to do next


class SeedSessionResponse(Observation):
    """NeMo Gym's BaseSeedSessionResponse, with the session's first observation and what the agent needs."""

    rollout_id: str
    task_id: str
    goal: str
    tools: list[dict[str, Any]]  # the action contract as OpenAI function tools


class VerifyRequest(_Open):
    """NeMo Gym's BaseVerifyRequest: the session is the cookie's; what the client sends is echoed back."""

    responses_create_params: dict[str, Any] | None = None
    response: dict[str, Any] | None = None


class VerifyResponse(_Closed, RolloutIdentity):
    """NeMo Gym's BaseVerifyResponse with the mask fields and the rollout's identity; a masked sample's reward is
    null."""

    responses_create_params: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    reward: float | None
    mask_sample: bool
    failure_kind: str | None = None
    failure_reason: str = ""
    verifier: dict[str, Any] | None = None
    steps: int = 0
    truncated: bool = False
    outcome: str = ""
    history: str | None = None
    attempt_path: str | None = None  # the attempt's folder, relative to the service's collection folder
    timings: dict[str, float] = Field(default_factory=dict)


class CloseSessionResponse(VerifyResponse):
    session_id: str
    closed: bool = True


class ResponsesCreateParams(_Open):
    """NeMo Gym's NeMoGymResponseCreateParamsNonStreaming, the parts an episode uses: the model's name and its
    sampling. `input` (the dataset's prompt) and other fields are echoed back, not sent: the prompt is the policy
    profile's, the same one evaluation uses. `tools`, when given, must be the action contract's."""

    input: str | list[dict[str, Any]] = Field(default_factory=list)
    model: str | None = Field(default=None, min_length=1)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_output_tokens: StrictInt | None = Field(default=None, ge=1, le=1_000_000)


class RunRequest(TaskReference):
    """NeMo Gym's BaseRunRequest with the task reference beside it (a dataset row)."""

    responses_create_params: ResponsesCreateParams
    policy_base_url: str | None = None  # honoured only when the service allows a request to name its endpoint


class AggregateMetricsRequest(_Open):
    verify_responses: list[dict[str, Any]]


class AggregateMetrics(_Closed):
    """NeMo Gym's AggregateMetrics: per task, over all rollouts, and the headline figures."""

    group_level_metrics: list[dict[str, Any]] = Field(default_factory=list)
    agent_metrics: dict[str, Any] = Field(default_factory=dict)
    key_metrics: dict[str, Any] = Field(default_factory=dict)


class Health(_Closed):
    status: str  # ok | stopped
    suite: str
    slots: int
    free_slots: int
    sessions: int
    in_flight: int
    stopped: str | None = None
