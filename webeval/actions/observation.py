"""What the policy sees after each step."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Box:
    """A rectangle on the screen, in pixels of the screenshot (page pixels are screen pixels)."""

    x: float
    y: float
    width: float
    height: float

    @property
    def centre(self) -> tuple[int, int]:
        return int(self.x + self.width / 2), int(self.y + self.height / 2)


@dataclass(frozen=True)
class Element(Box):
    """An element a person could act on: its tag, its input type or ARIA role ("" when neither), its text."""

    tag: str
    kind: str
    text: str


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
