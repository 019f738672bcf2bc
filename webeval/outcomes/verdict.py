"""A judge's decision on one episode."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    success: bool
    reason: str
    judge: str
    model: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    raw: str | None = None
    protocol: str | None = None  # a model judge's protocol, as --judge-protocol names it
    prompt_version: str | None = None  # which prompt texts it read: a pin or a hash, so verdicts stay comparable
    usage: dict[str, int] = Field(default_factory=dict)  # the judge calls' tokens (prompt, cached, completion, ...)
    cost_usd: float | None = None  # their price, when the judge's profile has a price table
