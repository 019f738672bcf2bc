"""The one retry policy for calls to a model endpoint, the policy's and the judge's alike (tenacity underneath).

An attempt that meets a failure another attempt may not meet (HTTP 429, a 5xx, a dropped or refused connection, a
timeout) raises `Transient`; anything else ends the call at once. Transient failures are tried again `retries`
times, waiting `backoff_s` and doubling up to `max_wait_s`; a server's Retry-After (or retry-after-ms) is honoured
instead, and one that asks for longer than `max_wait_s` ends the call at once: waiting that long would hold a
worker for nothing. Past the retries the call has failed with `GaveUp`, whose line names the last failure.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal, TypeVar

if TYPE_CHECKING:  # imported where a call is made: a run with no model (the oracle) never needs it
    from tenacity import RetryCallState

T = TypeVar("T")
Cause = Literal["http", "timeout", "connection"]


class Transient(Exception):
    """One attempt's failure that is worth another attempt; `problem` is one secret-free line."""

    def __init__(self, problem: str, cause: Cause, asked_s: float | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.cause = cause
        self.asked_s = asked_s  # how long the server asked us to wait, if it said


class GaveUp(Exception):
    """The retries are spent, or the server asked for a longer wait than the policy allows."""

    def __init__(self, last: Transient, attempts: int, max_wait_s: float) -> None:
        self.last = last
        self.attempts = attempts
        self.asked_too_long = last.asked_s is not None and last.asked_s > max_wait_s
        if self.asked_too_long:
            text = f"{last.problem}; it asked to wait {last.asked_s:g} s, more than max_wait_s {max_wait_s:g}"
        else:
            text = f"{last.problem} ({attempts} attempt{'s' if attempts > 1 else ''})"
        super().__init__(text)

    @property
    def cause(self) -> Cause:
        return self.last.cause


def is_retried(status: int) -> bool:
    """The HTTP statuses worth another attempt: too many requests, and the server's own errors."""
    return status == 429 or status >= 500


def retry_after(headers: Any) -> float | None:
    """Seconds the server asked us to wait (retry-after-ms, Retry-After as seconds or as an HTTP date)."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    try:
        if millis is not None:
            return max(0.0, float(millis) / 1000)
    except ValueError:
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value.strip() else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 2
    backoff_s: float = 1.0  # the first wait; it doubles with each retry
    max_wait_s: float = 60.0  # the longest wait; a longer Retry-After gives up at once

    def longest_waits_s(self) -> float:
        """The most one call can spend waiting between its attempts."""
        return self.retries * self.max_wait_s

    async def call(self, attempt: Callable[[], Awaitable[T]],
                   sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> tuple[T, list[str]]:
        """The attempt's value, and the problems of the attempts that were retried; GaveUp past the retries."""
        failures: list[Transient] = []

        from tenacity import AsyncRetrying

        async def once() -> T:  # tenacity awaits only what it can tell is a coroutine function
            return await attempt()

        value = await AsyncRetrying(sleep=sleep, **self._rules(failures))(once)
        return value, [failure.problem for failure in failures]

    def call_blocking(self, attempt: Callable[[], T], sleep: Callable[[float], None] = time.sleep) -> T:
        """The same, for a caller with no event loop (the session-start preflight)."""
        from tenacity import Retrying

        return Retrying(sleep=sleep, **self._rules([]))(attempt)

    def _rules(self, failures: list[Transient]) -> dict[str, Any]:
        from tenacity import retry_if_exception_type

        return dict(retry=retry_if_exception_type(Transient), wait=self._wait, stop=self._stop,
                    after=lambda state: failures.append(state.outcome.exception()),
                    retry_error_callback=self._give_up)

    def _wait(self, state: RetryCallState) -> float:
        asked = state.outcome.exception().asked_s
        if asked is not None:
            return asked
        return min(self.backoff_s * 2 ** (state.attempt_number - 1), self.max_wait_s)

    def _stop(self, state: RetryCallState) -> bool:
        asked = state.outcome.exception().asked_s
        return state.attempt_number > self.retries or (asked is not None and asked > self.max_wait_s)

    def _give_up(self, state: RetryCallState) -> None:
        raise GaveUp(state.outcome.exception(), state.attempt_number, self.max_wait_s) from None
