"""`webeval import webvoyager|online-mind2web|agentlab DIR --out RUN`: another harness's trajectories as a run
directory that `webeval reverify` judges (docs/judges.md, "Judging runs made elsewhere").

Every task folder of DIR is read; one that cannot be (a file missing or malformed, no screenshots) is listed with the
reason and the rest are imported. The last line says how many were imported and skipped. The status is 0 when
something was imported, 1 when nothing could be, 2 for bad usage (DIR not a directory, RUN not empty).
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import date
from pathlib import Path

from webeval.benchmarks.webvoyager.settings import DEFAULT_POPULATION, Source
from webeval.cli import CommandError
from webeval.flags import OptionError
from webeval.interop.into_rundir import ImportPlan, write_run
from webeval.interop.readers import READERS, read_all
from webeval.tasks import Population


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("import", help="another harness's trajectories as a run directory to re-judge")
    parser.add_argument("format", choices=tuple(READERS), metavar="FORMAT",
                        help=f"the source's layout: {', '.join(READERS)}")
    parser.add_argument("source", type=Path, metavar="DIR", help="the folder holding one folder per task")
    parser.add_argument("--out", type=Path, required=True, metavar="RUN", help="the run directory to write (new)")
    parser.add_argument("--population", default=None, metavar="NAME",
                        help=f"webvoyager: the pinned population the tasks are over (e.g. {DEFAULT_POPULATION}); "
                             "tasks not in DIR are missing, never failed")
    parser.add_argument("--data-dir", type=Path, default=None, metavar="DIR",
                        help="webvoyager: where the population's files are (as `webeval prepare` leaves them)")
    parser.set_defaults(func=run)


def pinned_population(args: argparse.Namespace) -> Population | None:
    if not (args.population or args.data_dir):
        return None
    if args.format != "webvoyager":
        raise CommandError("--population and --data-dir go with `webeval import webvoyager` only")
    try:
        return Source(args.population or DEFAULT_POPULATION, None,
                      str(args.data_dir) if args.data_dir else None).load(date.today())[0]
    except OptionError as exc:
        raise CommandError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    if not args.source.is_dir():
        raise CommandError(f"{args.source} is not a directory")
    if args.out.exists() and (not args.out.is_dir() or any(args.out.iterdir())):
        raise CommandError(f"--out {args.out}: exists and is not an empty directory; import into a new one")
    population = pinned_population(args)
    with tempfile.TemporaryDirectory(prefix="webeval-import-") as scratch:
        trajectories, skipped = read_all(args.format, args.source, Path(scratch), population)
        for one in skipped:
            print("  " + one.line(args.source))
        total = len(trajectories) + len(skipped)
        if trajectories:
            plan = ImportPlan(args.format, args.source, READERS[args.format].protocol, args.population
                              or (DEFAULT_POPULATION if population else None), args.data_dir)
            write_run(args.out, plan, trajectories, population)
            print(f"  judge them: webeval reverify {args.out} --judge-base-url URL --judge-model MODEL "
                  f"(protocol {plan.protocol} unless --judge-protocol says another)")
    where = f"into {args.out}" if trajectories else "(nothing written)"
    print(f"webeval import {args.format}: imported {len(trajectories)} of {total} folders {where}, "
          f"skipped {len(skipped)}")
    return 0 if trajectories else 1
