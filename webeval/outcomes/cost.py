"""Tokens and their price: what a model call used (read off the reply's `usage`), a price table, and a meter that
adds up the calls of one judgement.

Token counts follow OpenAI's usage object: `prompt_tokens` include the cached ones (`prompt_tokens_details.
cached_tokens`), `completion_tokens` include the reasoning ones (`completion_tokens_details.reasoning_tokens`); the
Responses API says `input_tokens` / `output_tokens` with `input_tokens_details` / `output_tokens_details`. So a call
costs (prompt - cached) x input + cached x cached input + completion x output, each price per million tokens.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, Mapping

from pydantic import BaseModel, ConfigDict, Field

TOKENS = ("prompt_tokens", "cached_tokens", "completion_tokens", "reasoning_tokens")
_NAMES = {"prompt_tokens": ("prompt_tokens", "input_tokens"),
          "completion_tokens": ("completion_tokens", "output_tokens")}
_DETAILS = {"cached_tokens": ("prompt_tokens_details", "input_tokens_details"),
            "reasoning_tokens": ("completion_tokens_details", "output_tokens_details")}


class Prices(BaseModel):
    """A price table, in US dollars per million tokens (a profile's `[prices]`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)  # not given: cached tokens cost as much as any input
    output: float = Field(ge=0)

    def usd(self, usage: Mapping[str, float]) -> float:
        prompt = usage.get("prompt_tokens", 0)
        cached = min(usage.get("cached_tokens", 0), prompt)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return ((prompt - cached) * self.input + cached * cached_price
                + usage.get("completion_tokens", 0) * self.output) / 1e6


def _number(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def read_usage(usage: Any) -> dict[str, int]:
    """The tokens of one call from its reply's `usage` (chat completions' names or the Responses API's): prompt and
    completion as reported, cached and reasoning where the details report more than none."""
    if not isinstance(usage, Mapping):
        return {}
    counted: dict[str, int] = {}
    for key, names in _NAMES.items():
        value = next((_number(usage[name]) for name in names if _number(usage.get(name)) is not None), None)
        if value is not None:
            counted[key] = value
    for key, places in _DETAILS.items():
        details = next((usage[place] for place in places if isinstance(usage.get(place), Mapping)), {})
        value = _number(details.get(key))
        if value:
            counted[key] = value
    return counted


class Meter:
    """The tokens and dollars of the calls made while it is open; `usd` is None once a call that used tokens had no
    price (a partial sum would read as the whole)."""

    def __init__(self) -> None:
        self.tokens: Counter[str] = Counter()
        self.calls = 0
        self._usd = 0.0
        self._unpriced = 0

    def add(self, usage: Mapping[str, int], prices: Prices | None) -> None:
        self.calls += 1
        self.tokens.update({key: value for key, value in usage.items() if key in TOKENS})
        if prices is not None:
            self._usd += prices.usd(usage)
        elif any(usage.values()):
            self._unpriced += 1

    @property
    def usd(self) -> float | None:
        return None if self._unpriced or not self.calls else round(self._usd, 8)

    def usage(self) -> dict[str, int]:
        return {key: self.tokens[key] for key in TOKENS if self.tokens[key]}


_METER: ContextVar[Meter | None] = ContextVar("webeval_meter", default=None)


@contextmanager
def metered() -> Iterator[Meter]:
    """A meter for the calls made inside (tasks started inside share it: a judge's parallel calls are counted)."""
    meter = Meter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def charge(usage: Mapping[str, int], prices: Prices | None) -> None:
    """Count one call on the meter that is open, if any."""
    meter = _METER.get()
    if meter is not None:
        meter.add(usage, prices)


def usd(amount: float | None) -> str:
    """`$0.0123`: four decimals below a dollar, where one task's cost lies, two above."""
    if amount is None:
        return "unpriced"
    return f"${amount:.4f}" if abs(amount) < 1 else f"${amount:,.2f}"
