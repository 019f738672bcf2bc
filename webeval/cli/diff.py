"""`webeval diff BASELINE CANDIDATE`: two runs of one population compared task by task, with paired statistics.

Printed in the terminal, written as JSON with `--json PATH`, and, when the candidate has Allure results, put on them
as a `comparison` label per task that the report's first categories gather (Newly failing, Newly passing, Flaky
across epochs, Not comparable): `webeval report CANDIDATE` shows them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from webeval.cli import CommandError
from webeval.outcomes.comparison import Comparison, ComparisonError, compare, comparison_lines
from webeval.outcomes.rundir import RunDir
from webeval.report.compared import mark_results, save
from webeval.report.results import RESULTS_DIR


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("diff", help="compare two runs of one population task by task (McNemar's exact "
                                                "test, a bootstrap interval of the difference)")
    parser.add_argument("baseline", type=Path, metavar="BASELINE", help="the run directory compared against")
    parser.add_argument("candidate", type=Path, metavar="CANDIDATE", help="the run directory compared")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="write the comparison as JSON")
    parser.set_defaults(func=run)


def comparison_of(baseline: Path, candidate: Path) -> Comparison:
    try:
        return compare(baseline, candidate)
    except ComparisonError as exc:
        raise CommandError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    if args.json is not None and not args.json.parent.is_dir():
        raise CommandError(f"--json {args.json}: no folder {args.json.parent}")
    comparison = comparison_of(args.baseline, args.candidate)
    for line in comparison_lines(comparison):
        print(line)
    data = comparison.model_dump(mode="json")
    if args.json is not None:
        args.json.write_text(json.dumps(data, indent=2), encoding="utf-8")
        print(f"  json: {args.json}")
    candidate = RunDir(args.candidate)
    results = candidate.path / RESULTS_DIR
    if results.is_dir():
        save(candidate, data)
        marked = mark_results(results, candidate, data)
        print(f"  allure: {marked} results of {results} labelled with their change (webeval report "
              f"{candidate.path} shows them as categories)")
    return 0
