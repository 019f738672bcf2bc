"""95% intervals of the score: Wilson's for a complete run, widened by the masked and missing tasks of an incomplete
one, per run and per site; checked against scipy on known tables, in summary.json, summary.md and the headline."""

from __future__ import annotations

import json

import pytest
from scipy.stats import binomtest

from webeval.cli import main
from webeval.outcomes.intervals import score_interval, wilson
from webeval.outcomes.reconcile import reconcile, summary_lines, write_summary
from webeval.outcomes.record import AttemptRecord, FailureClass, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.tasks import Population


def scipy_wilson(successes: int, n: int) -> tuple[float, float]:
    ci = binomtest(successes, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


@pytest.mark.parametrize("successes, n", [(0, 1), (1, 1), (0, 10), (10, 10), (1, 2), (3, 45), (44, 45), (45, 45),
                                          (321, 643), (5, 8), (87, 100), (1, 643)])
def test_wilson_is_scipys(successes, n):
    assert wilson(successes, n) == pytest.approx(scipy_wilson(successes, n), abs=1e-12)


@pytest.mark.parametrize("n, passed, failed", [(45, 40, 3), (8, 4, 1), (10, 0, 0), (643, 300, 300), (5, 5, 0)])
def test_an_incomplete_interval_is_widened_by_every_task_without_a_result(n, passed, failed):
    low, high = score_interval(n, passed, failed)
    assert low == pytest.approx(scipy_wilson(passed, n)[0], abs=1e-12)  # every hole failed
    assert high == pytest.approx(scipy_wilson(n - failed, n)[1], abs=1e-12)  # every hole passed
    assert low <= passed / n <= (n - failed) / n <= high


def test_a_complete_run_has_the_plain_wilson_interval():
    assert score_interval(45, 44, 1) == pytest.approx(scipy_wilson(44, 45), abs=1e-12)


def test_a_count_outside_zero_to_n_is_refused():
    with pytest.raises(ValueError, match="between 0 and n"):
        wilson(5, 4)


IDS = tuple(f"Shop--{i}" for i in range(6)) + tuple(f"News--{i}" for i in range(4))
POP = Population(name="table", ids=IDS, sha256="ab" * 32, sites={t: t.split("--")[0] for t in IDS})


def record(task_id: str, outcome: Outcome) -> AttemptRecord:
    return AttemptRecord(run_id="run", task_id=task_id, site=task_id.split("--")[0], outcome=outcome,
                         failure_class=FailureClass.wrong_answer if outcome is Outcome.failed else None,
                         kind="browser" if outcome is Outcome.infra_error else None)


# Shop: 4 passed, 1 failed, 1 masked; News: 2 passed, 1 failed, 1 missing
TABLE = [record("Shop--0", Outcome.passed), record("Shop--1", Outcome.passed), record("Shop--2", Outcome.passed),
         record("Shop--3", Outcome.passed), record("Shop--4", Outcome.failed), record("Shop--5", Outcome.infra_error),
         record("News--0", Outcome.passed), record("News--1", Outcome.passed), record("News--2", Outcome.failed)]


def test_summary_json_and_the_headline_carry_the_interval_per_run_and_per_site(tmp_path):
    run_dir = RunDir(tmp_path / "run").create(POP)
    for item in TABLE:
        run_dir.append(item)
    summary = write_summary(run_dir)
    data = json.loads((run_dir.path / "summary.json").read_text())
    assert data["interval_95"] == pytest.approx([scipy_wilson(6, 10)[0], scipy_wilson(8, 10)[1]], abs=1e-12)
    assert data["interval_method"] == "wilson"
    assert data["per_site"]["Shop"]["interval_95"] == pytest.approx(
        [scipy_wilson(4, 6)[0], scipy_wilson(5, 6)[1]], abs=1e-12)
    assert data["per_site"]["News"]["interval_95"] == pytest.approx(
        [scipy_wilson(2, 4)[0], scipy_wilson(3, 4)[1]], abs=1e-12)
    low, high = data["interval_95"]
    headline = f"incomplete: score between 60.0% and 80.0% (1 masked, 1 missing), 95% interval {low:.1%}..{high:.1%}"
    assert summary.headline() == headline
    assert f"**{headline}**" in (run_dir.path / "summary.md").read_text()
    shop = data["per_site"]["Shop"]["interval_95"]
    assert f"| Shop | 6 | 4 | 1 | 1 | 0 | 66.7% | {shop[0]:.1%}..{shop[1]:.1%} |" in (
        run_dir.path / "summary.md").read_text()
    assert any(line.split()[-1] == f"{shop[0]:.1%}..{shop[1]:.1%}" for line in summary_lines(summary)
               if line.strip().startswith("Shop"))


def test_webeval_summary_prints_the_interval(tmp_path, capsys):
    run_dir = RunDir(tmp_path / "run").create(POP)
    for task_id in IDS:
        run_dir.append(record(task_id, Outcome.passed if task_id != "News--3" else Outcome.failed))
    assert main(["summary", str(run_dir.path)]) == 0
    low, high = scipy_wilson(9, 10)
    headline = capsys.readouterr().out.splitlines()[1]
    assert headline.startswith(f"  score 9/10 = 90.0%, 95% interval {low:.1%}..{high:.1%}"), headline
    assert reconcile(POP, run_dir.records()).interval_95 == pytest.approx((low, high), abs=1e-12)
