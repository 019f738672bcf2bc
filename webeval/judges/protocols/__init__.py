"""Judge protocols: how a model judge is asked and how its reply is read, chosen with `--judge-protocol`.

- `webeval`: the harness's own prompt, a JSON verdict with the judge's reasoning (the default).
- `webvoyager`: WebVoyager's original automatic evaluation, its texts read from the pinned upstream file.
- `webjudge`: Online-Mind2Web's three stages (key points, screenshots scored for relevance, the outcome).
- `rubric`: WebGym's rubric judge: a ruling per fact of a rubric task's fact groups; success when every group holds.

Every verdict a protocol makes names it (`Verdict.judge` and `Verdict.protocol`) with its prompt version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from webeval.judges.protocols.original import AUTO_EVAL, WebVoyagerJudge
from webeval.judges.protocols.rubric import RubricJudge
from webeval.judges.protocols.webeval import WebevalJudge
from webeval.judges.protocols.webjudge import WEBJUDGE, WebJudge
from webeval.models import Endpoint
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

PROTOCOLS = ("webeval", "webvoyager", "webjudge", "rubric")
PROMPT_PINS = {"webvoyager": AUTO_EVAL, "webjudge": WEBJUDGE}  # what `webeval prepare judge-prompts` downloads


class ProtocolJudge(Protocol):
    name: str
    prompt_version: str
    endpoint: Endpoint
    reasks: int

    async def judge(self, task: Task, evidence: Evidence) -> Verdict: ...

    async def close(self) -> None: ...


def build(protocol: str, endpoint: Endpoint, screenshots: int | None, prompts: Path,
          temperature: float | None = 0.0) -> ProtocolJudge:
    """The judge of a protocol over an endpoint; `prompts` is the folder of pinned upstream prompt files, and
    `temperature` the sampling of the `webeval` protocol (the reproduced ones fix their own)."""
    if protocol == "webvoyager":
        return WebVoyagerJudge(endpoint, prompts, screenshots)
    if protocol == "webjudge":
        return WebJudge(endpoint, prompts, screenshots)
    if protocol == "rubric":
        return RubricJudge(endpoint, screenshots)
    if protocol == "webeval":
        return WebevalJudge(endpoint, screenshots, temperature=temperature)
    raise ValueError(f"judge protocol {protocol!r} is unknown: use one of {', '.join(PROTOCOLS)}")
