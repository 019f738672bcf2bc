"""What a trainer asks for: one rollout of one task, in a group, with a seed, against a policy endpoint.

A request is validated before anything runs; a bad one (an unknown field, a negative seed, a sampling parameter out of
its range or of the wrong type) is a RequestError with one line that names the field, and the others go on.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator

SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,199}$")  # a file-name-safe id: it names folders and lines
MAX_SEED = (1 << 63) - 1


class RequestError(ValueError):
    """A request that cannot run; the message is one line that says which field and why."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Sampling(_Strict):
    """Sampling parameters sent to the endpoint with every turn; None leaves a parameter to the profile."""

    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: StrictInt | None = Field(default=None, ge=-1)
    min_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: StrictInt | None = Field(default=None, ge=1, le=1_000_000)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    repetition_penalty: float | None = Field(default=None, gt=0, le=10)
    stop: list[str] | None = Field(default=None, max_length=16)

    def given(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class PolicyEndpoint(_Strict):
    """Where the policy is served and how it samples; what is not given comes from the engine's profile."""

    base_url: str | None = None
    model: str | None = Field(default=None, min_length=1)
    sampling: Sampling = Sampling()

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value


class RolloutRequest(_Strict):
    task_id: str = Field(min_length=1, max_length=300)
    group_id: str
    sample_index: StrictInt = Field(ge=0, le=1_000_000)
    seed: StrictInt = Field(ge=0, le=MAX_SEED)
    policy: PolicyEndpoint = PolicyEndpoint()
    policy_version: str = Field(default="", max_length=200)
    rollout_id: str | None = None
    curriculum: dict[str, Any] | None = None  # the sampler's choice, copied into the record

    @field_validator("group_id", "rollout_id")
    @classmethod
    def _safe(cls, value: str | None) -> str | None:
        if value is not None and not SAFE_ID.match(value):
            raise ValueError(f"{value[:60]!r} is not a safe id (letters, digits and ._:@+=-, at most 200)")
        return value

    @field_validator("policy_version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @property
    def id(self) -> str:
        """The rollout's id: given, or its group and index."""
        return self.rollout_id or f"{self.group_id}.{self.sample_index}"


def parse_request(data: Any, where: str = "request") -> RolloutRequest:
    """A request from JSON-like data, or a RequestError naming the first field that is wrong."""
    if isinstance(data, RolloutRequest):
        return data
    try:
        return RolloutRequest.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "body"
        raise RequestError(f"{where}: {field}: {error['msg']}") from None
