"""The task contract: what one benchmark task is, as frozen data."""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Inner single spaces are allowed: WebVoyager's own ids read "BBC News--3".
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*(?: [A-Za-z0-9_.\-]+)*")
# An http(s) URL with a host, as urlsplit reads it; anything else (brackets, spaces, odd cases) goes to urlsplit.
_PLAIN_HTTP_URL = re.compile(r"https?://[^/?#\[\]\s\\]+(?:[/?#]|$)", re.IGNORECASE)


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StateCheck(Frozen):
    """One check of a site's server-side state, read back after the episode.

    `path` is dotted into the state document (`shop.cart`); exactly one of `equals` / `contains` is given.
    `contains` on a list means every listed item is in it; on a dict, every listed key has that value.
    """

    path: str
    equals: Any = None
    contains: Any = None

    @model_validator(mode="after")
    def _one_expectation(self) -> "StateCheck":
        given = {"equals", "contains"} & self.model_fields_set
        if len(given) != 1:
            raise ValueError("a state check needs exactly one of 'equals' or 'contains'")
        return self


class VerifierSpec(Frozen):
    """A programmatic verifier: the answer matches a reference (normalized) and the state checks hold."""

    answer: list[str] | None = None
    state: list[StateCheck] = Field(default_factory=list)

    @model_validator(mode="after")
    def _checks_something(self) -> "VerifierSpec":
        if not self.answer and not self.state:
            raise ValueError("a verifier needs 'answer' references or 'state' checks")
        return self


class OracleStep(Frozen):
    """One step of a task's built-in solution, against the page: selectors and text, never coordinates.

    `selector` is a Playwright selector; the oracle resolves it to screen coordinates at run time and acts
    through the same executor a model's actions take. A drag goes from `selector`'s centre to `to`'s.
    """

    do: Literal["click", "double_click", "type", "key", "scroll", "navigate", "back", "answer", "drag"]
    selector: str | None = None
    to: str | None = None
    text: str | None = None
    keys: list[str] | None = None
    direction: Literal["up", "down"] | None = None
    amount: int | None = None
    url: str | None = None

    @model_validator(mode="after")
    def _fields_for_step(self) -> "OracleStep":
        needs = {
            "click": ("selector",),
            "double_click": ("selector",),
            "type": ("text",),
            "key": ("keys",),
            "scroll": ("direction",),
            "navigate": ("url",),
            "answer": ("text",),
            "drag": ("selector", "to"),
        }.get(self.do, ())
        missing = [name for name in needs if getattr(self, name) is None]
        if missing:
            raise ValueError(f"oracle step {self.do!r} needs {', '.join(missing)}")
        return self


class Task(Frozen):
    """One task. A rubric is WebGym's: fact groups, each the criteria that check one fact; the task succeeds when
    every group holds. `difficulty` is the number of fact groups (given for a rubric task, or set by hand for
    another), `domain` the kind of site (WebGym's: travel, shopping, ...), `parent` the task a decomposed task was
    made from."""

    id: str
    site: str
    goal: str = Field(min_length=1)
    start_url: str
    domain: str | None = Field(default=None, min_length=1)
    reference_answers: list[str] | None = None
    verifier: VerifierSpec | None = None
    rubric: list[list[str]] | None = None
    difficulty: int | None = Field(default=None, ge=1)
    parent: str | None = None
    solution: list[OracleStep] | None = None
    max_steps: int | None = Field(default=None, ge=1)
    tags: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _difficulty_of_rubric(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("rubric"), list) and data.get("difficulty") is None:
            return {**data, "difficulty": len(data["rubric"]) or None}
        return data

    @field_validator("rubric")
    @classmethod
    def _fact_groups(cls, value: list[list[str]] | None) -> list[list[str]] | None:
        if value is None:
            return value
        if not value:
            raise ValueError("a rubric needs at least one fact group")
        for g, group in enumerate(value, 1):
            if not group:
                raise ValueError(f"fact group {g} has no criterion")
            for c, criterion in enumerate(group, 1):
                if not criterion.strip():
                    raise ValueError(f"criterion {c} of fact group {g} is empty")
        return value

    @model_validator(mode="after")
    def _difficulty_is_groups(self) -> "Task":
        if self.rubric is not None and self.difficulty != len(self.rubric):
            raise ValueError(f"difficulty {self.difficulty} is not the number of fact groups ({len(self.rubric)})")
        return self

    @field_validator("id")
    @classmethod
    def _safe_id(cls, value: str) -> str:
        if not SAFE_ID.fullmatch(value) or ".." in value:
            raise ValueError(
                f"task id {value!r} is not a safe path segment (letters, digits, '_', '-', '.', inner spaces)")
        return value

    @field_validator("start_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if _PLAIN_HTTP_URL.match(value):  # the common case, without urlsplit's cost (300,000 tasks in a set)
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"start_url {value!r} is not an http(s) URL")
        return value

    def with_origin(self, old: str, new: str) -> "Task":
        """The same task with its start URL moved from one origin to another (offline sites, site maps)."""
        rest = self.start_url[len(old):]
        if not self.start_url.startswith(old) or (rest and rest[0] not in "/?#"):
            return self
        return self.model_copy(update={"start_url": new + self.start_url[len(old):]})
