"""Comparing two runs: McNemar's exact test and the clustered bootstrap checked against scipy and against the exact
bootstrap distribution of small tables enumerated by hand; `webeval diff` on run directories (newly failing and
passing, flaky across epochs, masked and missing never counted as failures, a different population refused in one
line), its JSON and its Allure categories; and the paired gate, as a command and as a pytest option."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
from scipy.stats import binomtest

from tests.conftest import ROOT
from webeval.cli import main
from webeval.flags import option_strings
from webeval.outcomes import epochs
from webeval.outcomes.comparison import compare
from webeval.outcomes.gate import ALLOW_INCOMPLETE, GATE_ALPHA, GATE_FLAGS
from webeval.outcomes.record import AttemptRecord, FailureClass, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.significance import RESAMPLES, SEED, cluster_bootstrap, mcnemar_exact
from webeval.tasks import Population


@pytest.mark.parametrize("b, c", [(0, 0), (0, 1), (0, 5), (1, 3), (3, 1), (5, 5), (2, 12), (10, 30), (40, 60),
                                  (0, 30), (7, 8)])
def test_mcnemar_is_scipys_two_sided_binomial_test(b, c):
    expected = binomtest(b, b + c, 0.5, alternative="two-sided").pvalue if b + c else 1.0
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


def exact_percentiles(clusters: list[tuple[float, int]], confidence: float = 0.95) -> tuple[Fraction, Fraction]:
    """The bootstrap's percentiles computed by hand: every ordered draw of len(clusters) clusters, each equally
    likely; the low end is the value below which 2.5% of the draws fall, the high end the mirror."""
    k = len(clusters)
    values = Counter()
    for draw in itertools.product(clusters, repeat=k):
        values[Fraction(sum(Fraction(s).limit_denominator() for s, _ in draw)) / sum(n for _, n in draw)] += 1
    alpha, total, below = Fraction(1 - confidence).limit_denominator() / 2, k ** k, 0
    low = high = None
    for value in sorted(values):
        if low is None and Fraction(below + values[value], total) > alpha:
            low = value
        below += values[value]
        if high is None and Fraction(below, total) >= 1 - alpha:
            high = value
    return low, high


def test_with_two_sites_the_bootstrap_interval_runs_from_one_sites_mean_to_the_others():
    # Site X: 3 tasks, differences sum to -2; site Y: 5 tasks, sum +1. A resample is XX, XY, YX or YY.
    assert exact_percentiles([(-2, 3), (1, 5)]) == (Fraction(-2, 3), Fraction(1, 5))
    assert cluster_bootstrap([(-2, 3), (1, 5)]) == pytest.approx((-2 / 3, 1 / 5))


def test_the_bootstrap_interval_is_the_exact_one_of_a_small_table_enumerated_by_hand():
    table = [(-3, 4), (-1, 5), (0, 3), (2, 6)]  # four sites: (sum of per-task differences, tasks)
    low, high = exact_percentiles(table)
    assert cluster_bootstrap(table) == pytest.approx((float(low), float(high)))
    assert cluster_bootstrap(table) == cluster_bootstrap(table, seed=SEED)  # a fixed seed: the same every time
    assert cluster_bootstrap(table, resamples=RESAMPLES) == cluster_bootstrap(table)
    with pytest.raises(ValueError, match="every cluster is empty"):
        cluster_bootstrap([(0, 0)])


# --- comparing run directories -------------------------------------------------------------------------------------

SITES = ("Shop", "News", "Maps")
IDS = tuple(f"{site}--{i}" for site in SITES for i in range(4))
POP = Population(name="lab", ids=IDS, sha256="cd" * 32, sites={t: t.split("--")[0] for t in IDS})


def rec(task_id: str, outcome: str) -> AttemptRecord:
    return AttemptRecord(run_id="r", task_id=task_id, site=task_id.split("--")[0], outcome=Outcome(outcome),
                         failure_class=FailureClass.wrong_answer if outcome == "failed" else None,
                         kind="browser" if outcome == "infra_error" else None)


def run_dir(path: Path, outcomes: dict[str, str], population: Population = POP, epoch_count: int = 1) -> Path:
    made = RunDir(path).create(population)
    if epoch_count > 1:
        made.set_conventions({epochs.CONVENTION: str(epoch_count)})
    for task_id, outcome in outcomes.items():
        if outcome != "missing":
            made.append(rec(task_id, outcome))
    return path


BASELINE = {t: "passed" for t in IDS} | {"Maps--2": "failed", "Maps--3": "failed"}
CANDIDATE = {**BASELINE, "Shop--0": "failed", "Shop--1": "failed", "News--0": "failed", "Maps--2": "passed",
             "News--3": "infra_error", "Maps--1": "missing"}


def test_a_diff_names_each_change_and_never_counts_a_hole_as_a_failure(tmp_path):
    comparison = compare(run_dir(tmp_path / "a", BASELINE), run_dir(tmp_path / "b", CANDIDATE))
    assert comparison.of("newly_failing") == ["Shop--0", "Shop--1", "News--0"]
    assert comparison.of("newly_passing") == ["Maps--2"]
    assert comparison.of("not_comparable") == ["News--3", "Maps--1"]
    assert comparison.counts == {"newly_failing": 3, "newly_passing": 1, "unchanged": 6, "flaky": 0,
                                 "not_comparable": 2}
    assert comparison.tasks["News--3"].candidate == "infra_error" and comparison.tasks["Maps--1"].candidate == "missing"
    assert comparison.comparable == 10
    assert comparison.baseline_score == pytest.approx(8 / 10) and comparison.candidate_score == pytest.approx(6 / 10)
    assert comparison.difference == pytest.approx(-0.2)
    assert comparison.mcnemar["p_value"] == pytest.approx(binomtest(1, 4, 0.5).pvalue)
    # per-site sums of differences over comparable tasks: Shop -2 of 4, News -1 of 3, Maps +1 of 3
    low, high = exact_percentiles([(-2, 4), (-1, 3), (1, 3)])
    assert comparison.bootstrap["interval_95"] == pytest.approx((float(low), float(high)))
    assert (comparison.bootstrap["clusters"], comparison.bootstrap["n_clusters"]) == ("sites", 3)


def test_the_diff_states_each_runs_cost_per_success_and_the_difference(tmp_path, capsys):
    def priced(path: Path, usd: float, outcomes: dict[str, str]) -> None:
        made = RunDir(run_dir(path, {}))
        for task_id, outcome in outcomes.items():
            made.append(rec(task_id, outcome).model_copy(update={
                "path": f"tasks/{task_id}/attempt-1", "usage": {"prompt_tokens": 100}, "cost_usd": {"policy": usd}}))

    priced(tmp_path / "a", 0.01, BASELINE)
    priced(tmp_path / "b", 0.02, {t: "passed" for t in IDS})
    comparison = compare(tmp_path / "a", tmp_path / "b")
    assert comparison.cost["baseline_usd"] == pytest.approx(0.12) and comparison.cost["candidate_usd"] == pytest.approx(0.24)
    assert comparison.cost["difference_usd"] == pytest.approx(0.12)
    assert comparison.cost["baseline_usd_per_success"] == pytest.approx(0.012)
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert ("  cost: baseline $0.1200 ($0.0120 per success), candidate $0.2400 ($0.0200 per success), difference "
            "+$0.1200") in capsys.readouterr().out.splitlines()


def test_epochs_that_disagree_are_flaky_and_the_difference_counts_their_share(tmp_path):
    expanded, _ = epochs.expand(POP, [], 3)
    a = {epochs.epoch_id(t, k): "passed" for t in IDS for k in (1, 2, 3)}
    b = {**a, "Shop--0.e2": "failed", "News--1.e1": "failed", "News--1.e2": "failed", "News--1.e3": "failed",
         "Maps--0.e3": "judge_failed"}
    comparison = compare(run_dir(tmp_path / "a", a, expanded, 3), run_dir(tmp_path / "b", b, expanded, 3))
    assert comparison.population == "lab"
    assert comparison.tasks["Shop--0"].candidate == "flaky 2/3" and comparison.tasks["Shop--0"].change == "flaky"
    assert comparison.of("newly_failing") == ["News--1"] and comparison.of("not_comparable") == ["Maps--0"]
    assert comparison.difference == pytest.approx((-1 / 3 - 1) / 11)


def test_webeval_diff_prints_writes_json_and_refuses_another_population_in_one_line(tmp_path, capsys):
    a, b = run_dir(tmp_path / "a", BASELINE), run_dir(tmp_path / "b", CANDIDATE)
    assert main(["diff", str(a), str(b), "--json", str(tmp_path / "diff.json")]) == 0
    out = capsys.readouterr().out
    assert "  tasks: newly_failing=3, newly_passing=1, unchanged=6, flaky=0, not_comparable=2" in out
    assert "difference -20.0%, 95% interval" in out and "McNemar's exact test: newly_passing=1, newly_failing=3, p=0.625" in out
    assert "  newly failing: Shop--0 (passed -> failed), Shop--1 (passed -> failed), News--0 (passed -> failed)" in out
    assert "  not comparable: News--3 (passed -> infra_error), Maps--1 (passed -> missing)" in out
    assert not re.search(r"[0-9]+ failed|[0-9]+ passed, [0-9]+ failed", out)  # a log reader's count stays pytest's
    data = json.loads((tmp_path / "diff.json").read_text())
    assert data["counts"]["newly_failing"] == 3 and data["tasks"]["Maps--2"]["change"] == "newly_passing"
    assert data["mcnemar"]["p_value"] == pytest.approx(0.625) and data["bootstrap"]["resamples"] == RESAMPLES
    other = Population(name="other", ids=IDS, sha256="ef" * 32, sites=POP.sites)
    c = run_dir(tmp_path / "c", BASELINE, other)
    assert main(["diff", str(a), str(c)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"webeval diff: error: {c} scores population other (efefefefefef")
    assert main(["diff", str(a), str(tmp_path / "nowhere")]) == 2
    assert "is not a run directory" in capsys.readouterr().err


def test_the_paired_gate_command_exits_1_only_for_a_run_significantly_worse(tmp_path, capsys):
    a = run_dir(tmp_path / "a", {t: "passed" for t in IDS})
    worse = run_dir(tmp_path / "worse", {t: "failed" if i < 7 else "passed" for i, t in enumerate(IDS)})
    assert main(["gate", "--paired", str(a), str(worse)]) == 1
    p = binomtest(0, 7, 0.5).pvalue
    assert capsys.readouterr().out == (
        f"gate failed: significantly worse than the baseline: difference -58.3% (comparable=12, newly_failing=7, "
        f"newly_passing=0), McNemar p={p:.4g} < 0.05\n")
    slightly = run_dir(tmp_path / "slightly", {t: "failed" if i < 2 else "passed" for i, t in enumerate(IDS)})
    assert main(["gate", "--paired", str(a), str(slightly)]) == 0
    assert capsys.readouterr().out.startswith("gate passed: not significantly worse than the baseline: difference "
                                              "-16.7% (comparable=12, newly_failing=2, newly_passing=0), McNemar p=0.5")
    holed = run_dir(tmp_path / "holed", {t: "passed" if i else "missing" for i, t in enumerate(IDS)})
    assert main(["gate", "--paired", str(a), str(holed)]) == 1
    assert "the run is incomplete (1 of 12 tasks without a valid result)" in capsys.readouterr().out
    assert main(["gate", "--paired", str(a), str(holed), "--allow-incomplete"]) == 0
    assert "comparable=11" in capsys.readouterr().out
    assert main(["gate", "--paired", str(a), str(worse), "--gate-alpha", "0.01"]) == 0  # p=0.0156 at a level of 1%
    assert capsys.readouterr().out.endswith(f"McNemar p={p:.4g} >= 0.01\n")
    assert main(["gate", "--paired", str(a), str(worse), "--gate-alpha", "1.5"]) == 2
    assert capsys.readouterr().err == "webeval gate: error: --gate-alpha 1.5: must be between 0 and 1, such as 0.05\n"


def test_the_paired_gate_command_takes_the_sessions_own_gate_options():
    """One declaration: `webeval gate` renders the session's --gate-alpha and --allow-incomplete; pytest, the
    whole gate family (--cost-limit is among the run's options)."""
    from tests.test_option_families import command_help, pytest_help
    from tests.test_policy_options import help_options

    prefixes = ("--gate", "--allow", "--cost")
    command = help_options(command_help("gate"), prefixes)
    session = help_options(pytest_help("suites/local"), prefixes)
    assert command == option_strings((GATE_ALPHA, ALLOW_INCOMPLETE))
    assert session == option_strings(GATE_FLAGS) | {"--cost-limit", "--allow-mixed"}  # and the run conditions' own
    assert {"--gate-paired-baseline", "--gate-alpha", "--gate-min-score"} <= option_strings(GATE_FLAGS)


# --- real sessions: the paired gate option, and the diff as Allure categories --------------------------------------

CONFTEST = """
from webeval.plugin import suite
from webeval.tasks import Population, Task

IDS = [f"{site}--{i}" for site in ("Shop", "News", "Maps") for i in range(4)]
TASKS = [Task(id=i, site=i.split("--")[0], goal=f"goal of {i}", start_url="http://127.0.0.1:9/") for i in IDS]
POPULATION = Population(name="lab", ids=tuple(IDS), sha256="ab" * 32, sites={i: i.split("--")[0] for i in IDS})


def pytest_generate_tests(metafunc):
    suite.parametrize(metafunc, POPULATION, TASKS)
"""

TEST = """
import json
import os

from webeval.agent.evaluate import Attempt
from webeval.outcomes.record import AttemptRecord, FailureClass, Outcome
from webeval.outcomes.verdict import Verdict
from webeval.plugin.episode_fixtures import Unscored
from webeval.plugin.keys import ATTEMPT

ENDINGS = json.loads(os.environ["LAB_ENDINGS"])


def test_task(task, request, webeval_run_dir):
    ending = ENDINGS.get(task.id, "passed")
    outcome = Outcome(ending)
    verdict = Verdict(success=ending == "passed", reason="as scripted", judge="lab") if outcome.valid else None
    record = AttemptRecord(run_id=webeval_run_dir.run_id, task_id=task.id, site=task.site, outcome=outcome,
                           failure_class=FailureClass.wrong_answer if ending == "failed" else None,
                           kind="browser" if ending == "infra_error" else None, reason=f"{ending}: as scripted",
                           verdict=verdict.model_dump(mode="json") if verdict else None)
    request.node.stash[ATTEMPT] = Attempt(record, verdict=verdict)
    if not outcome.valid:
        raise Unscored(record)
    assert verdict.success, verdict.reason
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("lab")
    (folder / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (folder / "test_lab.py").write_text(textwrap.dedent(TEST))
    return folder


def lab_run(suite: Path, run: Path, endings: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["LAB_ENDINGS"] = json.dumps(endings)
    return subprocess.run([sys.executable, "-m", "pytest", str(suite), "--rootdir", str(suite), "-p",
                           "no:cacheprovider", "-p", "no:xdist", "--policy", "oracle", "--run-dir", str(run), *args],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=300)


def test_the_paired_gate_option_fails_a_session_significantly_worse_than_its_baseline(lab, tmp_path):
    baseline = tmp_path / "baseline"
    assert lab_run(lab, baseline, {}).returncode == 0
    worse = {t: "failed" for t in IDS[:8]}
    done = lab_run(lab, tmp_path / "worse", worse, "--gate-paired-baseline", str(baseline))
    p = binomtest(0, 8, 0.5).pvalue
    assert done.returncode == 10, done.stdout[-2000:]
    assert (f"gate failed: significantly worse than the baseline: difference -66.7% (comparable=12, "
            f"newly_failing=8, newly_passing=0), McNemar p={p:.4g} < 0.05") in done.stdout
    done = lab_run(lab, tmp_path / "close", {"Shop--0": "failed"}, "--gate-paired-baseline", str(baseline))
    assert done.returncode == 0 and "gate passed: not significantly worse than the baseline" in done.stdout
    done = lab_run(lab, tmp_path / "holed", {"Shop--0": "infra_error"}, "--gate-paired-baseline", str(baseline))
    assert done.returncode == 12, done.stdout[-2000:]  # a selected task did not complete, before any gate
    done = lab_run(lab, tmp_path / "bad", {}, "--gate-paired-baseline", str(tmp_path / "nowhere"))
    assert done.returncode == 4 and "--gate-paired-baseline" in done.stderr and "not a run directory" in done.stderr


def test_webeval_diff_shows_as_allure_categories_in_the_candidates_report(lab, tmp_path):
    baseline, candidate = tmp_path / "baseline", tmp_path / "candidate"
    assert lab_run(lab, baseline, {"Maps--3": "failed"}).returncode == 1
    endings = {"Shop--0": "failed", "Shop--1": "failed", "Maps--3": "passed", "News--2": "infra_error"}
    assert lab_run(lab, candidate, endings, "-k", "not News--3").returncode == 12
    webeval = str(Path(sys.executable).with_name("webeval"))
    done = subprocess.run([webeval, "diff", str(baseline), str(candidate)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "  allure: 5 results" in done.stdout, done.stdout + done.stderr
    report = subprocess.run([webeval, "report", str(candidate), "--history", str(tmp_path / "history.jsonl")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    widget = json.loads((candidate / "report" / "widgets" / "categories.json").read_text())
    counts = {node["name"]: node["statistic"]["total"] for node in widget["nodes"].values()
              if node.get("type") == "category"}
    assert counts == {"Newly failing": 2, "Newly passing": 1, "Not comparable": 2}
