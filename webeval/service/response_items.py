"""An episode's model replies as a Responses API response (NeMo Gym's NeMoGymResponse): the items a trainer reads.

Each turn's reply becomes its output items as NeMo Gym's converter makes them from a chat completion: reasoning, the
message's text, one `function_call` per tool call (arguments as the model wrote them), and the turn's
`prompt_token_ids`, `generation_token_ids` and `generation_log_probs` on its last item, exactly as the endpoint
returned them. Each call is followed by its `function_call_output`: what the action did, or the action contract's
error. A reply on the Responses API is passed through as its own items. Turns of a policy without a model (the
oracle) have no items.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

TOKEN_FIELDS = ("prompt_token_ids", "generation_token_ids", "generation_log_probs")
ENDED = "the episode ended"


def trajectory_steps(text: str) -> list[dict[str, Any]]:
    """The steps of a trajectory.jsonl's text, oldest first."""
    steps = []
    for line in text.splitlines():
        try:
            steps.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by a cut episode: its turn has no items
    return steps


def attempt_steps(folder: Path | None) -> list[dict[str, Any]]:
    """The steps of an attempt folder's trajectory.jsonl (none without one)."""
    path = folder / "trajectory.jsonl" if folder is not None else None
    if path is None or not path.is_file():
        return []
    return trajectory_steps(path.read_text(encoding="utf-8"))


def _reply_items(step: dict[str, Any], reply: dict[str, Any], rollout_id: str) -> list[dict[str, Any]]:
    """The items NeMo Gym's converter makes of one chat completion message."""
    items: list[dict[str, Any]] = []
    key = f"{rollout_id}_{step['step']}"
    reasoning = reply.get("reasoning_content") or reply.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        items.append({"type": "reasoning", "id": f"rs_{key}", "status": "completed",
                      "summary": [{"type": "summary_text", "text": reasoning}]})
    calls = reply.get("tool_calls") or []
    content = reply.get("content")
    if (isinstance(content, str) and content) or not (items or calls):
        items.append({"type": "message", "id": f"msg_{key}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": content or "", "annotations": []}]})
    for index, call in enumerate(calls):
        function = call.get("function") or {}
        call_id = call.get("id") or f"call_{key}_{index}"
        items.append({"type": "function_call", "id": call_id, "call_id": call_id, "name": function.get("name", ""),
                      "arguments": function.get("arguments", ""), "status": "completed"})
    return items


def _outputs(step: dict[str, Any], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results = list(step.get("results") or [])
    error = step.get("error")
    outputs = []
    for index, call in enumerate(calls):
        if error:
            text = f"error: {error}"
        elif index < len(results):
            text = results[index]
        else:
            text = ENDED if call.get("name") == "terminate" else ""
        outputs.append({"type": "function_call_output", "call_id": call["call_id"], "output": text})
    return outputs


def turn_items(step: dict[str, Any], rollout_id: str) -> list[dict[str, Any]]:
    try:
        reply = json.loads(step.get("raw") or "")
    except (json.JSONDecodeError, TypeError):
        return []  # no model behind this turn, or no reply to read
    if not isinstance(reply, dict):
        return []
    if isinstance(reply.get("output"), list):  # the Responses API: the reply's own items
        items = [item for item in reply["output"] if isinstance(item, dict)]
    else:
        items = _reply_items(step, reply, rollout_id)
    tokens = step.get("tokens") or {}
    if items and any(tokens.get(name) is not None for name in TOKEN_FIELDS):
        items[-1] = {**items[-1], **{name: tokens.get(name) for name in TOKEN_FIELDS}}
    calls = [item for item in items if item.get("type") == "function_call"]
    return items + _outputs(step, calls)


def episode_response(steps: list[dict[str, Any]], rollout_id: str, model: str | None, tools: list[dict[str, Any]]
                     ) -> dict[str, Any]:
    """The episode (its trajectory's steps) as one Responses API response object."""
    output = [item for step in steps for item in turn_items(step, rollout_id)]
    prompt = sum((step.get("usage") or {}).get("prompt_tokens", 0) for step in steps)
    completion = sum((step.get("usage") or {}).get("completion_tokens", 0) for step in steps)
    return {"id": f"resp_{rollout_id}", "object": "response", "created_at": int(time.time()), "model": model or "",
            "status": "completed", "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": tools, "usage": {"input_tokens": prompt, "output_tokens": completion,
                                      "total_tokens": prompt + completion}}
