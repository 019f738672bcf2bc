"""`webeval reverify DIR`: judge a WebVoyager run's stored evidence again, with no browser, and reconcile it.

The run's own `webvoyager.json` says where its tasks came from and which judge it had; options override the judge.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

from webeval.cli import CommandError
from webeval.judges.config import Judging, JudgeConfigError
from webeval.judges.protocols import PROTOCOLS
from webeval.judges.rejudge import rejudge
from webeval.outcomes.reconcile import summary_lines, write_summary
from webeval.outcomes.rundir import RunDir
from webeval.benchmarks.webvoyager.settings import RUN_CONFIG, Source, judge_config, parse_today, stored_config


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("reverify", help="judge a WebVoyager run's evidence again (no browser)")
    parser.add_argument("run_dir", type=Path, metavar="DIR")
    parser.add_argument("--judge", default=None, help="model, reference, or model,reference (default: the run's)")
    parser.add_argument("--judge-base-url", default=None)
    parser.add_argument("--judge-model", default=None)
    parser.add_argument("--judge-api-key-env", default=None, metavar="ENV")
    parser.add_argument("--judge-profile", default=None)
    parser.add_argument("--judge-timeout", type=float, default=120.0)
    parser.add_argument("--judge-retries", type=int, default=2)
    parser.add_argument("--judge-temperature", default="0")
    parser.add_argument("--judge-screenshots", type=int, default=None, metavar="K")
    parser.add_argument("--judge-concurrency", type=int, default=8, help="judge calls at once (default 8)")
    parser.add_argument("--judge-failed-only", action="store_true", help="only the tasks whose judge failed")
    parser.add_argument("--judge-protocol", default=None, choices=PROTOCOLS, help="default: the run's")
    parser.add_argument("--judge-prompts", default=None, metavar="DIR", help="the pinned prompt files' folder")
    parser.add_argument("--no-judge-cache", action="store_true", help="judge again even evidence judged before")
    parser.add_argument("--data-dir", default=None, help="where the population's files are now, if they moved")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.judge_concurrency < 1:
        raise CommandError("--judge-concurrency must be at least 1")
    try:
        stored = stored_config(args.run_dir)
        if not stored:
            raise CommandError(f"{args.run_dir} has no {RUN_CONFIG}: it is not a WebVoyager run")
        source = Source(stored.get("population"), stored.get("tasks_file"), args.data_dir or stored.get("data_dir"))
        population, tasks = source.load(parse_today(stored.get("today")))
        config = judge_config(SimpleNamespace(**vars(args)), stored, Path.cwd())
        judging = Judging(config)
    except pytest.UsageError as exc:
        raise CommandError(str(exc)) from None
    except JudgeConfigError as exc:
        raise CommandError(str(exc)) from None
    run_dir = RunDir(args.run_dir)
    before = run_dir.population()
    if (before.sha256, before.ids) != (population.sha256, population.ids):
        raise CommandError(f"{args.run_dir} is over population {before.name} ({before.sha256[:12]}), but its "
                           f"task source now reads as {population.name} ({population.sha256[:12]})")

    async def go():
        try:
            return await rejudge(run_dir, {t.id: t for t in tasks}, judging.judge, judge_name=config.describe(),
                                 failed_only=args.judge_failed_only, concurrency=args.judge_concurrency)
        finally:
            await judging.close()

    results = asyncio.run(go())
    judged = sum(1 for r in results if r.after is not None)
    print(f"re-judged {judged} of {len(results)} tasks; {len(results) - judged} kept as they were")
    for result in results:
        print("  " + result.line())
    summary = write_summary(run_dir)
    for line in summary_lines(summary):
        print(line)
    return 0 if summary.complete else 1
