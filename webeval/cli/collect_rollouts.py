"""`webeval rollouts collect --suite NAME --group-size G --slots N --out DIR`: rollouts for training, without a trainer.

Each task of the suite (or the first `--tasks K`, or those named with `--task-id`) is rolled out G times, a group per
task, on N slots at once; records go to DIR/rollouts.jsonl and the screenshots stay in DIR/tasks/. Running the same
command again goes on where the last run stopped (Ctrl-C, SIGTERM, a stopped endpoint): no rollout is run twice.
The suite's own options (`--population`, `--tasks-file`, the judge's, ...) are taken after `--suite`; `--help` with
a `--suite` lists them. With `--ray ADDRESS` the rollouts run on the nodes of a Ray cluster instead, each node's
screenshots on that node (docs/training.md, "Across nodes with Ray").
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

from webeval.cli import CommandError
from webeval.cli.ray_options import check_ray_values, ray_flags
from webeval.cli.suite_commands import suite_command_values
from webeval.flags import Flag, OptionError, add_arguments
from webeval.policy.choice import POLICY_FLAGS, PolicyChoice
from webeval.run_settings import RUN_FLAGS, SESSION_ONLY_FLAGS, Settings, run_settings

STOP_EXIT_CODE = 3  # the policy endpoint (or the slots) cannot serve: nothing more can run
INCOMPLETE_EXIT_CODE = 12  # some rollouts were not run: the same command finishes them
DEFAULT_SLOTS = 8
OWN_FLAGS = (
    Flag("--suite", default="local", metavar="NAME",
         help="local (default), rubric, miniwob, webvoyager or tasks:FILE"),
    Flag("--out", metavar="DIR", help="the collection's folder: rollouts.jsonl, tasks/, summary.json (required)"),
    Flag("--group-size", type=int, default=4, metavar="G", help="rollouts of each task, one group (default 4)"),
    Flag("--tasks", type=int, metavar="K", help="only the population's first K tasks"),
    Flag("--task-id", action="append", metavar="ID", help="only this task (again for more)"),
    Flag("--seed", type=int, default=0, metavar="S", help="the collection's seed: each sample's seed derives from it"),
    Flag("--no-token-ids", action="store_true",
         help="do not ask the endpoint for token ids and log-probabilities (for an endpoint that refuses vLLM's "
              "parameters)"),
    Flag("--history", choices=("append-only", "windowed"), default="append-only",
         help="the policy's prompt: append-only (each turn extends the last; the default) or windowed"),
    Flag("--completion-threshold", type=float, metavar="F",
         help="once this share of the rollouts has ended, the rest get --grace seconds, then are cut (masked)"),
    Flag("--grace", type=float, default=30.0, metavar="S", help="see --completion-threshold (default 30)"),
    Flag("--judge-concurrency", type=int, default=8, metavar="N", help="verdicts awaited at once (default 8)"),
)
RAY_FLAGS = ray_flags("the rollouts", "a rollout")
COMMON_FLAGS = (*OWN_FLAGS, *RAY_FLAGS, *POLICY_FLAGS, *(flag for flag in RUN_FLAGS if flag not in SESSION_ONLY_FLAGS))


def add_parser(subparsers) -> None:
    group = subparsers.add_parser("rollouts", help="collect rollouts for training (records, rewards, masks)")
    commands = group.add_subparsers(dest="rollouts_command", required=True, metavar="COMMAND")
    collect = commands.add_parser("collect", add_help=False, help="roll out a suite's tasks on N slots",
                                  description=__doc__.splitlines()[0])
    collect.add_argument("-h", "--help", action="store_true", help="show this help (with --suite: its options)")
    add_arguments(collect, COMMON_FLAGS)
    collect.set_defaults(func=run, extra=[])


def run(args: argparse.Namespace) -> int:
    parsed = suite_command_values(args, "webeval rollouts collect", __doc__, "collection, policy and runtime",
                                  COMMON_FLAGS)
    if parsed is None:
        return 0
    values, suite_values = parsed
    _check(values)
    return asyncio.run(collect_command(args.suite, values, suite_values))


def _check(values: dict[str, Any]) -> None:
    if not values["out"]:
        raise CommandError("--out DIR is required: the folder the rollouts go to")
    for name in ("group_size", "judge_concurrency"):
        if values[name] < 1:
            raise CommandError(f"--{name.replace('_', '-')} must be at least 1")
    threshold = values["completion_threshold"]
    if threshold is not None and not 0 < threshold <= 1:
        raise CommandError("--completion-threshold must be above 0 and at most 1")
    if values["grace"] < 0 or (values["tasks"] is not None and values["tasks"] < 1):
        raise CommandError("--grace must not be negative, --tasks must be at least 1")
    check_ray_values(values)


async def collect_command(suite: str, values: dict[str, Any], suite_values: dict[str, Any]) -> int:
    out = Path(values["out"])
    if values["ray"]:
        from webeval.cli.ray_collection import join_cluster

        join_cluster(values["ray"])  # before anything is written: an unreachable cluster is one line and no folder
    lease = _claim(out)
    try:
        return await _collect(suite, values, suite_values, out)
    finally:
        lease.release()


def _claim(out: Path):
    """One collection writes a folder at a time: a second one stops at once, naming the first."""
    import uuid

    from webeval.outcomes.writer import WriterBusy, claim

    try:
        return claim(out, f"rollouts-{uuid.uuid4().hex[:8]}").keep_renewing()
    except WriterBusy as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"--out {out}: cannot write the collection there ({exc.strerror or exc})") from None


async def _collect(suite: str, values: dict[str, Any], suite_values: dict[str, Any], out: Path) -> int:
    from webeval.benchmarks import benchmark_setup, open_setup
    from webeval.rollouts import EngineStopped, RolloutEngine, RolloutStore, collect
    from webeval.rollouts.collection import CollectionError, Progress, settle_ask, summarize, summary_lines, \
        write_summary

    try:
        setup = benchmark_setup(suite, suite_values)
        choice = PolicyChoice.from_values({**values, "policy": values["policy"] or setup.default_policy})
        settings = run_settings(values, choice.name, default_slots=DEFAULT_SLOTS)
        task_ids = _chosen(setup, values)
        ask = _ask(suite, suite_values, values, choice, task_ids)
        settle_ask(out, ask)
    except (OptionError, CollectionError) as exc:
        raise CommandError(str(exc)) from None
    if choice.name is None:
        raise CommandError(f"no policy: {suite} has no built-in solutions; pass --policy openai with "
                           "--policy-base-url and --policy-model, or --policy-profile (see docs/models.md)")
    _preflight(choice)
    from webeval.rollouts.collection import plan

    requests = plan(task_ids, values["group_size"], values["seed"])
    done = RolloutStore(out).done()
    pending = [request for request in requests if request.id not in done]
    progress = Progress(len(requests), len(done))
    interrupted = asyncio.Event()
    _on_signals(interrupted)
    began = asyncio.get_running_loop().time()
    if values["ray"]:
        batch = await _collect_on_ray(suite, setup, suite_values, values, choice, settings, pending, progress,
                                      interrupted)
    else:
        try:
            async with open_setup(suite, setup, suite_values) as benchmark:
                async with RolloutEngine(benchmark, out, _policies(choice, settings, values),
                                         _engine_settings(settings, values)) as engine:
                    batch = await collect(engine, pending, completion_threshold=values["completion_threshold"],
                                          grace_s=values["grace"], on_record=progress.add, interrupted=interrupted)
        except EngineStopped as exc:  # before any rollout: the slots could not start
            print(f"webeval rollouts: stopped: {exc}", file=sys.stderr)
            return STOP_EXIT_CODE
    final = RolloutStore(out).final()
    records = [final[request.id] for request in requests if request.id in final]
    summary = summarize(records, len(requests), asyncio.get_running_loop().time() - began, batch.records)
    write_summary(out, summary)
    for line in summary_lines(summary):
        print(line)
    return _status(batch, summary, interrupted.is_set())


async def _collect_on_ray(suite: str, setup, suite_values: dict[str, Any], values: dict[str, Any],
                          choice: PolicyChoice, settings: Settings, pending, progress, interrupted: asyncio.Event):
    from webeval.cli.ray_collection import collect_suite_on_ray

    return await collect_suite_on_ray(
        values["ray"], suite, suite_values, choice, pending, Path(values["out"]),
        settings=_engine_settings(settings, values), token_ids=not values["no_token_ids"],
        task_ids=set(setup.population.ids), resubmit_lost=values["resubmit_lost"],
        completion_threshold=values["completion_threshold"], grace_s=values["grace"], on_record=progress.add,
        interrupted=interrupted)


def _chosen(setup, values: dict[str, Any]) -> list[str]:
    ids = list(setup.population.ids)  # in the tasks' order; a task set's are its index's, no task read
    if values["task_id"]:
        known = set(ids)
        unknown = [task_id for task_id in values["task_id"] if task_id not in known]
        if unknown:
            raise OptionError(f"--task-id {unknown[0]!r} is not a task of {setup.name} ({len(ids)} tasks)")
        return list(dict.fromkeys(values["task_id"]))
    return ids[:values["tasks"]] if values["tasks"] else ids


def _ask(suite: str, suite_values: dict[str, Any], values: dict[str, Any], choice: PolicyChoice, task_ids):
    from webeval.rollouts.collection import Ask

    model = choice.name != "oracle" and choice.name is not None
    return Ask(suite=suite, options={k: v for k, v in suite_values.items() if v not in (None, False, [])},
               group_size=values["group_size"], seed=values["seed"], task_ids=task_ids,
               policy=choice.describe().splitlines()[0], history=values["history"] if model else None,
               token_ids=model and not values["no_token_ids"])


def _preflight(choice: PolicyChoice) -> None:
    """A model endpoint that cannot serve would mask every rollout: say so once, before any starts."""
    if choice.name != "openai":
        return
    import os

    from webeval.models import PreflightError
    from webeval.policy.openai import check_policy_endpoint

    try:
        check_policy_endpoint(choice.profile, os.environ)
    except PreflightError as exc:
        print(f"webeval rollouts: {exc}", file=sys.stderr)
        raise SystemExit(STOP_EXIT_CODE) from None


def _policies(choice: PolicyChoice, settings: Settings, values: dict[str, Any]):
    if choice.name == "openai":
        from webeval.rollouts.model_policies import ModelPolicies

        return ModelPolicies(choice.profile, settings.screen, token_ids=not values["no_token_ids"],
                             history=values["history"], record=choice.record)
    factory = choice.factory(settings.screen)
    return lambda request: factory


def _engine_settings(settings: Settings, values: dict[str, Any]):
    from webeval.rollouts import EngineSettings

    return EngineSettings(slots=settings.slots, screen=settings.screen, browser_path=settings.browser_path,
                          judge_concurrency=values["judge_concurrency"], budgets=settings.budgets,
                          settle_cap_s=settings.settle_cap_s, infra_retries=settings.infra_retries,
                          download_max_bytes=settings.download_max_bytes,
                          history=values["history"] if settings.policy == "openai" else None)


def _on_signals(interrupted: asyncio.Event) -> None:
    """Ctrl-C, SIGTERM and SIGHUP end the collection as asked: in-flight rollouts masked `interrupted`, their records
    written, the rest left for the next run. A second Ctrl-C stops at once."""
    from webeval.rollouts.interrupts import stop_on_signals

    loop = asyncio.get_running_loop()

    def said(number: int) -> None:
        if interrupted.is_set() and number == signal.SIGINT:
            loop.remove_signal_handler(signal.SIGINT)
            raise KeyboardInterrupt
        print(f"\nwebeval rollouts: {signal.Signals(number).name}: ending the rollouts in flight; run the same "
              "command again to finish", file=sys.stderr, flush=True)

    stop_on_signals(interrupted, (signal.SIGINT, signal.SIGTERM, signal.SIGHUP), said)


def _status(batch, summary: dict[str, Any], interrupted: bool) -> int:
    if batch.rejected:
        for index, error in batch.rejected:
            print(f"webeval rollouts: request {index}: {error}", file=sys.stderr)
    if batch.stopped:
        print(f"webeval rollouts: stopped: {batch.stopped}", file=sys.stderr)
        return STOP_EXIT_CODE
    if interrupted or not summary["complete"]:
        return INCOMPLETE_EXIT_CODE
    return 1 if summary["masked_by_kind"].get("harness_error") else 0
