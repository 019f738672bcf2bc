"""CI gating on a run's summary: a minimum score, no regression against a baseline, and completeness; or, paired,
"not significantly worse than the baseline run" (McNemar's exact test over the tasks of both)."""

from __future__ import annotations

from dataclasses import dataclass

from webeval.outcomes.comparison import Comparison
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
    paired_baseline: str | None = None  # a baseline run directory: not significantly worse than it
    alpha: float = 0.05  # the paired gate's significance level

    @property
    def active(self) -> bool:
        return self.min_score is not None or self.baseline_score is not None or self.paired_baseline is not None


def decide(gate: Gate, summary: Summary) -> tuple[int, str]:
    """(exit status, one line saying why). With --allow-incomplete the gate reads the score's lower bound."""
    if not summary.complete and not gate.allow_incomplete:
        return GATE_INCOMPLETE, incomplete_line(summary.n, summary.passed, summary.failed)
    score = summary.score_low
    if gate.min_score is not None and score < gate.min_score:
        return GATE_SCORE, f"gate failed: score {score:.4f} is below the minimum {gate.min_score:.4f}"
    if gate.baseline_score is not None and score < gate.baseline_score - gate.tolerance:
        return GATE_SCORE, (f"gate failed: score {score:.4f} is below the baseline {gate.baseline_score:.4f} "
                            f"by more than {gate.tolerance:.4f}")
    return GATE_PASSED, f"gate passed: score {score:.4f}"


def selected_incomplete(unfinished: dict[str, int], selected: int) -> str:
    """The one line of a session that exits 12: which of its tasks did not complete, and what to do."""
    what = ", ".join(f"{key}={count}" for key, count in sorted(unfinished.items()))
    return (f"webeval: exit {SELECTED_INCOMPLETE}: {sum(unfinished.values())} of {selected} selected tasks did not "
            f"complete ({what}); run them again with --resume DIR, or pass --allow-incomplete")


def incomplete_line(n: int, passed: int, failed: int) -> str:
    return (f"gate failed: the run is incomplete ({n - passed - failed} of {n} tasks without a valid result); resume "
            "it, or pass --allow-incomplete")


def decide_paired(comparison: Comparison, alpha: float = 0.05, allow_incomplete: bool = False) -> tuple[int, str]:
    """(exit status, one line): the candidate run fails when it is significantly worse than the baseline: more tasks
    newly failing than newly passing, and McNemar's exact test below `alpha`. Masked and missing tasks are not
    compared; an incomplete candidate fails unless allowed, and so does one with no task to compare."""
    run = comparison.candidate
    if not run.complete and not allow_incomplete:
        return GATE_INCOMPLETE, incomplete_line(run.n, run.passed, run.failed)
    if not comparison.comparable:
        return GATE_SCORE, "gate failed: no task is comparable with the baseline (each is masked or missing in one run)"
    mcnemar = comparison.mcnemar
    worse, p = mcnemar["newly_failing"] > mcnemar["newly_passing"], mcnemar["p_value"]
    what = (f"difference {comparison.difference:+.1%} (comparable={comparison.comparable}, "
            f"newly_failing={mcnemar['newly_failing']}, newly_passing={mcnemar['newly_passing']}), McNemar p={p:.4g}")
    if worse and p < alpha:
        return GATE_SCORE, f"gate failed: significantly worse than the baseline: {what} < {alpha:g}"
    return GATE_PASSED, f"gate passed: not significantly worse than the baseline: {what}" + (
        f" >= {alpha:g}" if worse else "")
