"""CI gating on a run's summary: a minimum score, no regression against a baseline, and completeness; or, paired,
"not significantly worse than the baseline run" (McNemar's exact test over the tasks of both).

The gate's options are declared once (`GATE_FLAGS`): pytest's plugin renders them all, `webeval gate` the paired
gate's level and `--allow-incomplete`; `gate_of(values)` makes the `Gate` or raises an OptionError of one line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from webeval.flags import Flag, OptionError, with_defaults
from webeval.outcomes.comparison import Comparison
from webeval.outcomes.reconcile import Summary
from webeval.outcomes.rundir import POPULATION

# Exit statuses of a gated run (pytest's own are 0-5).
GATE_PASSED = 0
GATE_SCORE = 10  # below --gate-min-score, or below the baseline by more than the tolerance
GATE_INCOMPLETE = 11  # the run has holes and --allow-incomplete was not given
SELECTED_INCOMPLETE = 12  # a task this session ran did not complete (masked or not run), without --allow-incomplete
RUN_DUPLICATES = 13  # the run holds two valid results of one task from two sessions: its score is not one run's


GATE_ALPHA = Flag("--gate-alpha", type=float, default=0.05, metavar="A",
                  help="the paired gate's significance level (0.05)")
ALLOW_INCOMPLETE = Flag("--allow-incomplete", action="store_true",
                        help="accept an incomplete run: no exit 12 for selected tasks that did not complete, and the "
                             "gate reads the score's lower bound, or, paired, the tasks both runs completed "
                             "(otherwise an incomplete run fails the gate)")
GATE_FLAGS = (
    Flag("--gate-min-score", type=float, metavar="X", help="exit 10 when the score (passed / N) is below X"),
    Flag("--gate-baseline", metavar="PATH",
         help="a baseline summary.json: exit 10 when the score fell below it by more than the tolerance"),
    Flag("--gate-tolerance", type=float, default=0.02, metavar="T", help="baseline tolerance (0.02)"),
    Flag("--gate-paired-baseline", metavar="DIR",
         help="a baseline run directory of the same population: exit 10 when this run is significantly worse than "
              "it, task by task (McNemar's exact test below --gate-alpha)"),
    GATE_ALPHA,
    ALLOW_INCOMPLETE,
)


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


def gate_alpha(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise OptionError(f"--gate-alpha {alpha:g}: must be between 0 and 1, such as 0.05")
    return alpha


def baseline_score(path: str) -> float:
    """The score of a baseline summary.json (`--gate-baseline`)."""
    try:
        score = json.loads(Path(path).read_text(encoding="utf-8"))["score"]
    except OSError as exc:
        raise OptionError(f"--gate-baseline {path}: cannot read it ({exc.strerror})") from None
    except (json.JSONDecodeError, KeyError, TypeError):
        raise OptionError(f"--gate-baseline {path}: not a webeval summary.json (no numeric 'score')") from None
    if not isinstance(score, (int, float)):
        raise OptionError(f"--gate-baseline {path}: 'score' is not a number")
    return float(score)


def gate_of(values: Mapping[str, Any]) -> Gate:
    """The gate GATE_FLAGS' values make (a missing one has its default); a bad value is an OptionError."""
    values = with_defaults(GATE_FLAGS, values)
    for name in ("gate_min_score", "gate_tolerance"):
        value = values[name]
        if value is not None and not 0 <= value <= 1:
            raise OptionError(f"--{name.replace('_', '-')} {value}: must be between 0 and 1")
    paired = values["gate_paired_baseline"]
    if paired and not (Path(paired) / POPULATION).is_file():
        raise OptionError(f"--gate-paired-baseline {paired}: not a run directory (no {POPULATION})")
    baseline = values["gate_baseline"]
    return Gate(min_score=values["gate_min_score"], baseline_score=baseline_score(baseline) if baseline else None,
                tolerance=values["gate_tolerance"], allow_incomplete=bool(values["allow_incomplete"]),
                paired_baseline=paired or None, alpha=gate_alpha(values["gate_alpha"]))


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


def selected_incomplete(unfinished: dict[str, int], selected: int, cause: str | None = None,
                        remedy: str | None = None) -> str:
    """The one line of a session that exits 12: why it stopped (if it was stopped), which of its tasks did not
    complete, and what to do."""
    what = ", ".join(f"{key}={count}" for key, count in sorted(unfinished.items()))
    remedy = remedy or "run them again with --resume DIR, or pass --allow-incomplete"
    head = f"webeval: exit {SELECTED_INCOMPLETE}: " + (f"{cause}; " if cause else "")
    return f"{head}{sum(unfinished.values())} of {selected} selected tasks did not complete ({what}); {remedy}"

def duplicates_line(duplicates: list[str]) -> str:
    """The last line of a session whose run ends with duplicates (it exits 13)."""
    shown = ", ".join(duplicates[:5]) + (" ..." if len(duplicates) > 5 else "")
    return (f"webeval: exit {RUN_DUPLICATES}: the run holds {len(duplicates)} duplicate{'s' * (len(duplicates) != 1)} "
            f"(tasks with valid results from two sessions: {shown}); its score is not one run's: see summary.md")


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
