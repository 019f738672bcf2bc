"""`webeval gate --paired BASELINE RUN`: exit 0 unless RUN is significantly worse than BASELINE (more tasks newly
failing than newly passing, McNemar's exact test below --alpha), 1 if it is or if RUN is incomplete (unless
--allow-incomplete); one line says which, with the p-value and the difference."""

from __future__ import annotations

import argparse
from pathlib import Path

from webeval.cli import CommandError
from webeval.cli.diff import comparison_of
from webeval.outcomes.gate import GATE_PASSED, decide_paired


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("gate", help="exit 1 when a run is significantly worse than a baseline run")
    parser.add_argument("--paired", type=Path, required=True, metavar="BASELINE",
                        help="the baseline run directory, over the same population")
    parser.add_argument("run_dir", type=Path, metavar="RUN")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    parser.add_argument("--allow-incomplete", action="store_true",
                        help="gate an incomplete run on its comparable tasks instead of failing it")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 0 < args.alpha < 1:
        raise CommandError(f"--alpha {args.alpha:g}: give a level between 0 and 1, such as 0.05")
    status, line = decide_paired(comparison_of(args.paired, args.run_dir), args.alpha, args.allow_incomplete)
    print(line)
    return 0 if status == GATE_PASSED else 1
