"""`--gate-*`: the exit status CI gates on, decided from the reconciled summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from webeval.outcomes.gate import Gate, decide
from webeval.outcomes.reconcile import Summary

GATE = pytest.StashKey[Gate]()
VERDICT_LINE = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("webeval")
    group.addoption("--gate-min-score", type=float, default=None, metavar="X",
                    help="exit 10 when the score (passed / N) is below X")
    group.addoption("--gate-baseline", default=None, metavar="PATH",
                    help="a baseline summary.json: exit 10 when the score fell below it by more than the tolerance")
    group.addoption("--gate-tolerance", type=float, default=0.02, metavar="T", help="baseline tolerance (0.02)")
    group.addoption("--allow-incomplete", action="store_true",
                    help="accept an incomplete run: no exit 12 for selected tasks that did not complete, and the gate "
                         "reads the score's lower bound (otherwise an incomplete run exits 11 at the gate)")


def baseline_score(path: str) -> float:
    try:
        score = json.loads(Path(path).read_text(encoding="utf-8"))["score"]
    except OSError as exc:
        raise pytest.UsageError(f"--gate-baseline {path}: cannot read it ({exc.strerror})") from None
    except (json.JSONDecodeError, KeyError, TypeError):
        raise pytest.UsageError(f"--gate-baseline {path}: not a webeval summary.json (no numeric 'score')") from None
    if not isinstance(score, (int, float)):
        raise pytest.UsageError(f"--gate-baseline {path}: 'score' is not a number")
    return float(score)


def pytest_configure(config: pytest.Config) -> None:
    option = config.option
    for name in ("gate_min_score", "gate_tolerance"):
        value = getattr(option, name)
        if value is not None and not 0 <= value <= 1:
            raise pytest.UsageError(f"--{name.replace('_', '-')} {value}: must be between 0 and 1")
    config.stash[GATE] = Gate(
        min_score=option.gate_min_score,
        baseline_score=baseline_score(option.gate_baseline) if option.gate_baseline else None,
        tolerance=option.gate_tolerance,
        allow_incomplete=option.allow_incomplete,
    )


def apply(session: pytest.Session, summary: Summary) -> None:
    """With a gate, the run's exit status is the gate's decision, not pytest's count of failed tests."""
    gate = session.config.stash.get(GATE, None)
    if gate is None or not gate.active:
        return
    status, line = decide(gate, summary)
    session.config.stash[VERDICT_LINE] = line
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        session.exitstatus = status
