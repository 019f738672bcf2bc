"""The `webvoyager` protocol: WebVoyager's own automatic evaluation, reproduced word for word.

Its system and user prompt texts and the closing line of the user turn are read from the pinned upstream
`auto_eval.py`. The request is the original's (the last K screenshots, K written into the prompt, temperature 0,
seed 42, at most 1000 tokens), and so is the reading: a reply containing NOT SUCCESS is a failure, else one
containing SUCCESS is a success, else it is unread (asked again, the same request, then judge_failed[unparseable]).
An attempt with no answer is a failure without a call, as in the original.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from webeval.judges.protocols.chat import ChatJudge, image_part
from webeval.judges.protocols.pinned import PromptPin, locate, read_constants
from webeval.models import Endpoint, Unreadable
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import JudgeError
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

AUTO_EVAL = PromptPin("MinorJerry/WebVoyager", "5a7896738c10bfb8b9edccce6bb0e0411f8ae569",
                      "evaluation/auto_eval.py",
                      "eb86b5a06e4fca1c483ce9a93812d505b69502d8ed3a6620affe14a188503f98")
PAPER_SCREENSHOTS = 15  # the original's run_eval.sh: --max_attached_imgs 15
SEED = 42
MAX_TOKENS = 1000


def read_prompts(folder: Path) -> tuple[str, str, str]:
    """(system prompt, user prompt template, closing line) from the pinned file."""
    constants = read_constants(AUTO_EVAL, folder, ("SYSTEM_PROMPT", "USER_PROMPT"))
    tree = ast.parse(locate(AUTO_EVAL, folder).read_bytes())
    closing = next((node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                    and isinstance(node.value, str) and node.value.startswith("Your verdict")), None)
    if closing is None:
        raise JudgeError(f"{AUTO_EVAL.describe()}: no closing line of the user turn", kind="config")
    return constants["SYSTEM_PROMPT"], constants["USER_PROMPT"], closing


def read_reply(content: str | None) -> bool | None:
    """The original's reading of a reply: NOT SUCCESS first, then SUCCESS, else None."""
    text = content or ""
    if "NOT SUCCESS" in text:
        return False
    return True if "SUCCESS" in text else None


def _decided(content: str) -> bool:
    success = read_reply(content)
    if success is None:
        raise Unreadable("neither SUCCESS nor NOT SUCCESS")
    return success


class WebVoyagerJudge(ChatJudge):
    name = "webvoyager"

    def __init__(self, endpoint: Endpoint, prompts: Path, last_screenshots: int | None = None,
                 reasks: int = 2) -> None:
        super().__init__(endpoint, last_screenshots if last_screenshots is not None else PAPER_SCREENSHOTS, reasks)
        self.system, self.user, self.closing = read_prompts(prompts)
        self.prompt_version = AUTO_EVAL.version

    def messages(self, goal: str, answer: str, shots: list[Path]) -> list[dict[str, Any]]:
        intro = self.user.replace("<task>", goal).replace("<answer>", answer).replace("<num>", str(self.last))
        content = [{"type": "text", "text": intro}, *(image_part(path) for path in shots),
                   {"type": "text", "text": self.closing}]
        return [{"role": "system", "content": self.system}, {"role": "user", "content": content}]

    async def judge(self, task: Task, evidence: Evidence) -> Verdict:
        goal = evidence.goal or task.goal
        if evidence.answer is None:
            return self.verdict(False, "the agent gave no answer", None, {"asked": 0})
        shots = evidence.screenshot_paths(self.last)
        request: dict[str, Any] = {"model": self.endpoint.model, "max_tokens": MAX_TOKENS, "seed": SEED,
                                   "temperature": 0, "messages": self.messages(goal, evidence.answer, shots)}
        read = await self.ask_until_read(request, _decided)
        return self.verdict(read.value, read.content.strip(), read.content,
                            {"screenshots": [path.name for path in shots], "goal": goal, "asked": read.asked})
