"""The `webjudge` protocol: Online-Mind2Web's WebJudge, in its three stages.

1. Key points: the model lists what the task requires (read from after "**Key Points**:", else "Key Points:").
2. Each screenshot is scored 1-5 for relevance to them (the first digit between the first and second "Score"), one
   call per screenshot, all at once; those scored at the threshold (3) or more are kept (at most 50) with the
   reasoning given for them; a reply with no score scores 0.
3. The outcome: the task, the key points, the action history (each action with the URL it was taken on) and the
   kept screenshots with their reasoning. As upstream reads it: "success" after the first "Status:" passes, any
   other text there fails; a reply with no "Status:" at all is asked again, then unparseable.

The prompt texts are read at run time from the pinned upstream file: in each of its functions `identify_key_points`,
`judge_image` and `WebJudge_Online_Mind2Web_eval`, the string assigned to `system_msg` and the templates assigned to
`prompt` (filled with `str.format`: task, key_points, last_actions, thoughts). The outcome stage has two: the one
naming `{thoughts}` when screenshots were kept, the other when none was. Screenshots go as JPEG at detail "high",
as upstream encodes them.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any

from PIL import Image

from webeval.judges.protocols.chat import ChatJudge
from webeval.judges.protocols.pinned import PromptPin, locate
from webeval.models import Endpoint, Unreadable
from webeval.outcomes.evidence import IMPORTED_ACTION, Evidence
from webeval.outcomes.record import JudgeError
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

# The sha256 is of the 9,962-byte file that two independent verbatim copies share (docs/judges.md, "Provenance").
WEBJUDGE = PromptPin("OSU-NLP-Group/Online-Mind2Web", "ccdeb0d6327c1bb48ae15f35afa2dfedb21bb60e",
                     "src/methods/webjudge_online_mind2web.py",
                     "e3cd499b7c1fc92cbd51d3c4216c95ebab774c2c2cd998c5ad6dad94710780c4")
STAGES = ("identify_key_points", "judge_image", "WebJudge_Online_Mind2Web_eval")
THRESHOLD = 3
MAX_KEPT = 50
_DIGIT = re.compile(r"[1-5]")


def read_prompts(pin: PromptPin, folder: Path) -> dict[str, list[str]]:
    """{function: [system, template, (template)]} from the pinned file, its sha256 checked first."""
    path = locate(pin, folder)
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if not pin.sha256 or actual != pin.sha256:
        raise JudgeError(f"{path}: sha256 {actual[:12]}... is not the pin of {pin.describe()} "
                         f"({pin.sha256[:12] or 'none recorded yet'}); see docs/judges.md", kind="config")
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(data)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in STAGES:
            system, templates = None, []
            for inner in ast.walk(node):
                if isinstance(inner, ast.Assign) and isinstance(inner.value, ast.Constant) \
                        and isinstance(inner.value.value, str) and isinstance(inner.targets[0], ast.Name):
                    name = inner.targets[0].id
                    if name == "system_msg" and system is None:
                        system = inner.value.value
                    elif name == "prompt":
                        templates.append(inner.value.value)
            if system is not None and templates:
                found[node.name] = [system, *templates]
    missing = [stage for stage in STAGES if stage not in found]
    if missing:
        raise JudgeError(f"{path}: no system_msg and prompt in {', '.join(missing)}", kind="config")
    return found


def key_points(reply: str) -> str:
    text = reply.replace("\n\n", "\n")
    tail = text.split("**Key Points**:")[1] if "**Key Points**:" in text else text.split("Key Points:")[-1]
    return "\n".join(line.lstrip() for line in tail.splitlines())


def score(reply: str) -> tuple[int, str]:
    """(score, reasoning) of a screenshot; a reply with no score scores 0."""
    digits = _DIGIT.findall(reply.split("Score")[1]) if "Score" in reply else []
    reasoning = reply.split("**Reasoning**:")[-1].strip().split("\n\n")[0].replace("\n", " ")
    return (int(digits[0]) if digits else 0), reasoning


def status(reply: str) -> bool | None:
    """Upstream's reading: "success" in the text after the first "status:" (any case); None with no "status:"."""
    parts = reply.lower().split("status:")
    return None if len(parts) < 2 else "success" in parts[1]


def _decided(reply: str) -> bool:
    success = status(reply)
    if success is None:
        raise Unreadable("no 'Status: success' or 'Status: failure'")
    return success


def _jpeg(path: Path) -> dict[str, Any]:
    """A screenshot as upstream sends it: re-encoded as JPEG (Pillow's default quality), detail high."""
    buffer = io.BytesIO()
    with Image.open(path) as image:
        image.convert("RGB").save(buffer, format="JPEG")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{data}", "detail": "high"}}


def action_history(evidence: Evidence) -> list[str]:
    """Each action the agent took, with the URL it was taken on; the closing answer is the agent's claim, not an
    action, and is left out. An imported action is its source's own text (as upstream's action history is)."""
    lines = []
    for index, action in enumerate(evidence.actions):
        if action.get("tool") == "terminate":
            continue
        url = evidence.urls[index] if index < len(evidence.urls) else ""
        said = str(action.get("text", "")) if action.get("tool") == IMPORTED_ACTION else json.dumps(
            action, ensure_ascii=False)
        lines.append(said + (f" (on {url})" if url else ""))
    return lines


class WebJudge(ChatJudge):
    name = "webjudge"

    def __init__(self, endpoint: Endpoint, prompts: Path, last_screenshots: int | None = None,
                 reasks: int = 2, pin: PromptPin = WEBJUDGE) -> None:
        super().__init__(endpoint, last_screenshots, reasks)
        self.prompts = read_prompts(pin, prompts)
        self.prompt_version = pin.version

    def _request(self, system: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {"model": self.endpoint.model, "temperature": 0,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": content}]}

    async def judge(self, task: Task, evidence: Evidence) -> Verdict:
        goal = evidence.goal or task.goal
        system, template = self.prompts["identify_key_points"][:2]
        points = key_points(await self.ask(self._request(system, [{"type": "text", "text": template.format(
            task=goal)}])) or "")
        shots = evidence.screenshot_paths(self.last)
        system, template = self.prompts["judge_image"][:2]
        text = template.format(task=goal, key_points=points)
        images = {path: _jpeg(path) for path in shots}  # encoded once: a kept screenshot is sent twice
        replies = await asyncio.gather(*(self.ask(self._request(system, [{"type": "text", "text": text},
                                                                         images[path]])) for path in shots))
        scored = [(path, *score(reply or "")) for path, reply in zip(shots, replies)]
        kept = [(path, reasoning) for path, value, reasoning in scored if value >= THRESHOLD][:MAX_KEPT]
        return await self._outcome(goal, points, evidence, kept, images, {
            "key_points": points, "scores": {path.name: value for path, value, _ in scored},
            "kept": [path.name for path, _ in kept], "urls": evidence.urls})

    async def _outcome(self, goal: str, points: str, evidence: Evidence, kept: list[tuple[Path, str]],
                       images: dict[Path, dict[str, Any]], details: dict[str, Any]) -> Verdict:
        system, *templates = self.prompts["WebJudge_Online_Mind2Web_eval"]
        template = next((one for one in templates if ("{thoughts}" in one) == bool(kept)), templates[0])
        numbered = lambda items: "\n".join(f"{i + 1}. {item}" for i, item in enumerate(items))  # noqa: E731
        text = template.format(task=goal, key_points=points, last_actions=numbered(action_history(evidence)),
                               thoughts=numbered([reasoning for _, reasoning in kept if reasoning]))
        request = self._request(system, [{"type": "text", "text": text}, *(images[path] for path, _ in kept)])
        read = await self.ask_until_read(request, _decided)
        return self.verdict(read.value, read.content.strip(), read.content, {**details, "asked": read.asked})
