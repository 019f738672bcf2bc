"""`webeval summary DIR`: reconcile a run directory again and print its summary."""

from __future__ import annotations

import argparse
from pathlib import Path

from webeval.cli import CommandError
from webeval.outcomes.reconcile import summary_lines, write_summary
from webeval.outcomes.rundir import POPULATION, RunDir


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("summary", help="print a run directory's summary again")
    parser.add_argument("run_dir", type=Path, metavar="DIR")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    run_dir = RunDir(args.run_dir)
    if not (run_dir.path / POPULATION).is_file():
        raise CommandError(f"{run_dir.path} is not a run directory (no {POPULATION})")
    summary = write_summary(run_dir)
    for line in summary_lines(summary):
        print(line)
    return 0 if summary.complete else 1
