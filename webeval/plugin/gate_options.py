"""`--gate-*` (webeval.outcomes.gate's family): the exit status CI gates on, decided from the reconciled summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from webeval.flags import OptionError, add_pytest_options, values_of
from webeval.outcomes.comparison import ComparisonError, compare
from webeval.outcomes.gate import GATE_FLAGS, GATE_PASSED, Gate, decide, decide_paired, gate_of
from webeval.outcomes.reconcile import Summary

GATE = pytest.StashKey[Gate]()
VERDICT_LINE = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_pytest_options(parser.getgroup("webeval"), GATE_FLAGS)


def pytest_configure(config: pytest.Config) -> None:
    try:
        config.stash[GATE] = gate_of(values_of(config.option, GATE_FLAGS))
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None


def apply(session: pytest.Session, summary: Summary, run_dir: Path) -> None:
    """With a gate, the run's exit status is the gate's decision, not pytest's count of failed tests."""
    gate = session.config.stash.get(GATE, None)
    if gate is None or not gate.active:
        return
    status, line = decide(gate, summary)
    if status == GATE_PASSED and gate.paired_baseline is not None:
        scored = gate.min_score is not None or gate.baseline_score is not None
        try:
            status, paired = decide_paired(compare(gate.paired_baseline, run_dir), gate.alpha, gate.allow_incomplete)
        except ComparisonError as exc:
            status, paired = pytest.ExitCode.USAGE_ERROR, f"gate: --gate-paired-baseline: {exc}"
        line = f"{line}; {paired}" if scored and status == GATE_PASSED else paired
    session.config.stash[VERDICT_LINE] = line
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        session.exitstatus = status
