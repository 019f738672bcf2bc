"""What every policy is: observation in, tool calls out. Validation is the agent's job, not the policy's."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from webeval.actions import Observation
from webeval.outcomes.record import FailureClass
from webeval.tasks import Task


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, exactly as received: parsing it is part of validation

    @classmethod
    def of(cls, name: str, **arguments: Any) -> "ToolCall":
        return cls(name, json.dumps(arguments, ensure_ascii=False))


@dataclass
class PolicyTurn:
    """One reply of the policy.

    `invalid` is a reply the adapter could not read (the message goes back to the model and counts against the
    bounded parse attempts, like an invalid tool call); `end` ends the episode as failed with that class and reason
    (a refusal, a replay that diverged).
    """

    calls: list[ToolCall]
    raw: str | None = None  # the model's reply as received, for the trajectory
    usage: dict[str, int] = field(default_factory=dict)  # prompt, cached, completion and reasoning tokens
    retries: int = 0
    latency_s: float = 0.0
    invalid: str | None = None
    end: tuple[FailureClass, str] | None = None
    tokens: dict[str, list] | None = None  # prompt and generation token ids and log-probabilities, as received


class Policy(Protocol):
    name: str
    model: str | None

    async def begin(self, task: Task) -> None: ...

    async def act(self, observation: Observation) -> PolicyTurn: ...

    async def end(self) -> None: ...
