"""The prompt of one episode: instructions, the task as the first user turn, then one user turn per observation and
the model's replies as received.

Only the last K screenshots (and the element lists that go with them) stay in the prompt; older ones become a short
text stub. Only the last N steps stay at all, so the request has a fixed ceiling however long the episode runs.
Roles alternate (user, assistant, tool results, user, ...) because some chat templates insist on it. The model's
reasoning is shown again as its profile says: every reply's (`keep`), none (`drop`), or the last reply's only
(`keep-last`).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from webeval.policy.openai.adapters import REASONING_FIELDS


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


@dataclass
class Turn:
    step: int
    text: str  # what is always kept: step, URL, title, tabs, last result
    image: bytes  # the screenshot as the model sees it (labelled, for set-of-marks; resized and encoded)
    detail: str = ""  # kept only while the screenshot is (the element list of set-of-marks)
    result: str = ""  # the tool results of the previous reply's calls
    reply: dict[str, Any] | None = None  # the assistant message, as the model sent it
    mime: str = "image/png"
    items: list[dict[str, Any]] = field(default_factory=list)  # Responses API: the reply's output items
    response_id: str | None = None  # Responses API: the id the server gave the reply


def keeps_reasoning(mode: str, index: int, last: int) -> bool:
    """Whether the reasoning of reply `index` is shown again, `last` being the index of the newest reply."""
    return mode == "keep" or (mode == "keep-last" and index == last)


def last_replied(turns: list[Turn]) -> int:
    return max((index for index, turn in enumerate(turns) if turn.reply is not None or turn.items), default=-1)


class Conversation:
    def __init__(self, instructions: str, goal: str, screenshots: int, history_steps: int, detail: str,
                 reasoning: str = "drop") -> None:
        self.instructions = instructions
        self.goal = goal
        self.screenshots = screenshots
        self.history_steps = max(history_steps, 1)
        self.image_detail = detail
        self.reasoning = reasoning
        self.turns: list[Turn] = []

    def observe(self, turn: Turn) -> None:
        self.turns.append(turn)

    def replied(self, message: dict[str, Any]) -> None:
        self.turns[-1].reply = message

    def _user_parts(self, turn: Turn, with_image: bool) -> list[dict[str, Any]]:
        if not with_image:
            return [{"type": "text", "text": f"{turn.text}\n[screenshot of step {turn.step} left out]"}]
        parts: list[dict[str, Any]] = [{"type": "text", "text": turn.text}]
        parts.append({"type": "image_url", "image_url": {"url": data_url(turn.image, turn.mime),
                                                          "detail": self.image_detail}})
        if turn.detail:
            parts.append({"type": "text", "text": turn.detail})
        return parts

    def messages(self) -> list[dict[str, Any]]:
        kept = self.turns[-self.history_steps:]
        dropped = len(self.turns) - len(kept)
        first_image = len(self.turns) - self.screenshots
        goal = f"Task: {self.goal}"
        if dropped:
            goal += f"\n(Steps 1 to {dropped} are left out of this conversation to keep it short.)"
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.instructions}]
        newest = last_replied(kept)
        for index, turn in enumerate(kept):
            position = dropped + index
            parts = self._user_parts(turn, position >= first_image)
            if index == 0:
                parts.insert(0, {"type": "text", "text": goal})
            else:
                messages.extend(_tool_results(kept[index - 1].reply, turn.result))
            messages.append({"role": "user", "content": parts})
            if turn.reply is not None:
                messages.append(self._shown(turn.reply, index, newest))
        if not kept:
            messages.append({"role": "user", "content": [{"type": "text", "text": goal}]})
        return messages

    def _shown(self, reply: dict[str, Any], index: int, last: int) -> dict[str, Any]:
        if keeps_reasoning(self.reasoning, index, last):
            return reply
        return {key: value for key, value in reply.items() if key not in REASONING_FIELDS}


def _tool_results(reply: dict[str, Any] | None, result: str) -> list[dict[str, Any]]:
    """Every tool call of a reply gets its answer (the API requires one per call id): what the next observation said."""
    calls = (reply or {}).get("tool_calls") or []
    return [{"role": "tool", "tool_call_id": call["id"], "content": result or "done"} for call in calls]
