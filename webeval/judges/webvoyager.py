"""The WebVoyager judge: a multimodal model reads the task, the agent's final answer and its last screenshots.

The protocol follows WebVoyager's automatic evaluation (the screenshots outrank the answer; every part of the task
must be done), put in our own words, and asks for a JSON verdict with the judge's reasoning. The judge reads only the
evidence of an attempt, so it can run again later with no browser.

Outcomes: transport, timeout, authentication and HTTP errors, a response that is not a chat completion, and a reply
with no readable verdict after the re-asks are a JudgeError (the attempt is judge_failed, masked, re-judgeable).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webeval.outcomes.cost import Prices, charge, read_usage
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.redact import redact
from webeval.outcomes.record import JudgeError
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

if TYPE_CHECKING:  # imported where a client is made: an oracle run never needs it
    import openai

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

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)  # the secret itself, from the environment; never shown
    timeout_s: float = 120.0
    retries: int = 2
    temperature: float | None = 0.0
    prices: Prices | None = None  # what a call costs, from the judge's profile

    def client(self) -> openai.AsyncOpenAI:
        import openai

        return openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key or "EMPTY",
                                  timeout=self.timeout_s, max_retries=self.retries)

    def redact(self, text: str) -> str:
        return redact(text, self.api_key)


class Unreadable(ValueError):
    """A reply from which no verdict can be read."""


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


def _objects(text: str) -> list[dict[str, Any]]:
    candidates = [text, *_FENCE.findall(text)]
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{"):text.rindex("}") + 1])
    found = []
    for candidate in candidates:
        try:
            document = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(document, dict):
            found.append(document)
    return found


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
        raise Unreadable("the reply is empty")
    text = content.strip()
    for document in _objects(text):
        read = _from_object(document)
        if read is not None:
            return read[0], read[1] or text
    words = _WORD.findall(text)
    if words:
        return words[-1] == "SUCCESS", text
    raise Unreadable("the reply holds no verdict (no SUCCESS or NOT SUCCESS, and no JSON object with a verdict)")


def _image(path: Path) -> dict[str, Any]:
    kind = "jpeg" if path.suffix.lower() in (".jpg", ".jpeg") else "png"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:image/{kind};base64,{data}"}}


def messages(goal: str, answer: str | None, shots: list[Path]) -> list[dict[str, Any]]:
    said = answer if answer is not None else "(the agent gave no answer)"
    intro = (f"Task: {goal}\n\nFinal answer of the agent: {said}\n\n"
             + (f"The last {len(shots)} screenshots follow, oldest first." if shots else "There are no screenshots."))
    content: list[dict[str, Any]] = [{"type": "text", "text": intro}]
    content += [_image(path) for path in shots]
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]


def _reask(why: str) -> dict[str, Any]:
    return {"role": "user", "content": f"Your reply could not be read ({why}). Reply again with exactly one JSON "
                                       'object: {"reasoning": "...", "verdict": "SUCCESS"} or "NOT SUCCESS".'}


class ModelJudge:
    """WebVoyager's judge over any OpenAI-compatible multimodal endpoint.

    A reply with no readable verdict is asked again, `reasks` times; then (and at once for a refusal) the judge has
    failed with kind `unparseable`: the attempt is masked and re-judgeable, never the agent's failure.
    """

    name = "webvoyager"

    def __init__(self, endpoint: Endpoint, last_screenshots: int | None = None, reasks: int = 2) -> None:
        self.endpoint = endpoint
        self.last = last_screenshots
        self.reasks = reasks
        self._client: openai.AsyncOpenAI | None = None

    def request_messages(self, goal: str, evidence: Evidence, shots: list[Path]) -> list[dict[str, Any]]:
        return messages(goal, evidence.answer, shots)

    async def judge(self, task: Task, evidence: Evidence) -> Verdict:
        goal = evidence.goal or task.goal  # the text the agent saw (dates as rendered for that run)
        shots = evidence.screenshot_paths(min(MAX_SCREENSHOTS, self.last) if self.last is not None
                                          else MAX_SCREENSHOTS)
        request: dict[str, Any] = {"model": self.endpoint.model,
                                   "messages": self.request_messages(goal, evidence, shots)}
        if self.endpoint.temperature is not None:
            request["temperature"] = self.endpoint.temperature
        details = {"screenshots": [path.name for path in shots], "goal": goal}
        for asked in range(self.reasks + 1):
            content = await self._complete(request)
            try:
                success, reasoning = parse_verdict(content)
            except Unreadable as exc:
                why = str(exc)
                request["messages"] = [*request["messages"], {"role": "assistant", "content": content or ""},
                                       _reask(why)]
                continue
            return Verdict(success=success, reason=reasoning, judge=self.name, model=self.endpoint.model,
                           raw=content, details={**details, "asked": asked + 1})
        raise JudgeError(f"judge {self.endpoint.model}: no readable verdict after {self.reasks + 1} replies: {why}; "
                         f"last reply: {(content or '')[:200]!r}", kind="unparseable")

    async def _complete(self, request: dict[str, Any]) -> str | None:
        import openai

        if self._client is None:
            self._client = self.endpoint.client()
        where = f"judge {self.endpoint.model} at {self.endpoint.base_url}"
        try:
            response = await self._client.chat.completions.create(**request)
        except openai.APITimeoutError:
            raise JudgeError(f"{where}: timed out after {self.endpoint.timeout_s:g} s", kind="timeout") from None
        except openai.APIConnectionError as exc:
            raise JudgeError(f"{where}: unreachable ({self.endpoint.redact(str(exc))})", kind="transport") from None
        except openai.AuthenticationError:
            raise JudgeError(f"{where}: authentication failed (HTTP 401)", kind="auth") from None
        except openai.APIStatusError as exc:
            raise JudgeError(f"{where}: HTTP {exc.status_code}: {self.endpoint.redact(_first_line(exc))}",
                             kind="http") from None
        except (openai.APIResponseValidationError, ValueError) as exc:
            raise JudgeError(f"{where}: the response is not a chat completion ({_first_line(exc)})",
                             kind="schema") from None
        usage = getattr(response, "usage", None)
        charge(read_usage(usage.model_dump() if hasattr(usage, "model_dump") else usage), self.endpoint.prices)
        choices = getattr(response, "choices", None)
        message = getattr(choices[0], "message", None) if choices else None
        if message is None:
            raise JudgeError(f"{where}: the response is not a chat completion (no message in it)", kind="schema")
        if getattr(message, "refusal", None):
            raise JudgeError(f"{where}: the judge refused: {str(message.refusal)[:200]}", kind="unparseable")
        return message.content

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
