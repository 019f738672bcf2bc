"""The `webeval` protocol, the default: the harness's own judge prompt over any multimodal model.

It follows WebVoyager's automatic evaluation (the screenshots outrank the answer; every part of the task must be
done), put in our own words: the judge reads the task, the agent's final answer, its last screenshots, then the
pages it visited and its actions, and replies with a JSON verdict and its reasoning. A reply is read from whatever
decides it (see `parse_verdict`); one with nothing readable is asked again, saying why.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from webeval.judges.protocols.chat import ChatJudge, image_part
from webeval.judges.protocols.webjudge import action_history
from webeval.models import Endpoint, Unreadable
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.reply_json import json_objects
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

MAX_SCREENSHOTS = 30  # "all" is bounded: more images than this rarely fit a model's context

SYSTEM_PROMPT = """\
You decide whether a web agent accomplished a task on a real website. You are given the task, the final answer \
the agent gave, and screenshots of the browser from the end of its run, oldest first. You cannot use the website \
yourself: judge only from what you are given.

How to judge:
- A task may ask for several things. It is accomplished only when every one of them is done or answered.
- The screenshots are genuine. The final answer was written by the agent and can be wrong. If the answer \
contradicts a screenshot, trust the screenshot. If the answer states something that no screenshot shows, accept \
it unless the screenshots make it implausible.
- An answer that only says what the agent would do, or that gives up, does not accomplish the task.
- Do not demand more than the task asks.

First reason briefly about the evidence, then decide. Reply with exactly one JSON object and nothing else:
{"reasoning": "<how you reached the decision>", "verdict": "SUCCESS"}
or the same with "verdict": "NOT SUCCESS"."""

TRAIL = "The pages the agent visited, oldest first:\n{urls}\n\nIts actions, oldest first:\n{actions}"
PROMPT_VERSION = "webeval#" + hashlib.sha256((SYSTEM_PROMPT + TRAIL).encode()).hexdigest()[:12]

_VERDICT_KEYS = ("verdict", "decision", "result", "outcome", "judgement", "judgment")
_REASON_KEYS = ("reasoning", "reason", "thought", "thoughts", "explanation", "rationale", "analysis")
_WORD = re.compile(r"\bNOT SUCCESS\b|\bSUCCESS\b")


def _word(value: Any) -> bool | None:
    """SUCCESS / NOT SUCCESS (any case, '_' for ' '), or a boolean; None for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = " ".join(value.replace("_", " ").upper().split()).rstrip(".!")
        return {"SUCCESS": True, "NOT SUCCESS": False}.get(word)
    return None


def _from_object(document: dict[str, Any]) -> tuple[bool, str] | None:
    keys = {key.lower(): key for key in document if isinstance(key, str)}
    decided = [_word(document[keys[k]]) for k in _VERDICT_KEYS if k in keys]
    if "success" in keys:
        decided.append(_word(document[keys["success"]]))
    decided = [d for d in decided if d is not None]
    if not decided or len(set(decided)) > 1:
        return None
    reason = next((document[keys[k]] for k in _REASON_KEYS if k in keys and isinstance(document[keys[k]], str)), "")
    return decided[0], reason.strip()


def parse_verdict(content: str | None) -> tuple[bool, str]:
    """(success, reasoning) read from what decides a reply, whatever else it holds or lacks.

    A JSON object (bare, fenced, or inside prose) with a verdict-like key whose value is SUCCESS / NOT SUCCESS or a
    boolean decides it; otherwise WebVoyager's free-text convention does: the reply's last SUCCESS or NOT SUCCESS,
    in capitals. Raises Unreadable when neither gives one answer.
    """
    if not content or not content.strip():
        raise Unreadable("no text")
    text = content.strip()
    for document in json_objects(text):
        read = _from_object(document)
        if read is not None:
            return read[0], read[1] or text
    words = _WORD.findall(text)
    if words:
        return words[-1] == "SUCCESS", text
    raise Unreadable("no verdict (no SUCCESS or NOT SUCCESS, and no JSON object with a verdict)")


def _again(why: str) -> str:
    return (f"Your reply could not be read: it has {why}. Reply again with exactly one JSON object: "
            '{"reasoning": "...", "verdict": "SUCCESS"} or "NOT SUCCESS".')


class WebevalJudge(ChatJudge):
    name = "webeval"
    prompt_version = PROMPT_VERSION

    def __init__(self, endpoint: Endpoint, last_screenshots: int | None = None, reasks: int = 2,
                 temperature: float | None = 0.0) -> None:
        super().__init__(endpoint, last_screenshots, reasks)
        self.temperature = temperature

    def messages(self, goal: str, evidence: Evidence, shots: list[Path]) -> list[dict[str, Any]]:
        said = evidence.answer if evidence.answer is not None else "(the agent gave no answer)"
        intro = (f"Task: {goal}\n\nFinal answer of the agent: {said}\n\n" + (
            f"The last {len(shots)} screenshots follow, oldest first." if shots else "There are no screenshots."))
        trail = TRAIL.format(urls="\n".join(dict.fromkeys(evidence.urls)) or "(none)",
                             actions="\n".join(f"{i + 1}. {line}" for i, line in enumerate(action_history(evidence)))
                             or "(none)")
        content = [{"type": "text", "text": intro}, *(image_part(path) for path in shots),
                   {"type": "text", "text": trail}]
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]

    async def judge(self, task: Task, evidence: Evidence) -> Verdict:
        goal = evidence.goal or task.goal  # the text the agent saw (dates as rendered for that run)
        shots = evidence.screenshot_paths(min(MAX_SCREENSHOTS, self.last) if self.last is not None
                                          else MAX_SCREENSHOTS)
        request: dict[str, Any] = {"model": self.endpoint.model, "messages": self.messages(goal, evidence, shots)}
        if self.temperature is not None:
            request["temperature"] = self.temperature
        read = await self.ask_until_read(request, parse_verdict, _again)
        success, reasoning = read.value
        return self.verdict(success, reasoning, read.content,
                            {"screenshots": [path.name for path in shots], "goal": goal, "asked": read.asked})
