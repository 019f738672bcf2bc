"""`--epochs K`: every task runs K times, each attempt a test of its own (`test[<task id>.e<k>]`), and the run's
fixed denominator becomes N x K attempts; the summary adds pass@k, pass^k, flakiness and the run-to-run error."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("webeval").addoption(
        "--epochs", type=int, default=1, metavar="K",
        help="run every task K times, each attempt a test; the summary gives pass@k and pass^k (default 1)")


def pytest_configure(config: pytest.Config) -> None:
    if config.option.epochs < 1:
        raise pytest.UsageError(f"--epochs {config.option.epochs}: must be at least 1")
