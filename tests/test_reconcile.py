"""Reconciliation against the fixed denominator: every id of the population counts, run or not."""

from __future__ import annotations

import pytest

from webeval.outcomes.reconcile import (
    final_records, reconcile, summary_json, summary_lines, summary_markdown,
)
from webeval.outcomes.record import AttemptRecord, FailureClass, Outcome
from webeval.tasks import Population

IDS = ("Shop--0", "Shop--1", "Shop--2", "Shop--3", "Flights--0", "Flights--1", "Recipes--0", "Recipes--1")
POP = Population(name="local", ids=IDS, sha256="0123456789ab" + "f" * 52,
                 sites={task_id: task_id.split("--")[0] for task_id in IDS})


def rec(task_id: str, outcome: Outcome | str, run_id: str = "run-1", **changes) -> AttemptRecord:
    return AttemptRecord(run_id=run_id, task_id=task_id, site=task_id.split('--')[0], outcome=Outcome(outcome), **changes)


def passed(task_id: str, **changes) -> AttemptRecord:
    return rec(task_id, Outcome.passed, **changes)


def failed(task_id: str, failure_class: FailureClass = FailureClass.wrong_answer, **changes) -> AttemptRecord:
    return rec(task_id, Outcome.failed, failure_class=failure_class, **changes)


def all_valid(n_passed: int) -> list[AttemptRecord]:
    return [passed(t) if i < n_passed else failed(t) for i, t in enumerate(IDS)]


def test_complete_run():
    summary = reconcile(POP, all_valid(6))
    assert (summary.n, summary.passed, summary.failed) == (8, 6, 2)
    assert summary.score == 6 / 8
    assert summary.score_completed == 6 / 8
    assert summary.missing == [] and summary.masked == {} and summary.duplicates == [] and summary.unexpected == []
    assert summary.complete is True
    assert summary.population == "local" and summary.sha256 == POP.sha256


def test_missing_ids_count_in_the_denominator():
    records = [passed("Shop--0"), passed("Shop--1"), failed("Flights--0")]  # only part of the population ran
    summary = reconcile(POP, records)
    assert summary.n == 8
    assert summary.score == 2 / 8
    assert summary.score_completed == 2 / 3
    assert summary.missing == ["Shop--2", "Shop--3", "Flights--1", "Recipes--0", "Recipes--1"]  # population order
    assert summary.complete is False
    assert summary.final["Shop--2"] == "missing" and summary.final["Shop--0"] == "passed"
    assert list(summary.final) == list(IDS)


def test_nothing_ran():
    summary = reconcile(POP, [])
    assert summary.score == 0.0
    assert summary.score_completed is None
    assert summary.missing == list(IDS)
    assert summary.complete is False


def test_empty_population():
    summary = reconcile(Population(name="none", ids=(), sha256="0" * 64), [passed("Shop--0")])
    assert summary.n == 0 and summary.score == 0.0 and summary.unexpected == ["Shop--0"]


# --- masked records ----------------------------------------------------------------------------------------------

def test_masked_counted_by_kind():
    records = all_valid(4)[:4] + [
        rec("Shop--0", Outcome.infra_error, kind="browser"),  # after a valid one: ignored
        rec("Flights--0", Outcome.infra_error, kind="browser"),
        rec("Flights--1", Outcome.infra_error, kind="browser"),
        rec("Recipes--0", Outcome.judge_failed),
        rec("Recipes--1", Outcome.not_run, kind="site_unreachable"),
    ]
    summary = reconcile(POP, records)
    assert summary.masked == {
        "infra_error[browser]": 2, "judge_failed": 1, "not_run[site_unreachable]": 1,
    }
    assert summary.passed == 4 and summary.score == 4 / 8 and summary.score_completed == 1.0
    assert summary.missing == []
    assert summary.complete is False
    assert summary.final["Flights--0"] == "infra_error" and summary.final["Shop--0"] == "passed"


def test_harness_error_masks_the_task():
    records = all_valid(8)[:-1] + [rec("Recipes--1", Outcome.harness_error, reason="TypeError")]
    summary = reconcile(POP, records)
    assert summary.masked == {"harness_error": 1}
    assert summary.complete is False
    assert summary.score == 7 / 8


@pytest.mark.parametrize("order", ["masked_first", "valid_first"])
def test_valid_record_supersedes_masked_ones(order):
    masked = [rec("Shop--0", Outcome.infra_error, kind="browser"), rec("Shop--0", Outcome.judge_failed)]
    valid = [failed("Shop--0", FailureClass.step_budget)]
    records = (masked + valid) if order == "masked_first" else (valid + masked)
    final, duplicates = final_records(POP, records)
    assert final["Shop--0"].outcome is Outcome.failed and duplicates == []
    summary = reconcile(POP, records)
    assert summary.masked == {} and summary.failed == 1
    assert summary.failure_classes == {"step_budget": 1}


def test_latest_masked_record_is_kept_when_there_is_no_valid_one():
    records = [
        rec("Shop--0", Outcome.infra_error, kind="browser", attempt=1),
        rec("Shop--0", Outcome.infra_error, kind="model_5xx", attempt=2),
        rec("Shop--0", Outcome.judge_failed, attempt=3),
    ]
    final, _ = final_records(POP, records)
    assert final["Shop--0"].attempt == 3
    assert reconcile(POP, records).masked == {"judge_failed": 1}
    assert reconcile(POP, records[:2]).masked == {"infra_error[model_5xx]": 1}


def test_masked_id_is_not_missing():
    summary = reconcile(POP, [rec("Shop--0", Outcome.not_run, kind="credential")])
    assert "Shop--0" not in summary.missing and len(summary.missing) == 7
    assert summary.final["Shop--0"] == "not_run"


# --- duplicates and re-judging -----------------------------------------------------------------------------------

def test_two_valid_records_from_different_runs_are_duplicates():
    records = all_valid(8) + [failed("Shop--1", run_id="run-2"), passed("Flights--0", run_id="run-2")]
    summary = reconcile(POP, records)
    assert summary.duplicates == ["Flights--0", "Shop--1"]
    assert summary.complete is False


def test_duplicate_with_the_same_verdict_is_still_a_duplicate():
    summary = reconcile(POP, all_valid(8) + [passed("Shop--0", run_id="shard-b")])
    assert summary.duplicates == ["Shop--0"] and summary.complete is False


def test_later_valid_record_in_the_same_run_supersedes():
    records = all_valid(8) + [failed("Shop--0", FailureClass.judge_unparseable, reason="re-judged")]
    final, duplicates = final_records(POP, records)
    assert duplicates == []
    assert final["Shop--0"].reason == "re-judged"
    summary = reconcile(POP, records)
    assert (summary.passed, summary.failed) == (7, 1)
    assert summary.failure_classes == {"judge_unparseable": 1}
    assert summary.complete is True


def test_rejudge_after_judge_failed_completes_the_task():
    records = all_valid(7) + [rec("Recipes--1", Outcome.judge_failed), passed("Recipes--1")]
    summary = reconcile(POP, records)
    assert summary.complete is True and summary.score == 1.0 and summary.masked == {}


# --- unexpected ids ----------------------------------------------------------------------------------------------

def test_unexpected_ids_are_reported_and_not_scored():
    records = all_valid(8) + [passed("Shop--99"), rec("Other--1", Outcome.infra_error, kind="x"), passed("Shop--99")]
    summary = reconcile(POP, records)
    assert summary.unexpected == ["Other--1", "Shop--99"]
    assert summary.n == 8 and summary.passed == 8 and summary.score == 1.0
    assert "Shop--99" not in summary.final
    assert summary.duplicates == []
    assert "Other" not in summary.per_site
    assert summary.complete is True


# --- per site and failure classes --------------------------------------------------------------------------------

def test_per_site_rates():
    records = [
        passed("Shop--0"), passed("Shop--1"), failed("Shop--2"), rec("Shop--3", Outcome.infra_error, kind="browser"),
        failed("Flights--0", FailureClass.no_answer),
        passed("Recipes--0"), passed("Recipes--1"),
    ]
    summary = reconcile(POP, records)
    assert list(summary.per_site) == ["Flights", "Recipes", "Shop"]
    shop, flights, recipes = summary.per_site["Shop"], summary.per_site["Flights"], summary.per_site["Recipes"]
    assert (shop.n, shop.passed, shop.failed, shop.masked, shop.missing, shop.score) == (4, 2, 1, 1, 0, 0.5)
    assert (flights.n, flights.passed, flights.failed, flights.masked, flights.missing) == (2, 0, 1, 0, 1)
    assert flights.score == 0.0
    assert (recipes.n, recipes.passed, recipes.score) == (2, 2, 1.0)
    assert summary.failure_classes == {"no_answer": 1, "wrong_answer": 1}


def test_score_completed_excludes_masked_and_missing():
    records = [passed("Shop--0"), failed("Shop--1"), failed("Shop--2"), passed("Shop--3"),
               rec("Flights--0", Outcome.infra_error, kind="browser")]
    summary = reconcile(POP, records)
    assert summary.score == 2 / 8
    assert summary.score_completed == 2 / 4


def test_complete_only_when_every_id_is_valid():
    assert reconcile(POP, all_valid(0)).complete is True
    assert reconcile(POP, all_valid(8)[:-1]).complete is False
    masked_last = all_valid(8)[:-1] + [rec("Recipes--1", Outcome.infra_error, kind="browser")]
    assert reconcile(POP, masked_last).complete is False


def test_summary_json_is_plain_data():
    data = summary_json(reconcile(POP, all_valid(3)))
    assert data["n"] == 8 and data["passed"] == 3 and data["per_site"]["Shop"]["passed"] == 3
    assert data["final"]["Recipes--1"] == "failed"


# --- summary text ------------------------------------------------------------------------------------------------

def mixed_summary():
    records = [
        passed("Shop--0"), passed("Shop--1"), failed("Shop--2", FailureClass.step_budget),
        rec("Shop--3", Outcome.infra_error, kind="browser"),
        passed("Flights--0"), rec("Flights--1", Outcome.judge_failed),
        passed("Recipes--0"), passed("Recipes--0", run_id="run-2"),
        passed("Nope--0"),
    ]  # Recipes--1 missing
    return reconcile(POP, records)


def test_summary_lines_contain_the_figures():
    summary = mixed_summary()
    assert (summary.passed, summary.failed, len(summary.missing)) == (4, 1, 1)
    text = "\n".join(summary_lines(summary))
    assert "webeval: local (0123456789ab): INCOMPLETE, 5 of 8 completed" in text
    # Wilson's lower bound of 4/8, its upper bound of (8 - 1)/8: the three tasks without a result widen it
    assert ("incomplete: score between 50.0% and 87.5% (2 masked, 1 missing), 95% interval 21.5%..97.8%"
            in text)
    assert "(over completed: 80.0%)" in text
    assert "passed=4, failed=1, masked=2, missing=1, duplicates=1, unexpected=1" in text
    assert "masked: infra_error[browser]=1, judge_failed=1" in text
    assert "failures: step_budget=1" in text
    shop_row = next(line for line in summary_lines(summary) if line.strip().startswith("Shop"))
    assert shop_row.split() == ["Shop", "4", "2", "1", "1", "0", "50.0%", "15.0%..95.4%"]


def test_summary_lines_of_a_complete_run():
    lines = summary_lines(reconcile(POP, all_valid(8)))
    assert "complete, 8 of 8 completed" in lines[0] and "INCOMPLETE" not in lines[0]
    assert "score 8/8 = 100.0%, 95% interval 67.6%..100.0%" in lines[1]
    assert not any(line.strip().startswith(("masked:", "failures:")) for line in lines)


def test_summary_lines_when_nothing_completed():
    lines = summary_lines(reconcile(POP, []))
    assert "incomplete: score between 0.0% and 100.0% (0 masked, 8 missing)" in lines[1]
    assert "over completed" not in lines[1]


def test_summary_markdown_contains_the_figures():
    markdown = summary_markdown(mixed_summary())
    assert markdown.startswith("# local: incomplete\n")
    assert f"sha256 `{POP.sha256}`" in markdown
    assert "| 8 | 4 | 1 | 2 | 1 | 1 | 1 | 50.0% | 80.0% |" in markdown
    assert "| Shop | 4 | 2 | 1 | 1 | 0 | 50.0% | 15.0%..95.4% |" in markdown
    assert "| Flights | 2 | 1 | 0 | 1 | 0 | 50.0% | 9.5%..100.0% |" in markdown
    assert "| Recipes | 2 | 1 | 0 | 0 | 1 | 50.0% | 9.5%..100.0% |" in markdown
    assert "Masked: infra_error[browser] 1, judge_failed 1" in markdown
    assert "Missing: Recipes--1" in markdown
    assert markdown.endswith("\n")


def test_summary_markdown_of_a_complete_run():
    markdown = summary_markdown(reconcile(POP, all_valid(8)))
    assert markdown.startswith("# local: complete\n")
    assert "| 8 | 8 | 0 | 0 | 0 | 0 | 0 | 100.0% | 100.0% |" in markdown
    assert "Missing:" not in markdown and "Masked:" not in markdown


def test_summary_markdown_without_completed_tasks():
    assert "| 0.0% | - |" in summary_markdown(reconcile(POP, []))
