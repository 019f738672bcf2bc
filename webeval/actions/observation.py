"""What the policy sees after each step."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TabInfo:
    id: int
    url: str
    title: str
    active: bool


@dataclass(frozen=True)
class Observation:
    step: int
    screenshot_png: bytes
    size: tuple[int, int]
    url: str
    title: str
    tabs: list[TabInfo] = field(default_factory=list)
    last_result: str | None = None  # what the last action did, or the error to correct
