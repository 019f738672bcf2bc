"""`webeval merge DIR... --out DIR`: reconcile shard (or partial) run directories into one."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from webeval.cli import CommandError
from webeval.outcomes.reconcile import summary_lines, write_summary
from webeval.outcomes.rundir import POPULATION, RunDir
from webeval.outcomes.sessions import copy_sessions


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("merge", help="merge shard run directories into one and reconcile it")
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="DIR")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="the merged run directory (new)")
    parser.set_defaults(func=run)


def merge(sources: list[Path], out: Path) -> RunDir:
    """Every record and attempt folder of the sources in one directory; the sources are left as they were."""
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
    if out.exists() and any(out.iterdir()):
        raise CommandError(f"{out} exists and is not empty: merge into a new directory")
    merged = RunDir(out).create(population)
    for run in runs:
        for record in run.records():
            merged.append(record)
        copy_sessions(run.path, out)
        tasks = run.path / "tasks"
        if tasks.is_dir():
            shutil.copytree(tasks, out / "tasks", dirs_exist_ok=True)
    return merged


def run(args: argparse.Namespace) -> int:
    merged = merge(args.run_dirs, args.out)
    summary = write_summary(merged)
    for line in summary_lines(summary):
        print(line)
    if summary.duplicates:
        print(f"  duplicates (valid in more than one source): {', '.join(summary.duplicates)}")
    print(f"  merged into {args.out}")
    return 0 if summary.complete else 1
