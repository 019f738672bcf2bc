"""Reconciliation against the fixed denominator: every id of the population counts, run or not."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from pydantic import BaseModel

from webeval.outcomes import epochs
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.whole_lines import replace_file
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.sessions import summary_versions
from webeval.tasks import Population


class SiteRate(BaseModel):
    n: int = 0
    passed: int = 0
    failed: int = 0
    masked: int = 0
    missing: int = 0
    score: float = 0.0


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
    per_site: dict[str, SiteRate]
    failure_classes: dict[str, int]
    complete: bool
    final: dict[str, str]  # task id -> its final outcome ("missing" when it has none)
    usage: dict[str, float] = {}  # policy totals over the final records: tokens, retries, seconds
    conventions: dict[str, str] = {}  # how the run counted what it could not judge (judge_unparseable: mask | fail)
    epochs: dict[str, Any] = {}  # a K-epoch run's pass@1, pass@k, pass^k, flakiness and standard error

    @property
    def masked_total(self) -> int:
        return sum(self.masked.values())

    def headline(self) -> str:
        """One number for a complete run; for an incomplete one, the interval its holes leave open."""
        if self.complete:
            return f"score {self.passed}/{self.n} = {self.score:.1%}"
        return (f"incomplete: score between {self.score_low:.1%} and {self.score_high:.1%} "
                f"({self.masked_total} masked, {len(self.missing)} missing)")


def final_records(population: Population, records: list[AttemptRecord]) -> tuple[dict[str, AttemptRecord], list[str]]:
    """Each id's final record (its valid one, else its latest masked one) and the ids with two valid records.

    Records are in append order. A re-judge record (extra.rejudge) supersedes the verdict before it, and so does a
    failed task's deliberate re-run (extra.rerun: `--resume DIR --lf`); otherwise valid records of one id from two
    sessions (runs, shards) are a duplicate, reported and never silently chosen.
    """
    expected = set(population.ids)
    final: dict[str, AttemptRecord] = {}
    valid_runs: dict[str, set[str]] = defaultdict(set)
    for record in records:
        if record.task_id not in expected:
            continue
        current = final.get(record.task_id)
        if record.outcome.valid:
            if not (record.extra.get("rejudge") or record.extra.get("rerun")):
                valid_runs[record.task_id].add(f"{record.run_id}/{record.session}")
            final[record.task_id] = record
        elif current is None or not current.outcome.valid:
            final[record.task_id] = record
    duplicates = sorted(tid for tid, runs in valid_runs.items() if len(runs) > 1)
    return final, duplicates


def reconcile(population: Population, records: list[AttemptRecord],
              conventions: dict[str, str] | None = None) -> Summary:
    final, duplicates = final_records(population, records)
    unexpected = sorted({r.task_id for r in records} - set(population.ids))
    masked: Counter[str] = Counter()
    classes: Counter[str] = Counter()
    per_site: dict[str, SiteRate] = defaultdict(SiteRate)
    missing: list[str] = []
    passed = failed = 0
    for task_id in population.ids:
        record = final.get(task_id)
        site = per_site[population.site(task_id) or (record.site if record else "") or "-"]
        site.n += 1
        if record is None:
            missing.append(task_id)
            site.missing += 1
        elif record.outcome is Outcome.passed:
            passed += 1
            site.passed += 1
        elif record.outcome is Outcome.failed:
            failed += 1
            site.failed += 1
            if record.failure_class:
                classes[record.failure_class.value] += 1
        else:
            masked[record.masked_key] += 1
            site.masked += 1
    for site in per_site.values():
        site.score = site.passed / site.n if site.n else 0.0
    usage: Counter[str] = Counter()
    for record in final.values():
        usage.update(record.usage)
    n = population.size
    completed = passed + failed
    final_outcomes = {tid: (final[tid].outcome.value if tid in final else "missing") for tid in population.ids}
    epoch_count = (conventions or {}).get(epochs.CONVENTION, "")
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
        per_site=dict(sorted(per_site.items())),
        failure_classes=dict(sorted(classes.items())),
        complete=completed == n and not duplicates,
        final=final_outcomes,
        usage={key: round(value, 3) for key, value in sorted(usage.items())},
        conventions=conventions or {},
        epochs=epochs.figures(final_outcomes, int(epoch_count)) if epoch_count.isdigit() and int(epoch_count) > 1
        else {},
    )


def summary_lines(summary: Summary) -> list[str]:
    """The summary as terminal lines: the figures first, then one row per site."""
    masked = summary.masked_total
    state = "complete" if summary.complete else "INCOMPLETE"
    completed = summary.passed + summary.failed
    lines = [
        f"webeval: {summary.population} ({summary.sha256[:12]}): {state}, {completed} of {summary.n} completed",
        f"  {summary.headline()}"
        + (f"  (over completed: {summary.score_completed:.1%})" if summary.score_completed is not None else ""),
        f"  passed {summary.passed}  failed {summary.failed}  masked {masked}  missing {len(summary.missing)}"
        f"  duplicates {len(summary.duplicates)}  unexpected {len(summary.unexpected)}",
    ]
    if summary.masked:
        lines.append("  masked: " + ", ".join(f"{k} {v}" for k, v in summary.masked.items()))
    if summary.unexpected:
        shown = ", ".join(summary.unexpected[:10]) + (" ..." if len(summary.unexpected) > 10 else "")
        lines.append(f"  unexpected (records of tasks outside the population, not scored): {shown}")
    if summary.failure_classes:
        lines.append("  failures: " + ", ".join(f"{k} {v}" for k, v in summary.failure_classes.items()))
    lines += epochs.lines(summary.epochs)
    if any(summary.usage.values()):
        lines.append("  policy: " + ", ".join(f"{k} {v:g}" for k, v in summary.usage.items()))
    width = max((len(s) for s in summary.per_site), default=4)
    lines.append(f"  {'site':<{width}}  {'n':>4} {'pass':>4} {'fail':>4} {'mask':>4} {'miss':>4}  score")
    for name, site in summary.per_site.items():
        lines.append(
            f"  {name:<{width}}  {site.n:>4} {site.passed:>4} {site.failed:>4} {site.masked:>4} {site.missing:>4}"
            f"  {site.score:.1%}"
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
        "| site | n | passed | failed | masked | missing | score |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, site in summary.per_site.items():
        rows.append(f"| {name} | {site.n} | {site.passed} | {site.failed} | {site.masked} | {site.missing} | "
                    f"{site.score:.1%} |")
    if summary.masked:
        rows += ["", "Masked: " + ", ".join(f"{k} {v}" for k, v in summary.masked.items())]
    if summary.missing:
        rows += ["", "Missing: " + ", ".join(summary.missing)]
    if summary.epochs:
        rows += ["", *(line.strip() for line in epochs.lines(summary.epochs))]
    return "\n".join(rows) + "\n"


def summary_json(summary: Summary) -> dict[str, Any]:
    return summary.model_dump(mode="json")


def write_summary(run_dir: RunDir, summary: Summary | None = None) -> Summary:
    """Reconcile a run directory (unless `summary` is its reconciliation already) and write its summary.json and
    summary.md, each whole or not at all (OSError: a full disk)."""
    summary = summary or reconcile(run_dir.population(), run_dir.records(), run_dir.conventions())
    data = {**summary_json(summary), **summary_versions(run_dir.path)}  # what the run's sessions ran with
    replace_file(run_dir.path / "summary.json", json.dumps(data, indent=2))
    replace_file(run_dir.path / "summary.md", summary_markdown(summary))
    return summary
