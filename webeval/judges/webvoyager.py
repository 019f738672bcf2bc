"""The WebVoyager judge: a multimodal model reads the task, the agent's final answer and its last screenshots.

The protocol follows WebVoyager's automatic evaluation (the screenshots outrank the answer; every part of the task
must be done), put in our own words, and asks for a JSON verdict with the judge's reasoning. The judge reads only the
evidence of an attempt, so it can run again later with no browser.

Outcomes: a reply that arrives but cannot be read as a verdict is a failed task (failure class judge_unparseable);
transport, timeout, authentication, HTTP errors and a response that is not a chat completion are a JudgeError.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webeval.outcomes.record import FailureClass, JudgeError
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
    api_key: str | None = None  # the secret itself, read from the environment; never logged
    timeout_s: float = 120.0
    retries: int = 2
    temperature: float | None = 0.0

    def client(self) -> openai.AsyncOpenAI:
        import openai

        return openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key or "EMPTY",
                                  timeout=self.timeout_s, max_retries=self.retries)

    def redact(self, text: str) -> str:
        return text.replace(self.api_key, "***") if self.api_key else text


def parse_verdict(content: str | None) -> tuple[bool, str] | str:
    """(success, reasoning) from the judge's reply, or why it cannot be read."""
    if not content or not content.strip():
        return "the reply is empty"
    text = content.strip()
    candidates = [text, *_FENCE.findall(text)]
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{"):text.rindex("}") + 1])
    document = None
    for candidate in candidates:
        try:
            document = json.loads(candidate)
            break
        except json.JSONDecodeError:
            continue
    if not isinstance(document, dict):
        return "the reply holds no JSON object"
    verdict = document.get("verdict")
    word = " ".join(verdict.replace("_", " ").upper().split()) if isinstance(verdict, str) else None
    if word not in ("SUCCESS", "NOT SUCCESS"):
        return f"'verdict' is {verdict!r}, not \"SUCCESS\" or \"NOT SUCCESS\""
    reasoning = document.get("reasoning")
    if not isinstance(reasoning, str) or not reasoning.strip():
        return "'reasoning' is missing"
    return word == "SUCCESS", reasoning.strip()


def _image(path: Path) -> dict[str, Any]:
    kind = "jpeg" if path.suffix.lower() in (".jpg", ".jpeg") else "png"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:image/{kind};base64,{data}"}}


def chosen_screenshots(evidence: dict[str, Any], folder: Path, last: int | None) -> list[str]:
    names = [n for n in evidence.get("screenshots") or [] if (folder / n).is_file()]
    keep = min(MAX_SCREENSHOTS, last) if last is not None else MAX_SCREENSHOTS
    return names[-keep:] if keep else []


def messages(goal: str, answer: str | None, folder: Path, names: list[str]) -> list[dict[str, Any]]:
    said = answer if answer is not None else "(the agent gave no answer)"
    intro = (f"Task: {goal}\n\nFinal answer of the agent: {said}\n\n"
             + (f"The last {len(names)} screenshots follow, oldest first." if names else "There are no screenshots."))
    content: list[dict[str, Any]] = [{"type": "text", "text": intro}]
    content += [_image(folder / name) for name in names]
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]


class ModelJudge:
    """WebVoyager's judge over any OpenAI-compatible multimodal endpoint."""

    name = "webvoyager"

    def __init__(self, endpoint: Endpoint, last_screenshots: int | None = None) -> None:
        self.endpoint = endpoint
        self.last = last_screenshots
        self._client: openai.AsyncOpenAI | None = None

    async def judge(self, task: Task, evidence: dict[str, Any], folder: Path) -> Verdict:
        goal = evidence.get("goal") or task.goal  # the text the agent saw (dates as rendered for that run)
        names = chosen_screenshots(evidence, Path(folder), self.last)
        request: dict[str, Any] = {"model": self.endpoint.model,
                                   "messages": messages(goal, evidence.get("answer"), Path(folder), names)}
        if self.endpoint.temperature is not None:
            request["temperature"] = self.endpoint.temperature
        content = await self._complete(request)
        details = {"screenshots": names, "goal": goal}
        parsed = parse_verdict(content)
        if isinstance(parsed, str):
            return Verdict(success=False, reason=f"the judge's reply could not be read: {parsed}", judge=self.name,
                           model=self.endpoint.model, raw=content,
                           details={**details, "failure_class": FailureClass.judge_unparseable.value})
        success, reasoning = parsed
        return Verdict(success=success, reason=reasoning, judge=self.name, model=self.endpoint.model,
                       raw=content, details=details)

    async def _complete(self, request: dict[str, Any]) -> str | None:
        import openai

        if self._client is None:
            self._client = self.endpoint.client()
        where = f"judge {self.endpoint.model} at {self.endpoint.base_url}"
        try:
            response = await self._client.chat.completions.create(**request)
        except openai.APITimeoutError:
            raise JudgeError(f"{where}: timed out after {self.endpoint.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            raise JudgeError(f"{where}: unreachable ({self.endpoint.redact(str(exc))})") from None
        except openai.AuthenticationError:
            raise JudgeError(f"{where}: authentication failed (HTTP 401)") from None
        except openai.APIStatusError as exc:
            raise JudgeError(f"{where}: HTTP {exc.status_code}: {self.endpoint.redact(_first_line(exc))}") from None
        except (openai.APIResponseValidationError, ValueError) as exc:
            raise JudgeError(f"{where}: the response is not a chat completion ({_first_line(exc)})") from None
        choices = getattr(response, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise JudgeError(f"{where}: the response is not a chat completion (no message in it)")
        return choices[0].message.content

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
