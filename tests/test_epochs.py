"""`--epochs K`: each task run K times, each attempt a test, the denominator N x K, and pass@k in the summary."""

from __future__ import annotations

import json

import pytest

from tests.runs import run
from webeval.outcomes.epochs import base_id, epoch_id, figures, pass_at, pass_hat


def test_epochs_on_the_local_suite_give_pass_at_k_in_the_summary(tmp_path):
    job = run(["suites/local", "-n", "2", "-p", "no:randomly", "-k", "Shop--1", "--epochs", "3",
               "--run-dir", str(tmp_path / "run")], tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "3 passed" in job.output  # each attempt a test of its own
    assert summary["n"] == 45 * 3 and summary["passed"] == 3  # the denominator is N x K
    assert summary["epochs"]["epochs"] == 3 and summary["epochs"]["tasks"] == 45
    assert summary["epochs"]["pass@k"]["3"] == pytest.approx(1 / 45) and summary["epochs"]["flaky"] == {}
    assert "epochs 3 over 45 tasks: mean pass@1 2.2%" in job.output and "pass@3 2.2%  pass^3 2.2%" in job.output
    folders = sorted(p.name for p in (tmp_path / "run" / "tasks").iterdir())
    assert folders == ["Shop--1.e1", "Shop--1.e2", "Shop--1.e3"]
    environment = (tmp_path / "run" / "allure-results" / "environment.properties").read_text()
    assert "pass@3=2.2%" in environment and "epochs=3" in environment  # Allure shows them too


def test_an_epoch_count_below_one_is_refused(tmp_path):
    job = run(["suites/local", "--epochs", "0", "--run-dir", str(tmp_path / "run")], tmp_path / "run")
    assert job.proc.returncode == 4 and "--epochs 0: must be at least 1" in job.output
    assert not (tmp_path / "run").exists()


def test_figures_of_a_flaky_run():
    # task a passes 3 of 3, b 1 of 3, c 0 of 3 (masked once, which counts as not passed)
    final = {epoch_id("a", k): "passed" for k in (1, 2, 3)}
    final |= {epoch_id("b", 1): "failed", epoch_id("b", 2): "passed", epoch_id("b", 3): "failed"}
    final |= {epoch_id("c", 1): "failed", epoch_id("c", 2): "judge_failed", epoch_id("c", 3): "missing"}
    got = figures(final, 3)
    assert got["mean_pass@1"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert got["pass@k"]["3"] == pytest.approx(2 / 3) and got["pass^k"]["3"] == pytest.approx(1 / 3)
    assert got["pass@k"]["2"] == pytest.approx((1 + 2 / 3 + 0) / 3)  # b: 1 - C(2,2)/C(3,2)
    assert got["flaky"] == {"b": "1/3"} and got["per_epoch"] == [pytest.approx(1 / 3), pytest.approx(2 / 3),
                                                                  pytest.approx(1 / 3)]
    assert got["stderr"] == pytest.approx(1 / 9)  # the per-epoch scores' standard deviation over sqrt(3)
    assert (pass_at(3, 0, 1), pass_hat(3, 3, 3), base_id("BBC News--3.e2")) == (0.0, 1.0, ("BBC News--3", 2))
