"""The model-neutral policy: an observation becomes a request (chat completions or Responses); the reply becomes
tool calls.

What is model-specific lives in the adapter (how the screen is shown, how a reply is read) and in the profile
(where, which model, which API, the image it sees, sampling). The transport is the live endpoint, or a recording
played back. The image the model sees is resized and encoded as the profile says; the trajectory keeps the
full-size lossless screenshot.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any, Callable

from webeval.actions import Observation
from webeval.outcomes.record import FailureClass
from webeval.policy.base import PolicyTurn
from webeval.policy.openai.adapters import Adapter, GridAdapter, Reading, ToolsAdapter, assistant_message, choice_of
from webeval.policy.openai.transport import Transport
from webeval.policy.openai.computer_use import ComputerUseAdapter
from webeval.policy.openai.conversation import Conversation, Turn
from webeval.policy.openai.image import Encoded, encode, frame_for
from webeval.policy.openai.profile import Profile, sampling
from webeval.policy.openai.recording import ReplayDiverged
from webeval.policy.openai.responses import ResponsesConversation, read_response, responses_body
from webeval.policy.openai.tokens import turn_tokens
from webeval.policy.openai.tool_names import ToolNames
from webeval.policy.openai.uitars import UITarsAdapter
from webeval.policy.openai.set_of_marks import Marks, WebVoyagerAdapter
from webeval.tasks import Task

DUMP_FOLDER = "model-input"  # --dump-observation: what the model received, per step
APPEND_ONLY = 1 << 30  # screenshots and steps kept by an append-only conversation: all of them


def make_adapter(profile: Profile, screen: tuple[int, int], marks: Marks | None) -> Adapter:
    frame = frame_for(profile, screen)
    names = ToolNames(profile.tool_names)
    if profile.adapter == "tools":
        return ToolsAdapter(screen, profile.system_prompt, frame, names)
    if profile.adapter in ("grid-1", "grid-999"):
        return GridAdapter(screen, int(profile.adapter.split("-")[1]), profile.system_prompt, frame, names)
    if profile.adapter == "ui-tars":
        return UITarsAdapter(frame, profile.system_prompt)
    if profile.adapter == "computer-use":
        return ComputerUseAdapter(frame, profile.computer_tool, profile.computer_environment,
                                  profile.acknowledge_safety_checks, profile.system_prompt)
    if marks is None:
        raise ValueError("the webvoyager adapter needs the page's elements (set-of-marks)")
    return WebVoyagerAdapter(screen, marks, profile.system_prompt)


def request_body(profile: Profile, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
                 ) -> dict[str, Any]:
    body: dict[str, Any] = {"model": profile.model, "messages": messages}
    if tools:
        body["tools"] = tools
    return {**body, **sampling(profile)}


def dump_observation(folder: Path, step: int, shot: Encoded, text: str, screen: tuple[int, int],
                     space: tuple[int, int], spec: str) -> None:
    """What the model received at one step: the image exactly as sent, and the text and geometry beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    extension = shot.mime.split("/")[1]
    (folder / f"step-{step:03d}.{extension}").write_bytes(shot.data)
    facts = {"step": step, "screen": list(screen), "image": list(shot.size), "coordinates": list(space),
             "encoding": spec, "bytes": len(shot.data), "text": text}
    (folder / f"step-{step:03d}.json").write_text(json.dumps(facts, indent=1, ensure_ascii=False), encoding="utf-8")


class OpenAIPolicy:
    def __init__(self, profile: Profile, adapter: Adapter, transport: Callable[[], Transport],
                 name: str = "openai", dump: Path | None = None) -> None:
        self.name = name
        self.model = profile.model
        self.profile = profile
        self.adapter = adapter
        self.frame = frame_for(profile, adapter.screen)
        self.dump = dump
        self._open_transport = transport
        self._transport: Transport | None = None
        self.conversation: Conversation | None = None

    def start(self, task: Task) -> None:
        """A new conversation for the task (no connection yet: `begin` opens one)."""
        if self.profile.api == "responses":
            self.conversation = ResponsesConversation(self.adapter.instructions(), task.goal, self.profile,
                                                      getattr(self.adapter, "screenshot_in_output", False))
        elif self.profile.history == "append-only":  # nothing left out or rewritten: each prompt extends the last
            self.conversation = Conversation(self.adapter.instructions(), task.goal, APPEND_ONLY, APPEND_ONLY,
                                             self.profile.image_detail, "keep")
        else:
            self.conversation = Conversation(self.adapter.instructions(), task.goal, self.profile.screenshots,
                                             self.profile.history_steps, self.profile.image_detail,
                                             self.profile.reasoning_history)

    async def begin(self, task: Task) -> None:
        self.start(task)
        self._transport = self._open_transport()

    async def end(self) -> None:
        if self._transport is not None:
            await self._transport.close()
            self._transport = None

    async def request(self, observation: Observation) -> dict[str, Any]:
        """The observation added to the conversation, and the request body that asks the model for its reply."""
        assert self.conversation is not None, "request() before start()"
        view = await self.adapter.view(observation)
        shot = await asyncio.to_thread(encode, view.image, self.profile.image, self.frame.image)
        if self.dump is not None:
            await asyncio.to_thread(dump_observation, self.dump, observation.step, shot,
                                    "\n\n".join(filter(None, [view.text, view.detail])), self.frame.screen,
                                    self.frame.space, self.profile.image.describe())
        self.conversation.observe(Turn(step=observation.step, text=view.text, image=shot.data, mime=shot.mime,
                                       detail=view.detail, result=observation.last_result or ""))
        if isinstance(self.conversation, ResponsesConversation):
            items, previous = self.conversation.request_input()
            return responses_body(self.profile, self.conversation.instructions, items, previous, self.adapter.tools())
        return request_body(self.profile, self.conversation.messages(), self.adapter.tools())

    async def act(self, observation: Observation) -> PolicyTurn:
        assert self.conversation is not None and self._transport is not None, "act() before begin()"
        began = time.monotonic()
        body = await self.request(observation)
        try:
            exchange = await self._transport.complete(body)
        except ReplayDiverged as exc:
            return PolicyTurn(calls=[], end=(FailureClass.replay_diverged, f"replay diverged: {exc}"),
                              latency_s=time.monotonic() - began)
        turn = PolicyTurn(calls=[], raw=exchange.text, usage=exchange.usage, retries=exchange.retries,
                          latency_s=exchange.latency_s or time.monotonic() - began)
        if exchange.reply is None:
            reading = Reading(invalid=exchange.unreadable)
            self._replied_nothing()
        elif isinstance(self.conversation, ResponsesConversation):
            reading = self._read_response(exchange.reply, turn)
        else:
            reading = self._read_chat(exchange.reply, observation.step, turn)
        turn.calls, turn.invalid, turn.end = reading.calls, reading.invalid, reading.end
        return turn

    def _replied_nothing(self) -> None:
        if not isinstance(self.conversation, ResponsesConversation):
            self.conversation.replied({"role": "assistant", "content": ""})

    def _read_chat(self, reply: dict[str, Any], step: int, turn: PolicyTurn) -> Reading:
        choice = choice_of(reply)
        if isinstance(choice, Reading):
            self._replied_nothing()
            return choice
        message, finish = choice
        if self.profile.token_ids:
            turn.tokens = turn_tokens(reply).as_dict()
        self.conversation.replied(assistant_message(message, step))
        turn.raw = json.dumps(message, ensure_ascii=False)  # reasoning_content included, as received
        return self.adapter.read(message, finish)

    def _read_response(self, reply: dict[str, Any], turn: PolicyTurn) -> Reading:
        items = [item for item in reply.get("output") or [] if isinstance(item, dict)]
        response_id = reply.get("id") if isinstance(reply.get("id"), str) else None
        self.conversation.replied_items(items, response_id)
        turn.raw = json.dumps({"id": response_id, "output": items}, ensure_ascii=False)
        read = read_response(reply)
        if isinstance(read, Reading):
            return read
        message, finish = read
        return self.adapter.read(message, finish)
