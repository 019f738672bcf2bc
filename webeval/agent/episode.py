"""What one episode produced: the agent's result, and the evidence a judge reads later with no browser."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from webeval.outcomes.cost import TOKENS
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import FailureClass, InfraError
from webeval.outcomes.verdict import Verdict


@dataclass
class StepRecord:
    step: int
    screenshot: str
    url: str
    title: str
    actions: list[dict[str, Any]] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    error: str | None = None
    raw: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    retries: int = 0
    latency_s: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    screenshot_sha256: str = ""
    tokens: dict[str, list] | None = None  # the policy's token ids and log-probabilities for this turn, as received


@dataclass
class Episode:
    task_id: str
    folder: Path
    attempt: int = 0  # the number of its attempt folder
    answer: str | None = None
    status: str | None = None  # what terminate said: success | failure
    failure_class: FailureClass | None = None  # set when the agent's run alone decides the failure
    reason: str = ""
    infra: InfraError | None = None
    steps: list[StepRecord] = field(default_factory=list)
    duration_s: float = 0.0
    final_url: str = ""
    state: dict[str, Any] | None = None
    verdict: Verdict | None = None
    goal: str | None = None  # the goal the agent got, when the page made it up at the start

    def totals(self) -> dict[str, float]:
        """Policy accounting over the episode: tokens, retries and time spent waiting for the policy."""
        totals: dict[str, float] = {**dict.fromkeys(TOKENS, 0), "retries": 0, "policy_s": 0.0}
        for step in self.steps:
            for name in TOKENS:
                totals[name] += step.usage.get(name, 0)
            totals["retries"] += step.retries
            totals["policy_s"] += step.latency_s
        totals["policy_s"] = round(totals["policy_s"], 3)
        return totals

    @property
    def screenshots(self) -> list[Path]:
        return [self.folder / s.screenshot for s in self.steps]

    def evidence(self, goal: str) -> Evidence:
        return Evidence(
            task_id=self.task_id,
            goal=self.goal or goal,
            answer=self.answer,
            status=self.status,
            failure_class=self.failure_class.value if self.failure_class else None,
            reason=self.reason,
            infra={"kind": self.infra.kind, "message": self.infra.message} if self.infra else None,
            final_url=self.final_url,
            urls=[s.url for s in self.steps],
            titles=[s.title for s in self.steps],
            actions=[a for s in self.steps for a in s.actions],
            screenshots=[s.screenshot for s in self.steps],
            state=self.state,
            duration_s=round(self.duration_s, 3),
            folder=self.folder,
        )


def step_json(record: StepRecord) -> dict[str, Any]:
    return asdict(record)
