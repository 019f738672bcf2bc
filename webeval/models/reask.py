"""Asking again when a reply holds nothing readable: the one bounded re-ask that every judge protocol uses.

A protocol gives its reader (which raises `Unreadable` saying what the reply lacks) and, if it follows up in the
conversation, the user turn that asks again; without one the same request is sent again, as the published judges
that the protocols reproduce do. After `reasks` more replies with nothing readable the judge has failed with kind
`unparseable`: the attempt is masked and judged again later, never counted as the agent's failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Generic, TypeVar

from webeval.outcomes.record import JudgeError

T = TypeVar("T")


class Unreadable(ValueError):
    """A reply from which nothing can be read; the message says what it lacks ("no verdict", ...)."""


@dataclass(frozen=True)
class Reading(Generic[T]):
    value: T  # what the reader read
    content: str  # the reply it was read from
    asked: int  # how many replies it took


async def ask_until_read(ask: Callable[[dict[str, Any]], Awaitable[str | None]], request: dict[str, Any],
                         read: Callable[[str], T], reasks: int, who: str,
                         again: Callable[[str], str] | None = None) -> Reading[T]:
    """The first readable reply to `request`, asked at most `reasks` + 1 times; `who` names the judge in the error.
    `again(why)` is the follow-up that asks again after an unread reply (kept in the conversation)."""
    from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

    replies: list[str] = []

    async def once() -> T:
        nonlocal request
        replies.append(await ask(request) or "")
        try:
            return read(replies[-1])
        except Unreadable as exc:
            if again is not None:
                request = {**request, "messages": [*request["messages"], {"role": "assistant", "content": replies[-1]},
                                                   {"role": "user", "content": again(str(exc))}]}
            raise

    try:
        value = await AsyncRetrying(stop=stop_after_attempt(reasks + 1), retry=retry_if_exception_type(Unreadable),
                                    reraise=True)(once)
    except Unreadable as exc:
        raise JudgeError(f"{who}: {exc} in {len(replies)} replies; last reply: {replies[-1][:200]!r}",
                         kind="unparseable") from None
    return Reading(value, replies[-1], len(replies))
