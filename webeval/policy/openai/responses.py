"""The Responses API (`POST /responses`): the request's input items, and the reply's output items read as the
chat-style message the adapters take (text, function calls, and hosted computer calls).

Turns are chained in one of two ways, as the profile says:
- `previous_response_id`: the server keeps the conversation; each request sends only what happened since the last
  reply (the outputs of its calls and the new observation). The server's history is not bounded by `screenshots`
  or `history_steps`; a computer-use model wants `truncation = "auto"` for that (a field of `extra_body`).
- `full_input`: every request carries the whole bounded history (the last `history_steps` steps, screenshots of the
  last `screenshots` steps in messages), with the model's reasoning items kept as `reasoning_history` says.
A computer call's output is a screenshot by the API's rules, so in `full_input` every kept step keeps that image.
"""

from __future__ import annotations

from typing import Any

from webeval.outcomes.record import FailureClass
from webeval.policy.openai.adapters import Reading
from webeval.policy.openai.conversation import Conversation, Turn, data_url, keeps_reasoning, last_replied
from webeval.policy.openai.profile import Profile, sampling


def responses_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions function tool in the Responses API's flat form; other tools (hosted ones) as they are."""
    if tool.get("type") != "function" or "function" not in tool:
        return tool
    function = tool["function"]
    # strict would demand a schema with every field required and no defaults: the contract validates instead.
    return {"type": "function", "name": function["name"], "description": function.get("description", ""),
            "parameters": function["parameters"], "strict": False}


def responses_body(profile: Profile, instructions: str, items: list[dict[str, Any]], previous: str | None,
                   tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": profile.model, "input": items}
    if instructions:
        body["instructions"] = instructions  # not carried over by previous_response_id: sent every time
    if previous:
        body["previous_response_id"] = previous
    if tools:
        body["tools"] = [responses_tool(tool) for tool in tools]
    return {**body, **sampling(profile)}


def _read_message(item: dict[str, Any], text: list[str]) -> Reading | None:
    for part in item.get("content") or []:
        if not isinstance(part, dict):
            return Reading(invalid="a message of the reply has a content part that is not an object")
        if part.get("type") == "output_text" and isinstance(part.get("text"), str):
            text.append(part["text"])
        elif part.get("type") == "refusal":
            return Reading(end=(FailureClass.refusal, f"the model refused: {str(part.get('refusal', ''))[:300]}"))
    return None


def read_response(reply: dict[str, Any]) -> tuple[dict[str, Any], str | None] | Reading:
    """The reply's output as a chat-style message (`content`, `tool_calls`, `computer_calls`) and finish reason."""
    error = reply.get("error")
    if isinstance(error, dict) and error:
        return Reading(invalid=f"the response failed: {str(error.get('message', error))[:300]}")
    output = reply.get("output")
    if not isinstance(output, list):
        return Reading(invalid="the reply has no output items")
    text: list[str] = []
    calls: list[dict[str, Any]] = []
    computer: list[dict[str, Any]] = []
    for item in output:
        if not isinstance(item, dict):
            return Reading(invalid="an output item of the reply is not an object")
        kind = item.get("type")
        if kind == "message" and (stop := _read_message(item, text)) is not None:
            return stop
        if kind == "function_call":
            calls.append({"id": item.get("call_id"), "type": "function",
                          "function": {"name": item.get("name"), "arguments": item.get("arguments")}})
        elif kind == "computer_call":
            computer.append(item)
    reason = (reply.get("incomplete_details") or {}).get("reason")
    if reason == "content_filter":
        return Reading(end=(FailureClass.refusal, "the endpoint's content filter stopped the reply"))
    message = {"content": "\n".join(text) if text else None, "tool_calls": calls, "computer_calls": computer}
    return message, "length" if reason == "max_output_tokens" else None


def reasoning_text(items: list[dict[str, Any]]) -> str:
    """The text of the reasoning items (summaries and any reasoning text), for the record."""
    parts = [part.get("text", "") for item in items if item.get("type") == "reasoning"
             for part in (item.get("summary") or []) + (item.get("content") or []) if isinstance(part, dict)]
    return "\n".join(part for part in parts if part)


class ResponsesConversation(Conversation):
    """The conversation as Responses API input items, chained by the stored response or sent in full."""

    def __init__(self, instructions: str, goal: str, profile: Profile, screenshot_in_output: bool) -> None:
        super().__init__(instructions, goal, profile.screenshots, profile.history_steps, profile.image_detail,
                         profile.reasoning_history)
        self.chain = profile.chain
        self.acknowledge = profile.acknowledge_safety_checks
        self.screenshot_in_output = screenshot_in_output  # a computer tool: the screenshot is its call's output

    def replied_items(self, items: list[dict[str, Any]], response_id: str | None) -> None:
        self.turns[-1].items = items
        self.turns[-1].response_id = response_id

    def request_input(self) -> tuple[list[dict[str, Any]], str | None]:
        """The input items of the next request, and the response it continues (None: the input is complete)."""
        anchor = max((i for i, turn in enumerate(self.turns) if turn.response_id), default=-1)
        if self.chain == "full_input" or anchor < 0:
            return self._full(), None
        since = self.turns[anchor + 1:]
        items = self._outputs(self.turns[anchor], since[0]) if since else []
        for index, turn in enumerate(since):
            items.append(self._observation(turn, anchor + 1 + index, self.turns[anchor] if index == 0 else None,
                                           opening=False))
        return items, self.turns[anchor].response_id

    def _full(self) -> list[dict[str, Any]]:
        kept = self.turns[-self.history_steps:]
        dropped = len(self.turns) - len(kept)
        newest = last_replied(kept)
        items: list[dict[str, Any]] = []
        for index, turn in enumerate(kept):
            before = kept[index - 1] if index > 0 else None
            if before is not None:
                items.extend(self._outputs(before, turn))
            items.append(self._observation(turn, dropped + index, before, opening=index == 0))
            keep = keeps_reasoning(self.reasoning, index, newest)
            items.extend(item for item in turn.items if keep or item.get("type") != "reasoning")
        return items

    def _outputs(self, replied: Turn, turn: Turn) -> list[dict[str, Any]]:
        """Every call of a reply gets its output (the API requires one per call id): the next observation's."""
        outputs = []
        for item in replied.items:
            if item.get("type") == "function_call":
                outputs.append({"type": "function_call_output", "call_id": item.get("call_id"),
                                "output": turn.result or "done"})
            elif item.get("type") == "computer_call":
                output: dict[str, Any] = {"type": "computer_call_output", "call_id": item.get("call_id"), "output": {
                    "type": "computer_screenshot", "image_url": data_url(turn.image, turn.mime)}}
                pending = item.get("pending_safety_checks") or []
                if pending and self.acknowledge:
                    output["acknowledged_safety_checks"] = pending
                outputs.append(output)
        return outputs

    def _observation(self, turn: Turn, position: int, before: Turn | None, opening: bool) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if opening:
            goal = f"Task: {self.goal}"
            if position > 0:
                goal += f"\n(Steps 1 to {position} are left out of this conversation to keep it short.)"
            parts.append({"type": "input_text", "text": goal})
        in_output = self.screenshot_in_output and before is not None and any(
            item.get("type") == "computer_call" for item in before.items)
        if in_output:
            parts.append({"type": "input_text", "text": turn.text})
        elif position >= len(self.turns) - self.screenshots:
            parts.append({"type": "input_text", "text": turn.text})
            parts.append({"type": "input_image", "image_url": data_url(turn.image, turn.mime),
                          "detail": self.image_detail})
            if turn.detail:
                parts.append({"type": "input_text", "text": turn.detail})
        else:
            parts.append({"type": "input_text", "text": f"{turn.text}\n[screenshot of step {turn.step} left out]"})
        return {"role": "user", "content": parts}
