"""Comparing two runs of one population, task by task: `webeval diff BASELINE CANDIDATE`.

Each task has a state in each run: passed, failed, flaky (a K-epoch run whose epochs disagree, `2/3`), or a hole
(masked: infra_error, judge_failed, not_run, harness_error; or missing). Across the two runs a task is newly
failing (passed, then failed), newly passing (failed, then passed), unchanged, flaky (in either run), or not
comparable (a hole in either run: it is never counted as a failure). A K-epoch task is passed when every epoch
passed and failed when none did.

The paired statistics (webeval.outcomes.significance) are over the comparable tasks: McNemar's exact test on the
newly failing and newly passing ones, and a bootstrap interval of the score difference (candidate - baseline, each
task's score its share of passing epochs) resampling sites as clusters; with fewer than two sites, tasks.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from pydantic import BaseModel

from webeval.outcomes import epochs
from webeval.outcomes.cost import usd
from webeval.outcomes.reconcile import Summary, counted, reconcile
from webeval.outcomes.rundir import POPULATION, RunDir
from webeval.outcomes.significance import RESAMPLES, SEED, cluster_bootstrap, mcnemar_exact

CHANGES = ("newly_failing", "newly_passing", "unchanged", "flaky", "not_comparable")
MCNEMAR = "McNemar's exact test (two-sided binomial on the discordant tasks)"
BOOTSTRAP = "paired bootstrap, percentile interval, sites resampled as clusters"


class ComparisonError(ValueError):
    """Two runs that cannot be compared; one line for the user."""


class RunSide(BaseModel):
    path: str
    run_id: str
    epochs: int
    n: int
    passed: int
    failed: int
    complete: bool
    headline: str
    interval_95: tuple[float, float]
    usd: float | None = None
    usd_per_success: float | None = None


class TaskChange(BaseModel):
    site: str
    baseline: str  # passed, failed, flaky c/K, or the hole: infra_error, judge_failed, ..., missing
    candidate: str
    change: str


class Comparison(BaseModel):
    population: str
    sha256: str
    baseline: RunSide
    candidate: RunSide
    tasks: dict[str, TaskChange]
    counts: dict[str, int]
    comparable: int
    baseline_score: float | None  # over the comparable tasks
    candidate_score: float | None
    difference: float | None  # candidate - baseline
    mcnemar: dict[str, Any]
    bootstrap: dict[str, Any]
    cost: dict[str, Any]

    def of(self, change: str) -> list[str]:
        return [task_id for task_id, task in self.tasks.items() if task.change == change]


class _Run:
    """One run directory, its summary, and each base task's state and share of passing epochs."""

    def __init__(self, path) -> None:
        self.dir = RunDir(path)
        if not (self.dir.path / POPULATION).is_file():
            raise ComparisonError(f"{self.dir.path} is not a run directory (no {POPULATION})")
        self.population = self.dir.population()
        conventions = self.dir.conventions()
        count = conventions.get(epochs.CONVENTION, "1")
        self.epochs = int(count) if count.isdigit() and int(count) > 1 else 1
        self.summary: Summary = reconcile(self.population, self.dir.records(), conventions)
        self.sites: dict[str, str] = {}
        outcomes: dict[str, list[str]] = defaultdict(list)
        for task_id in self.population.ids:
            base = epochs.base_id(task_id)[0] if self.epochs > 1 else task_id
            outcomes[base].append(self.summary.final[task_id])
            self.sites.setdefault(base, self.population.site(task_id) or "-")
        self.states = {base: _state(found) for base, found in outcomes.items()}

    def side(self) -> RunSide:
        s, cost = self.summary, self.summary.cost
        return RunSide(path=str(self.dir.path), run_id=self.dir.run_id, epochs=self.epochs, n=s.n, passed=s.passed,
                       failed=s.failed, complete=s.complete, headline=s.headline(), interval_95=s.interval_95,
                       usd=cost.get("usd"), usd_per_success=cost.get("usd_per_success"))


def _state(found: list[str]) -> tuple[str, float | None]:
    """(label, share of passing epochs); the share is None for a hole."""
    hole = next((outcome for outcome in found if outcome not in ("passed", "failed")), None)
    if hole is not None:
        return hole, None
    passes = found.count("passed")
    if passes in (0, len(found)):
        return ("passed" if passes else "failed"), passes / len(found)
    return f"flaky {passes}/{len(found)}", passes / len(found)


def _change(before: tuple[str, float | None], after: tuple[str, float | None]) -> str:
    if before[1] is None or after[1] is None:
        return "not_comparable"
    if before[0].startswith("flaky") or after[0].startswith("flaky"):
        return "flaky"
    if before[0] == after[0]:
        return "unchanged"
    return "newly_failing" if before[0] == "passed" else "newly_passing"


def _same_population(a: _Run, b: _Run) -> None:
    if (a.population.sha256, list(a.states)) != (b.population.sha256, list(b.states)):
        raise ComparisonError(
            f"{b.dir.path} scores population {b.population.name} ({b.population.sha256[:12]}, {len(b.states)} "
            f"tasks), {a.dir.path} scores {a.population.name} ({a.population.sha256[:12]}, {len(a.states)} tasks): "
            "compare two runs of one population")


def compare(baseline_path, candidate_path) -> Comparison:
    a, b = _Run(baseline_path), _Run(candidate_path)
    _same_population(a, b)
    tasks = {task_id: TaskChange(site=a.sites[task_id], baseline=a.states[task_id][0],
                                 candidate=b.states[task_id][0], change=_change(a.states[task_id], b.states[task_id]))
             for task_id in a.states}
    counts = Counter(task.change for task in tasks.values())
    comparable = [t for t, task in tasks.items() if task.change != "not_comparable"]
    before, after = _mean(a, comparable), _mean(b, comparable)
    return Comparison(
        population=a.population.name.removesuffix(f" x{a.epochs} epochs"),
        sha256=a.population.sha256, baseline=a.side(), candidate=b.side(), tasks=tasks,
        counts={change: counts[change] for change in CHANGES}, comparable=len(comparable),
        baseline_score=before, candidate_score=after,
        difference=after - before if comparable else None,
        mcnemar={"newly_passing": counts["newly_passing"], "newly_failing": counts["newly_failing"],
                 "p_value": mcnemar_exact(counts["newly_passing"], counts["newly_failing"]), "method": MCNEMAR},
        bootstrap=_bootstrap(a, b, tasks, comparable), cost=_cost(a.side(), b.side()))


def _mean(run: _Run, comparable: list[str]) -> float | None:
    return sum(run.states[task_id][1] for task_id in comparable) / len(comparable) if comparable else None


def _bootstrap(a: _Run, b: _Run, tasks: dict[str, TaskChange], comparable: list[str]) -> dict[str, Any]:
    by_site: dict[str, list[float]] = defaultdict(list)
    for task_id in comparable:
        by_site[tasks[task_id].site].append(b.states[task_id][1] - a.states[task_id][1])
    unit = "sites" if len(by_site) >= 2 else "tasks"
    clusters = ([(sum(d), len(d)) for d in by_site.values()] if unit == "sites"
                else [(d, 1) for found in by_site.values() for d in found])
    figures: dict[str, Any] = {"method": BOOTSTRAP if unit == "sites" else BOOTSTRAP.replace("sites", "tasks"),
                               "clusters": unit, "n_clusters": len(clusters), "resamples": RESAMPLES, "seed": SEED,
                               "interval_95": None}
    if clusters:
        figures["interval_95"] = cluster_bootstrap(clusters)
    return figures


def _cost(a: RunSide, b: RunSide) -> dict[str, Any]:
    both = a.usd is not None and b.usd is not None
    return {"baseline_usd": a.usd, "candidate_usd": b.usd, "difference_usd": b.usd - a.usd if both else None,
            "baseline_usd_per_success": a.usd_per_success, "candidate_usd_per_success": b.usd_per_success}


def _per_success(side: RunSide) -> str:
    if side.usd is not None and side.usd_per_success is None:
        return "no success"
    return f"{usd(side.usd_per_success)} per success"


def _signed(value: float) -> str:
    return f"{value:+.1%}"


def _listed(comparison: Comparison, change: str, shown: int = 20) -> list[str]:
    found = comparison.of(change)
    if not found:
        return []
    name = change.replace("_", " ")
    items = [f"{t} ({comparison.tasks[t].baseline} -> {comparison.tasks[t].candidate})" for t in found[:shown]]
    return [f"  {name}: " + ", ".join(items) + (f" ... and {len(found) - shown} more" if len(found) > shown else "")]


def comparison_lines(comparison: Comparison) -> list[str]:
    """The comparison as terminal lines; every count is `name=count,` (never `N failed`)."""
    c, a, b = comparison, comparison.baseline, comparison.candidate
    lines = [f"webeval diff: {c.population} ({c.sha256[:12]})",
             f"  baseline  {a.path}: {a.headline}", f"  candidate {b.path}: {b.headline}",
             "  tasks: " + counted(c.counts)]
    if c.difference is not None:
        low, high = c.bootstrap["interval_95"]
        lines.append(f"  over the comparable tasks (comparable={c.comparable}): baseline {c.baseline_score:.1%}, "
                     f"candidate {c.candidate_score:.1%}, difference {_signed(c.difference)}, 95% interval "
                     f"{_signed(low)}..{_signed(high)} (bootstrap of {c.bootstrap['n_clusters']} "
                     f"{c.bootstrap['clusters']} as clusters, resamples={c.bootstrap['resamples']})")
    else:
        lines.append("  no task is comparable: each has a masked or missing result in one of the runs")
    lines.append(f"  McNemar's exact test: newly_passing={c.mcnemar['newly_passing']}, "
                 f"newly_failing={c.mcnemar['newly_failing']}, p={c.mcnemar['p_value']:.4g}")
    if a.usd is not None or b.usd is not None:
        difference = c.cost["difference_usd"]
        lines.append(f"  cost: baseline {usd(a.usd)} ({_per_success(a)}), candidate {usd(b.usd)} ({_per_success(b)})"
                     + (f", difference {'+' if difference >= 0 else '-'}{usd(abs(difference))}"
                        if difference is not None else ""))
    for change in ("newly_failing", "newly_passing", "flaky", "not_comparable"):
        lines += _listed(c, change)
    return lines
