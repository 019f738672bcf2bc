"""`webeval gate --paired BASELINE RUN`: exit 0 unless RUN is significantly worse than BASELINE (more tasks newly
failing than newly passing, McNemar's exact test below --gate-alpha), 1 if it is or if RUN is incomplete (unless
--allow-incomplete); one line says which, with the p-value and the difference. `--gate-alpha` and
`--allow-incomplete` are the session's own gate options (webeval.outcomes.gate), declared once."""

from __future__ import annotations

import argparse
from pathlib import Path

from webeval.cli import CommandError
from webeval.cli.diff import comparison_of
from webeval.flags import OptionError, add_arguments
from webeval.outcomes.gate import ALLOW_INCOMPLETE, GATE_ALPHA, GATE_PASSED, decide_paired, gate_alpha

FLAGS = (GATE_ALPHA, ALLOW_INCOMPLETE)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("gate", help="exit 1 when a run is significantly worse than a baseline run")
    parser.add_argument("--paired", type=Path, required=True, metavar="BASELINE",
                        help="the baseline run directory, over the same population")
    parser.add_argument("run_dir", type=Path, metavar="RUN")
    add_arguments(parser, FLAGS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        alpha = gate_alpha(args.gate_alpha)
    except OptionError as exc:
        raise CommandError(str(exc)) from None
    status, line = decide_paired(comparison_of(args.paired, args.run_dir), alpha, args.allow_incomplete)
    print(line)
    return 0 if status == GATE_PASSED else 1
