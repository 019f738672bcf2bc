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
