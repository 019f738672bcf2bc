"""Judge protocols: how a model judge is asked and how its reply is read, chosen with `--judge-protocol`.

- `webeval`: the harness's own prompt, a JSON verdict with the judge's reasoning (the default).
- `webvoyager`: WebVoyager's original automatic evaluation, its texts read from the pinned upstream file.
- `webjudge`: Online-Mind2Web's three stages (key points, screenshots scored for relevance, the outcome).
- `rubric`: WebGym's rubric judge: a ruling per fact of a rubric task's fact groups; success when every group holds.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Protocol

from webeval.judges.protocols.original import AUTO_EVAL, WebVoyagerJudge
from webeval.judges.protocols.rubric import RubricJudge
from webeval.judges.protocols.webjudge import WEBJUDGE, WebJudge, action_history
from webeval.judges.webvoyager import SYSTEM_PROMPT, Endpoint, ModelJudge
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

PROTOCOLS = ("webeval", "webvoyager", "webjudge", "rubric")
PROMPT_PINS = {"webvoyager": AUTO_EVAL, "webjudge": WEBJUDGE}  # what `webeval prepare judge-prompts` downloads


class ProtocolJudge(Protocol):
    name: str
    prompt_version: str

    async def judge(self, task: Task, evidence: Evidence) -> Verdict: ...

    async def close(self) -> None: ...


TRAIL = "The pages the agent visited, oldest first:\n{urls}\n\nIts actions, oldest first:\n{actions}"


class WebevalJudge(ModelJudge):
    """Today's JSON protocol, with the visited URLs and the action history after the screenshots; its verdicts
    marked with the protocol and a hash of its prompt texts."""

    protocol = "webeval"
    prompt_version = "webeval#" + hashlib.sha256((SYSTEM_PROMPT + TRAIL).encode()).hexdigest()[:12]

    def request_messages(self, goal: str, evidence: Evidence, shots: list[Path]) -> list[dict[str, Any]]:
        asked = super().request_messages(goal, evidence, shots)
        trail = TRAIL.format(urls="\n".join(dict.fromkeys(evidence.urls)) or "(none)",
                             actions="\n".join(f"{i + 1}. {line}" for i, line in enumerate(action_history(evidence)))
                             or "(none)")
        asked[1]["content"] = [*asked[1]["content"], {"type": "text", "text": trail}]
        return asked

    async def judge(self, task: Task, evidence: Evidence) -> Verdict:
        verdict = await super().judge(task, evidence)
        return verdict.model_copy(update={"protocol": self.protocol, "prompt_version": self.prompt_version})


def build(protocol: str, endpoint: Endpoint, screenshots: int | None, prompts: Path) -> ProtocolJudge:
    """The judge of a protocol over an endpoint; `prompts` is the folder of pinned upstream prompt files."""
    if protocol == "webvoyager":
        return WebVoyagerJudge(endpoint, prompts, screenshots)
    if protocol == "webjudge":
        return WebJudge(endpoint, prompts, screenshots)
    if protocol == "rubric":
        return RubricJudge(endpoint, screenshots)
    if protocol == "webeval":
        return WebevalJudge(endpoint, screenshots)
    raise ValueError(f"judge protocol {protocol!r} is unknown: use one of {', '.join(PROTOCOLS)}")
