"""The model-neutral policy: an observation becomes a chat-completions request; the reply becomes tool calls.

What is model-specific lives in the adapter (how the screen is shown, how a reply is read) and in the profile
(where, which model, sampling). The transport is the live endpoint, or a recording played back.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from webeval.actions import Observation
from webeval.outcomes.record import FailureClass
from webeval.policy.base import PolicyTurn
from webeval.policy.openai.adapters import Adapter, GridAdapter, Reading, ToolsAdapter, assistant_message, choice_of
from webeval.policy.openai.client import Transport
from webeval.policy.openai.conversation import Conversation, Turn
from webeval.policy.openai.profile import Profile
from webeval.policy.openai.record import ReplayDiverged
from webeval.policy.openai.webvoyager import Marks, WebVoyagerAdapter
from webeval.tasks import Task


def make_adapter(profile: Profile, screen: tuple[int, int], marks: Marks | None) -> Adapter:
    if profile.adapter == "tools":
        return ToolsAdapter(screen, profile.system_prompt)
    if profile.adapter in ("grid-1", "grid-999"):
        return GridAdapter(screen, int(profile.adapter.split("-")[1]), profile.system_prompt)
    if marks is None:
        raise ValueError("the webvoyager adapter needs the page's elements (set-of-marks)")
    return WebVoyagerAdapter(screen, marks, profile.system_prompt)


def request_body(profile: Profile, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
                 ) -> dict[str, Any]:
    body: dict[str, Any] = {"model": profile.model, "messages": messages}
    if tools:
        body["tools"] = tools
    if profile.temperature is not None:
        body["temperature"] = profile.temperature
    if profile.top_p is not None:
        body["top_p"] = profile.top_p
    body[profile.max_tokens_param] = profile.max_tokens
    body.update(profile.extra_body)
    return body


class OpenAIPolicy:
    def __init__(self, profile: Profile, adapter: Adapter, transport: Callable[[], Transport],
                 name: str = "openai") -> None:
        self.name = name
        self.model = profile.model
        self.profile = profile
        self.adapter = adapter
        self._open_transport = transport
        self._transport: Transport | None = None
        self.conversation: Conversation | None = None

    async def begin(self, task: Task) -> None:
        self.conversation = Conversation(self.adapter.instructions(), task.goal, self.profile.screenshots,
                                         self.profile.history_steps, self.profile.image_detail)
        self._transport = self._open_transport()

    async def end(self) -> None:
        if self._transport is not None:
            await self._transport.close()
            self._transport = None

    async def act(self, observation: Observation) -> PolicyTurn:
        assert self.conversation is not None and self._transport is not None, "act() before begin()"
        began = time.monotonic()
        view = await self.adapter.view(observation)
        self.conversation.observe(Turn(step=observation.step, text=view.text, image=view.image, detail=view.detail,
                                       result=observation.last_result or ""))
        body = request_body(self.profile, self.conversation.messages(), self.adapter.tools())
        try:
            exchange = await self._transport.complete(body)
        except ReplayDiverged as exc:
            return PolicyTurn(calls=[], end=(FailureClass.replay_diverged, f"replay diverged: {exc}"),
                              latency_s=time.monotonic() - began)
        turn = PolicyTurn(calls=[], raw=exchange.text, usage=exchange.usage, retries=exchange.retries,
                          latency_s=exchange.latency_s or time.monotonic() - began)
        if exchange.reply is None:
            reading = Reading(invalid=exchange.unreadable)
            self.conversation.replied({"role": "assistant", "content": ""})
        else:
            choice = choice_of(exchange.reply)
            if isinstance(choice, Reading):
                reading = choice
                self.conversation.replied({"role": "assistant", "content": ""})
            else:
                message, finish = choice
                reading = self.adapter.read(message, finish)
                self.conversation.replied(assistant_message(message, observation.step))
                turn.raw = json.dumps(message, ensure_ascii=False)
        turn.calls, turn.invalid, turn.end = reading.calls, reading.invalid, reading.end
        return turn
