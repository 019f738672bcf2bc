"""`webeval export DIR --out PATH [--format training|inspect|online-mind2web]`: a run as other tools read it.

- training (the default): the trajectories as JSON lines for training (fields: webeval.report.training_data).
- inspect: Inspect AI's eval log (`.eval` or `.json`), for `inspect view` (webeval.interop.to_inspect).
- online-mind2web: Online-Mind2Web's result folders, for its WebJudge script (webeval.interop.to_mind2web); status 1
  when no task could be exported.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from pathlib import Path

from webeval.cli import CommandError
from webeval.outcomes.rundir import POPULATION, RunDir
from webeval.report.training_data import lines

FORMATS = ("training", "inspect", "online-mind2web")
INSPECT_EXTRA = "pip install 'pytest-webeval[inspect]'"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("export", help="write a run for training, Inspect AI or Online-Mind2Web")
    parser.add_argument("run_dir", type=Path, metavar="DIR")
    parser.add_argument("--out", type=Path, required=True, metavar="PATH",
                        help="training: FILE.jsonl; inspect: FILE.eval or FILE.json; online-mind2web: a folder")
    parser.add_argument("--format", choices=FORMATS, default="training", help="what to write (default training)")
    parser.add_argument("--model", default="unknown", help="inspect: the policy model's name, for the log")
    parser.set_defaults(func=run)


def training(args: argparse.Namespace) -> None:
    counts: Counter = Counter()
    aside = args.out.with_name(f".{args.out.name}.{os.getpid()}")
    with open(aside, "w", encoding="utf-8") as out:  # written aside, so a reader never sees half a file
        for row in lines(RunDir(args.run_dir)):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            counts["masked" if row["mask"] else row["outcome"]] += 1
    os.replace(aside, args.out)
    print(f"{args.out}: {sum(counts.values())} trajectories (passed={counts['passed']}, failed={counts['failed']}, "
          f"masked={counts['masked']})")


def inspect(args: argparse.Namespace) -> None:
    try:
        from webeval.interop import to_inspect
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "inspect_ai":
            raise
        raise CommandError(f"--format inspect needs inspect_ai: {INSPECT_EXTRA}") from None
    if args.out.suffix not in to_inspect.FORMATS:
        raise CommandError(f"--out {args.out}: an Inspect log is a .eval or .json file")
    counts = to_inspect.write(args.run_dir, args.out, args.model)
    print(f"{args.out}: an Inspect eval log, samples={counts['samples']} scored={counts['scored']} "
          f"errors={counts['errors']} missing={counts['missing']}")


def mind2web(args: argparse.Namespace) -> int:
    from webeval.interop.to_mind2web import export

    if args.out.exists() and not args.out.is_dir():
        raise CommandError(f"--out {args.out}: not a folder")
    exported, left, missing = export(args.run_dir, args.out)
    for task_id, why in left:
        print(f"  not exported {task_id}: {why}")
    print(f"{args.out}: Online-Mind2Web result folders, exported={len(exported)} not_exported={len(left)} "
          f"missing={len(missing)}")
    return 0 if exported else 1


def run(args: argparse.Namespace) -> int:
    if not (args.run_dir / POPULATION).is_file():
        raise CommandError(f"{args.run_dir} is not a run directory (no {POPULATION})")
    if not args.out.parent.is_dir():
        raise CommandError(f"--out {args.out}: no folder {args.out.parent}")
    if args.format == "online-mind2web":
        return mind2web(args)
    (inspect if args.format == "inspect" else training)(args)
    return 0
