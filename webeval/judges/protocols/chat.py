"""What every judge protocol shares: its chat call to the judge model, the screenshots as image parts, the bounded
re-ask, and verdicts that name the protocol that made them (a reply's JSON objects are read by
webeval.outcomes.reply_json, which the rubric writer reads with too). Every reply's tokens are charged to the judgement's meter (webeval.outcomes.cost), priced by the endpoint's table.

Outcomes: a transport failure, a timeout, a refused key, an HTTP error, and a response that is not a chat
completion end the judgement with a JudgeError of that kind (the attempt is judge_failed: masked, re-judgeable);
429, 5xx, dropped connections and timeouts are first retried by the one retry policy (webeval.models).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Callable, TypeVar

from webeval.models import (
    Endpoint, EndpointRefused, EndpointRejected, EndpointUnavailable, Exchange, ModelClient, Reading, ask_until_read,
)
from webeval.outcomes.cost import charge
from webeval.outcomes.record import JudgeError
from webeval.outcomes.verdict import Verdict

T = TypeVar("T")
_KINDS = {"http": "http", "timeout": "timeout", "connection": "transport"}  # a failure's cause -> its judge_failed kind


def image_part(path: Path) -> dict[str, Any]:
    kind = "jpeg" if path.suffix.lower() in (".jpg", ".jpeg") else "png"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:image/{kind};base64,{data}"}}


class ChatJudge:
    """A judge protocol over any OpenAI-compatible multimodal endpoint. `name` is the protocol (as
    --judge-protocol names it) and `prompt_version` the prompt texts it reads: both go into every verdict."""

    name: str
    prompt_version: str

    def __init__(self, endpoint: Endpoint, last_screenshots: int | None = None, reasks: int = 2) -> None:
        self.endpoint = endpoint
        self.last = last_screenshots
        self.reasks = reasks
        self._client: ModelClient | None = None  # made at the first call: `openai` is imported there

    def verdict(self, success: bool, reason: str, raw: str | None, details: dict[str, Any]) -> Verdict:
        return Verdict(success=success, reason=reason, judge=self.name, model=self.endpoint.model, raw=raw,
                       protocol=self.name, prompt_version=self.prompt_version, details=details)

    async def ask(self, request: dict[str, Any]) -> str | None:
        """The text of the judge's reply to one chat completion request."""
        if self._client is None:
            self._client = ModelClient(self.endpoint, "judge")
        try:
            exchange = await self._client.post("/chat/completions", request)
        except EndpointRefused as exc:
            raise JudgeError(str(exc), kind="auth") from None
        except EndpointRejected as exc:
            raise JudgeError(str(exc), kind="http") from None
        except EndpointUnavailable as exc:
            raise JudgeError(str(exc), kind=_KINDS[exc.cause]) from None
        charge(exchange.usage, self.endpoint.prices)  # a reply that is then refused or unread used its tokens too
        return self._content(exchange, self._client.where)

    async def ask_until_read(self, request: dict[str, Any], read: Callable[[str], T],
                             again: Callable[[str], str] | None = None) -> Reading[T]:
        return await ask_until_read(self.ask, request, read, self.reasks, f"judge {self.endpoint.model}", again)

    def _content(self, exchange: Exchange, where: str) -> str | None:
        def schema(why: str) -> JudgeError:
            return JudgeError(self.endpoint.redact(f"{where}: the response is not a chat completion ({why})"),
                              kind="schema")

        if exchange.reply is None:
            raise schema(exchange.unreadable or "no body")
        choices = exchange.reply.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):
            raise schema("no message in it")
        if message.get("refusal"):
            raise JudgeError(self.endpoint.redact(f"{where}: the judge refused: {str(message['refusal'])[:200]}"),
                             kind="unparseable")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise schema("its message's content is not text")
        return content

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

