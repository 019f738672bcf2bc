"""Reconciliation against the fixed denominator: every id of the population counts, run or not."""

from __future__ import annotations

import contextlib
import gc
import json
from collections import Counter, defaultdict
from typing import Any, Iterable, Iterator

from pydantic import BaseModel

from webeval.outcomes import epochs
from webeval.outcomes.conditions import Differences, mixed_lines
from webeval.outcomes.cost import TOKENS
from webeval.outcomes.intervals import METHOD, percent, score_interval
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.whole_lines import replace_file
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.sessions import summary_versions
from webeval.outcomes.spending import cost_lines, run_cost
from webeval.tasks import Population


class SiteRate(BaseModel):
    n: int = 0
    passed: int = 0
    failed: int = 0
    masked: int = 0
    missing: int = 0
    score: float = 0.0
    interval_95: tuple[float, float] = (0.0, 1.0)  # Wilson, widened by the site's masked and missing tasks


class Summary(BaseModel):
    population: str
    sha256: str
    n: int
    passed: int
    failed: int
    masked: dict[str, int]
    missing: list[str]
    duplicates: list[str]
    unexpected: list[str]
    score: float  # the lower bound: passed / N, every masked or missing task counted as not passed
    score_low: float = 0.0  # passed / N
    score_high: float = 1.0  # (N - failed) / N: every masked or missing task counted as passed
    score_completed: float | None
    interval_95: tuple[float, float] = (0.0, 1.0)  # Wilson; an incomplete run's widened by its masked and missing
    interval_method: str = METHOD
    per_site: dict[str, SiteRate]
    failure_classes: dict[str, int]
    complete: bool
    final: dict[str, str]  # task id -> its final outcome ("missing" when it has none)
    usage: dict[str, float] = {}  # policy totals over the final records: tokens, retries, seconds
    conventions: dict[str, str] = {}  # how the run counted what it could not judge (judge_unparseable: mask | fail)
    epochs: dict[str, Any] = {}  # a K-epoch run's pass@1, pass@k, pass^k, flakiness and standard error
    cost: dict[str, Any] = {}  # tokens and dollars spent, policy and judge apart, over every attempt (spending.py)
    conditions: dict[str, str] = {}  # what the run's first session ran under (webeval.outcomes.conditions)
    mixed: dict[str, dict[str, tuple[str, str]]] = {}  # sessions allowed to mix, and what they had otherwise

    @property
    def masked_total(self) -> int:
        return sum(self.masked.values())

    def headline(self) -> str:
        """One number for a complete run; for an incomplete one, the interval its holes leave open."""
        interval = f"95% interval {percent(self.interval_95)}"
        if self.complete:
            return f"score {self.passed}/{self.n} = {self.score:.1%}, {interval}"
        return (f"incomplete: score between {self.score_low:.1%} and {self.score_high:.1%} "
                f"({self.masked_total} masked, {len(self.missing)} missing), {interval}")


def final_records(population: Population, records: list[AttemptRecord]) -> tuple[dict[str, AttemptRecord], list[str]]:
    """Each id's final record (its valid one, else its latest masked one) and the ids with two valid records.

    Records are in append order. A re-judge record (extra.rejudge) supersedes the verdict before it, and so does a
    failed task's deliberate re-run (extra.rerun: `--resume DIR --lf`); otherwise valid records of one id from two
    sessions (runs, shards) are a duplicate, reported and never silently chosen.
    """
    expected = set(population.ids)
    final: dict[str, AttemptRecord] = {}
    valid_runs: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for record in records:
        if record.task_id not in expected:
            continue
        current = final.get(record.task_id)
        if record.outcome.valid:
            if not record.extra or not (record.extra.get("rejudge") or record.extra.get("rerun")):
                valid_runs[record.task_id].add((record.run_id, record.session))
            final[record.task_id] = record
        elif current is None or not current.outcome.valid:
            final[record.task_id] = record
    duplicates = sorted(tid for tid, runs in valid_runs.items() if len(runs) > 1)
    return final, duplicates


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Reconciling 100,000 records makes some 300,000 small tables and leaves none in a reference cycle; the cyclic
    collector, set off by so many new objects, would walk every record in memory again and again (a third of the time
    it takes) and free nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def reconcile(population: Population, records: list[AttemptRecord], conventions: dict[str, str] | None = None,
              conditions: tuple[dict[str, str], dict[str, Differences]] | None = None) -> Summary:
    with _collector_paused():
        return _reconciled(population, records, conventions or {}, conditions or ({}, {}))


def _reconciled(population: Population, records: list[AttemptRecord], conventions: dict[str, str],
                conditions: tuple[dict[str, str], dict[str, Differences]]) -> Summary:
    final, duplicates = final_records(population, records)
    unexpected = sorted({r.task_id for r in records} - set(population.ids))
    masked: Counter[str] = Counter()
    classes: Counter[str] = Counter()
    tally: dict[str, Counter[str]] = defaultdict(Counter)  # per site: n, passed, failed, masked, missing
    missing: list[str] = []
    passed = failed = 0
    for task_id in population.ids:
        record = final.get(task_id)
        site = tally[population.site(task_id) or (record.site if record else "") or "-"]
        site["n"] += 1
        if record is None:
            missing.append(task_id)
            site["missing"] += 1
        elif record.outcome is Outcome.passed:
            passed += 1
            site["passed"] += 1
        elif record.outcome is Outcome.failed:
            failed += 1
            site["failed"] += 1
            if record.failure_class:
                classes[record.failure_class.value] += 1
        else:
            masked[record.masked_key] += 1
            site["masked"] += 1
    per_site = {name: _site_rate(counts) for name, counts in tally.items()}
    n = population.size
    completed = passed + failed
    final_outcomes = {tid: (final[tid].outcome.value if tid in final else "missing") for tid in population.ids}
    return Summary(
        population=population.name,
        sha256=population.sha256,
        n=n,
        passed=passed,
        failed=failed,
        masked=dict(sorted(masked.items())),
        missing=missing,
        duplicates=duplicates,
        unexpected=unexpected,
        score=passed / n if n else 0.0,
        score_low=passed / n if n else 0.0,
        score_high=(n - failed) / n if n else 0.0,
        score_completed=passed / completed if completed else None,
        interval_95=score_interval(n, passed, failed),
        per_site=dict(sorted(per_site.items())),
        failure_classes=dict(sorted(classes.items())),
        complete=completed == n and not duplicates,
        final=final_outcomes,
        usage=_policy_usage(final.values()),
        conventions=conventions,
        epochs=_epoch_figures(final_outcomes, conventions),
        cost=run_cost(population.ids, records, passed),
        conditions=conditions[0], mixed=conditions[1],
    )


def _site_rate(counts: Counter[str]) -> SiteRate:
    n, passed = counts["n"], counts["passed"]
    return SiteRate(**counts, score=passed / n if n else 0.0, interval_95=score_interval(n, passed, counts["failed"]))


def _policy_usage(final: Iterable[AttemptRecord]) -> dict[str, float]:
    usage: dict[str, float] = {}
    for record in final:
        for key, value in record.usage.items():
            usage[key] = usage.get(key, 0) + value
    return {key: round(value, 3) for key, value in sorted(usage.items())}


def _epoch_figures(final_outcomes: dict[str, str], conventions: dict[str, str]) -> dict[str, Any]:
    count = conventions.get(epochs.CONVENTION, "")
    return epochs.figures(final_outcomes, int(count)) if count.isdigit() and int(count) > 1 else {}


def counted(counts: dict[str, int | float]) -> str:
    """`name=count, ...`: a comma after every count, so that no count stands before another name (`passed=44 failed`
    reads as 44 failures to a log reader that looks for `[0-9]+ failed`)."""
    return ", ".join(f"{name}={value:g}" for name, value in counts.items())


def summary_lines(summary: Summary) -> list[str]:
    """The summary as terminal lines: the figures first, then one row per site. Counts are written `name=count, `:
    pytest's closing line stays the only line a reader of `N failed` or `N passed, M failed` finds."""
    state = "complete" if summary.complete else "INCOMPLETE"
    completed = summary.passed + summary.failed
    lines = [
        f"webeval: {summary.population} ({summary.sha256[:12]}): {state}, {completed} of {summary.n} completed",
        f"  {summary.headline()}"
        + (f"  (over completed: {summary.score_completed:.1%})" if summary.score_completed is not None else ""),
        "  " + counted({"passed": summary.passed, "failed": summary.failed, "masked": summary.masked_total,
                        "missing": len(summary.missing), "duplicates": len(summary.duplicates),
                        "unexpected": len(summary.unexpected)}),
    ]
    if summary.masked:
        lines.append("  masked: " + counted(summary.masked))
    if summary.unexpected:
        shown = ", ".join(summary.unexpected[:10]) + (" ..." if len(summary.unexpected) > 10 else "")
        lines.append(f"  unexpected (records of tasks outside the population, not scored): {shown}")
    if summary.failure_classes:
        lines.append("  failures: " + counted(summary.failure_classes))
    lines += epochs.lines(summary.epochs)
    lines += condition_lines(summary)
    usage = {key: value for key, value in summary.usage.items() if not (summary.cost and key in TOKENS)}
    if any(usage.values()):  # its tokens, when there are any, are on the cost lines
        lines.append("  policy: " + counted(usage))
    return lines + cost_lines(summary.cost) + site_lines(summary)


def condition_lines(summary: Summary) -> list[str]:
    """What the run is on the terms of (a preset), its recipe lock, and the sessions allowed to mix conditions."""
    lines = []
    if summary.conditions.get("preset", "-") != "-":
        lines.append(f"  preset {summary.conditions['preset']}")
    if summary.conditions.get("recipe lock", "-") != "-":
        lines.append(f"  recipe lock: {summary.conditions['recipe lock']}")
    if summary.mixed:
        lines.append("  MIXED conditions (--allow-mixed), against the first session's: "
                     + " | ".join(mixed_lines(summary.mixed)))
    return lines


def site_lines(summary: Summary) -> list[str]:
    width = max((len(s) for s in summary.per_site), default=4)
    lines = [f"  {'site':<{width}}  {'n':>4} {'pass':>4} {'fail':>4} {'mask':>4} {'miss':>4}  {'score':>6}  95% interval"]
    for name, site in summary.per_site.items():
        lines.append(
            f"  {name:<{width}}  {site.n:>4} {site.passed:>4} {site.failed:>4} {site.masked:>4} {site.missing:>4}"
            f"  {site.score:>6.1%}  {percent(site.interval_95)}"
        )
    return lines


def summary_markdown(summary: Summary) -> str:
    rows = [
        f"# {summary.population}: {'complete' if summary.complete else 'incomplete'}",
        "",
        f"sha256 `{summary.sha256}`",
        "",
        f"**{summary.headline()}**",
        "",
        "| N | passed | failed | masked | missing | duplicates | unexpected | score | score over completed |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {summary.n} | {summary.passed} | {summary.failed} | {sum(summary.masked.values())} | "
        f"{len(summary.missing)} | {len(summary.duplicates)} | {len(summary.unexpected)} | {summary.score:.1%} | "
        + (f"{summary.score_completed:.1%} |" if summary.score_completed is not None else "- |"),
        "",
        "| site | n | passed | failed | masked | missing | score | 95% interval |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, site in summary.per_site.items():
        rows.append(f"| {name} | {site.n} | {site.passed} | {site.failed} | {site.masked} | {site.missing} | "
                    f"{site.score:.1%} | {percent(site.interval_95)} |")
    if summary.masked:
        rows += ["", "Masked: " + ", ".join(f"{k} {v}" for k, v in summary.masked.items())]
    if summary.missing:
        rows += ["", "Missing: " + ", ".join(summary.missing)]
    if summary.epochs:
        rows += ["", *(line.strip() for line in epochs.lines(summary.epochs))]
    if summary.cost:
        rows += ["", *(line.strip() for line in cost_lines(summary.cost))]
    if summary.conditions:
        rows += ["", "| condition | the run's first session |", "|---|---|",
                 *(f"| {name} | {value} |" for name, value in summary.conditions.items())]
    if summary.mixed:
        rows += ["", "Mixed conditions (--allow-mixed): " + "; ".join(mixed_lines(summary.mixed))]
    return "\n".join(rows) + "\n"


def summary_json(summary: Summary) -> dict[str, Any]:
    return summary.model_dump(mode="json")


def write_summary(run_dir: RunDir, summary: Summary | None = None) -> Summary:
    """Reconcile a run directory (unless `summary` is its reconciliation already) and write its summary.json and
    summary.md, each whole or not at all (OSError: a full disk)."""
    summary = summary or reconcile(run_dir.population(), run_dir.records(), run_dir.conventions(),
                                   run_dir.conditions())
    data = {**summary_json(summary), **summary_versions(run_dir.path)}  # what the run's sessions ran with
    replace_file(run_dir.path / "summary.json", json.dumps(data, indent=2))
    replace_file(run_dir.path / "summary.md", summary_markdown(summary))
    return summary
