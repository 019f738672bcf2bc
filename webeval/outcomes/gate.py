"""CI gating on a run's summary: a minimum score, no regression against a baseline, and completeness."""

from __future__ import annotations

from dataclasses import dataclass

from webeval.outcomes.reconcile import Summary

# Exit statuses of a gated run (pytest's own are 0-5).
GATE_PASSED = 0
GATE_SCORE = 10  # below --gate-min-score, or below the baseline by more than the tolerance
GATE_INCOMPLETE = 11  # the run has holes and --allow-incomplete was not given
SELECTED_INCOMPLETE = 12  # a task this session ran did not complete (masked or not run), without --allow-incomplete


@dataclass(frozen=True)
class Gate:
    min_score: float | None = None
    baseline_score: float | None = None
    tolerance: float = 0.02
    allow_incomplete: bool = False

    @property
    def active(self) -> bool:
        return self.min_score is not None or self.baseline_score is not None


def decide(gate: Gate, summary: Summary) -> tuple[int, str]:
    """(exit status, one line saying why). With --allow-incomplete the gate reads the score's lower bound."""
    if not summary.complete and not gate.allow_incomplete:
        holes = summary.n - summary.passed - summary.failed
        return GATE_INCOMPLETE, (f"gate failed: the run is incomplete ({holes} of {summary.n} tasks without a valid "
                                 "result); resume it, or pass --allow-incomplete")
    score = summary.score_low
    if gate.min_score is not None and score < gate.min_score:
        return GATE_SCORE, f"gate failed: score {score:.4f} is below the minimum {gate.min_score:.4f}"
    if gate.baseline_score is not None and score < gate.baseline_score - gate.tolerance:
        return GATE_SCORE, (f"gate failed: score {score:.4f} is below the baseline {gate.baseline_score:.4f} "
                            f"by more than {gate.tolerance:.4f}")
    return GATE_PASSED, f"gate passed: score {score:.4f}"


def selected_incomplete(unfinished: dict[str, int], selected: int, cause: str | None = None,
                        remedy: str | None = None) -> str:
    """The one line of a session that exits 12: why it stopped (if it was stopped), which of its tasks did not
    complete, and what to do."""
    what = ", ".join(f"{count} {key}" for key, count in sorted(unfinished.items()))
    remedy = remedy or "run them again with --resume DIR, or pass --allow-incomplete"
    head = f"webeval: exit {SELECTED_INCOMPLETE}: " + (f"{cause}; " if cause else "")
    return f"{head}{sum(unfinished.values())} of {selected} selected tasks did not complete ({what}); {remedy}"
