"""`webeval merge DIR... --out DIR`: reconcile shard (or partial) run directories into one.

The merged run keeps what judging it again needs: every record and attempt folder, the suite's own documents (a
WebVoyager run's webvoyager.json: where its tasks came from, its judge), its conventions (how an unreadable verdict
counts, how many epochs) and its conditions. Runs whose conditions or conventions differ are refused with one line
naming the differences, unless `--allow-mixed`: then the merged summary lists them.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from webeval.cli import CommandError
from webeval.outcomes.conditions import CONDITIONS, Differences, describe, differences, document
from webeval.outcomes.reconcile import summary_lines, write_summary
from webeval.outcomes.rundir import CONVENTIONS, POPULATION, RESULTS, RunDir
from webeval.outcomes.sessions import SESSIONS, copy_sessions

# Written by the merge itself: the population, conventions, conditions, every record and session, the summary.
MERGED_FILES = {POPULATION, CONVENTIONS, CONDITIONS, RESULTS, SESSIONS, "summary.json", "summary.md"}


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("merge", help="merge shard run directories into one and reconcile it")
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="DIR")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="the merged run directory (new)")
    parser.add_argument("--allow-mixed", action="store_true",
                        help="merge runs whose conditions or conventions differ; the summary lists the differences")
    parser.set_defaults(func=run)


def _runs(sources: list[Path]) -> list[RunDir]:
    runs = []
    for path in sources:
        if not (path / POPULATION).is_file():
            raise CommandError(f"{path} is not a run directory (no {POPULATION})")
        runs.append(RunDir(path))
    population = runs[0].population()
    for run in runs[1:]:
        other = run.population()
        if other.sha256 != population.sha256 or other.ids != population.ids:
            raise CommandError(f"{run.path} scores population {other.name} ({other.sha256[:12]}), "
                               f"{runs[0].path} scores {population.name} ({population.sha256[:12]}): not mergeable")
    return runs


def _terms(run: RunDir) -> dict[str, str]:
    """What a run ran under, for comparing runs: its first session's conditions and its conventions."""
    first, _ = run.conditions()
    return {**first, **{f"convention {name}": value for name, value in run.conventions().items()}}


def mixed_runs(runs: list[RunDir], allow_mixed: bool) -> dict[str, Differences]:
    """Each run (after the first) whose conditions or conventions differ from the first run's, and how; refused
    with one line unless mixing is allowed."""
    first = _terms(runs[0])
    found = {str(run.path): diff for run in runs[1:] if (diff := differences(first, _terms(run)))}
    if found and not allow_mixed:
        said = "; ".join(f"{path}: {describe(diff)}" for path, diff in found.items())
        raise CommandError(f"the runs' conditions differ from {runs[0].path}'s: {said}; merge runs made under the "
                           "same conditions, or pass --allow-mixed (the summary then lists the differences)")
    return found


def _documents(runs: list[RunDir], out: Path) -> None:
    """The suites' own files (webvoyager.json, an imported run's task file, judge labels), each from the first run
    that has it; hidden files (a writer's lease, locks) stay where they are."""
    for run in runs:
        for path in sorted(run.path.iterdir()):
            if path.is_file() and not path.name.startswith(".") and path.name not in MERGED_FILES \
                    and not (out / path.name).exists():
                shutil.copyfile(path, out / path.name)


def _conditions(runs: list[RunDir], out: RunDir, between: dict[str, Differences]) -> None:
    first, _ = runs[0].conditions()
    mixed: dict[str, Differences] = {}
    for run in runs:
        mixed.update({f"{run.path.name}/{session}": found for session, found in run.conditions()[1].items()})
    mixed.update({f"{Path(path).name} (merged)": found for path, found in between.items()})
    conventions: dict[str, str] = {}
    for run in reversed(runs):  # the first run's conventions win where they differ (mixing was allowed)
        conventions.update(run.conventions())
    if conventions:
        out.set_conventions(conventions)
    if first or mixed:
        (out.path / CONDITIONS).write_text(json.dumps(document(first, "", mixed), indent=2, ensure_ascii=False),
                                           encoding="utf-8")


def merge(sources: list[Path], out: Path, allow_mixed: bool = False) -> RunDir:
    """Every record and attempt folder of the sources in one directory; the sources are left as they were."""
    runs = _runs(sources)
    between = mixed_runs(runs, allow_mixed)
    if out.exists() and any(out.iterdir()):
        raise CommandError(f"{out} exists and is not empty: merge into a new directory")
    merged = RunDir(out).create(runs[0].population())
    _documents(runs, out)
    _conditions(runs, merged, between)
    for run in runs:
        for record in run.records():
            merged.append(record)
        copy_sessions(run.path, out)
        tasks = run.path / "tasks"
        if tasks.is_dir():
            shutil.copytree(tasks, out / "tasks", dirs_exist_ok=True)
    return merged


def run(args: argparse.Namespace) -> int:
    merged = merge(args.run_dirs, args.out, args.allow_mixed)
    summary = write_summary(merged)
    for line in summary_lines(summary):
        print(line)
    if summary.duplicates:
        print(f"  duplicates (valid in more than one source): {', '.join(summary.duplicates)}")
    print(f"  merged into {args.out}")
    return 0 if summary.complete else 1
