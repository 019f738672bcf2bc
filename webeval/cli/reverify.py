"""`webeval reverify DIR`: judge a WebVoyager run's stored evidence again, with no browser, and reconcile it.

The run's own `webvoyager.json` says where its tasks came from and which judge it had; the judge options (the same
family as `pytest --rejudge DIR`'s, webeval.judges.judge_options) override it.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from pathlib import Path

from webeval.benchmarks.webvoyager.settings import RUN_CONFIG, Source, parse_today, stored_config
from webeval.cli import CommandError
from webeval.flags import OptionError, add_arguments, values_of
from webeval.judges.config import JudgeConfigError, Judging
from webeval.judges.judge_options import CONCURRENCY, JUDGE_FLAGS, REJUDGE_FLAGS, judge_config, unparseable_convention
from webeval.judges.rejudge import rejudge
from webeval.outcomes.epochs import CONVENTION, expand
from webeval.outcomes.reconcile import summary_lines, write_summary
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.writer import WriterBusy, claim

FLAGS = (*JUDGE_FLAGS, *REJUDGE_FLAGS, CONCURRENCY)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("reverify", help="judge a WebVoyager run's evidence again (no browser)")
    parser.add_argument("run_dir", type=Path, metavar="DIR")
    add_arguments(parser, FLAGS)
    parser.add_argument("--data-dir", default=None, help="where the population's files are now, if they moved")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    values = values_of(args, FLAGS)
    if values["judge_concurrency"] < 1:
        raise CommandError("--judge-concurrency must be at least 1")
    try:
        stored = stored_config(args.run_dir)
        if not stored:
            raise CommandError(f"{args.run_dir} has no {RUN_CONFIG}: it is not a WebVoyager run")
        source = Source(stored.get("population"), stored.get("tasks_file"), args.data_dir or stored.get("data_dir"))
        population, tasks = source.load(parse_today(stored.get("today")))
        config = judge_config(values, stored.get("judge") or {}, Path.cwd())
        judging = Judging(config)
    except (OptionError, JudgeConfigError) as exc:
        raise CommandError(str(exc)) from None
    run_dir = RunDir(args.run_dir)
    before = run_dir.population()
    epochs = run_dir.conventions().get(CONVENTION, "1")
    population, tasks = expand(population, tasks, int(epochs) if epochs.isdigit() else 1)  # a K-epoch run's ids
    if (before.sha256, before.ids) != (population.sha256, population.ids):
        raise CommandError(f"{args.run_dir} is over population {before.name} ({before.sha256[:12]}), but its "
                           f"task source now reads as {population.name} ({population.sha256[:12]})")
    # The run's own convention unless told another: a merged run re-judges as its sessions judged.
    unparseable = unparseable_convention(values["judge_unparseable"], run_dir.conventions())
    try:
        lease = claim(run_dir.path, f"reverify-{uuid.uuid4().hex[:8]}").keep_renewing()
    except WriterBusy as exc:
        asyncio.run(judging.close())
        raise CommandError(str(exc)) from None

    async def go():
        try:
            return await rejudge(run_dir, {t.id: t for t in tasks}, judging.judge, judge_name=config.describe(),
                                 failed_only=values["judge_failed_only"], concurrency=values["judge_concurrency"],
                                 unparseable=unparseable)
        finally:
            await judging.close()

    try:
        results = asyncio.run(go())
        return _report(run_dir, results, unparseable)
    finally:
        lease.release()


def _report(run_dir: RunDir, results: list, unparseable: str) -> int:
    judged = sum(1 for r in results if r.after is not None)
    print(f"re-judged {judged} of {len(results)} tasks; {len(results) - judged} kept as they were")
    for result in results:
        print("  " + result.line())
    run_dir.set_conventions({"judge_unparseable": unparseable})
    summary = write_summary(run_dir)
    for line in summary_lines(summary):
        print(line)
    return 0 if summary.complete else 1
