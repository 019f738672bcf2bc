"""`webeval tasks generate SEEDS.jsonl --judge-profile P --out tasks.jsonl`: a model writes each seed's rubric.

A seed is a JSON line with a `goal` and a `start_url` (and optionally `id`, `site`, `domain`). The model is reached as
a judge is (--judge-profile, or --judge-base-url and --judge-model). The tasks written are checked (at least one fact
group each, no empty criterion, ids unique) before the file is written, in seed order; a seed the model could not
write is named on stderr with its reason and in OUT.report.json, and the command then exits 1. An endpoint that
fails (unreachable, refusing the key, HTTP errors after retries) stops it with nothing written.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from webeval.cli import CommandError
from webeval.flags import add_arguments, values_of
from webeval.judges.config import JudgeConfigError, check_judge_endpoint
from webeval.judges.judge_options import JUDGE_FLAGS, judge_config
from webeval.judges.rubric_generation import REASKS, Failure, Written, write_rubrics
from webeval.outcomes.record import JudgeError
from webeval.outcomes.redact import redact
from webeval.tasks import TaskFileError
from webeval.tasks.line_files import LineFile, numbered_lines
from webeval.tasks.task_rows import json_object
from webeval.tasks.rubric_writing import PROMPT_VERSION, read_seeds


# The judge family's options that reach a model: the rubric writer is asked as a judge is, and is no judge.
ENDPOINT_FLAGS = tuple(flag for flag in JUDGE_FLAGS if flag.key in {
    "judge_profile", "judge_base_url", "judge_model", "judge_api_key_env", "judge_timeout", "judge_retries"})


def add_parser(commands) -> None:
    parser = commands.add_parser("generate", help="write seed tasks' rubrics (fact groups) with a model")
    parser.add_argument("seeds", type=Path, metavar="SEEDS.jsonl", help="one {goal, start_url} a line")
    parser.add_argument("--out", type=Path, required=True, metavar="tasks.jsonl")
    add_arguments(parser, ENDPOINT_FLAGS)
    parser.add_argument("--reasks", type=int, default=REASKS,
                        help=f"asks again after an unusable reply (default {REASKS})")
    parser.add_argument("--concurrency", type=int, default=4, help="seeds asked at once (default 4)")
    parser.set_defaults(func=run)


def _endpoint(args: argparse.Namespace):
    if args.concurrency < 1 or args.reasks < 0:
        raise CommandError("--concurrency must be at least 1, --reasks not negative")
    try:
        config = judge_config(values_of(args, ENDPOINT_FLAGS), root=Path.cwd())
        check_judge_endpoint(config)
        return config.endpoint()
    except JudgeConfigError as exc:
        raise CommandError(str(exc)) from None


def _checked(outcomes: list[Written | Failure]) -> list[Written | Failure]:
    """Ids unique across what was written (a model-named site may give two seeds one id)."""
    seen: dict[str, int] = {}
    checked: list[Written | Failure] = []
    for outcome in outcomes:
        if isinstance(outcome, Written):
            first = seen.setdefault(outcome.task.id, outcome.line)
            if first != outcome.line:
                outcome = Failure(outcome.line, f"duplicate task id {outcome.task.id!r} (first on line {first})",
                                  outcome.asked)
        checked.append(outcome)
    return checked


def _write(out: Path, written: list[Written]) -> None:
    partial = out.with_name(out.name + ".partial")
    try:
        with open(partial, "w", encoding="utf-8") as handle:
            for outcome in written:
                handle.write(outcome.task.model_dump_json(exclude_none=True, exclude_defaults=True) + "\n")
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)


def run(args: argparse.Namespace) -> int:
    try:
        lines = numbered_lines(LineFile(args.seeds))  # streamed: a seeds file may be larger than a task file's cap
        seeds = read_seeds(args.seeds, ((line, json_object(args.seeds, line, raw)) for line, _, raw in lines
                                        if raw.strip()))
    except TaskFileError as exc:
        raise CommandError(str(exc)) from None
    endpoint = _endpoint(args)
    try:
        outcomes = _checked(asyncio.run(write_rubrics(seeds, endpoint, args.reasks, args.concurrency)))
    except JudgeError as exc:
        raise CommandError(f"{exc}; nothing written") from None
    written = [o for o in outcomes if isinstance(o, Written)]
    failed = [o for o in outcomes if isinstance(o, Failure)]
    for failure in failed:
        print(redact(f"webeval tasks generate: {args.seeds}:{failure.line}: not written: {failure.reason}"),
              file=sys.stderr)
    if written:
        _write(args.out, written)
    report = args.out.with_name(args.out.name + ".report.json")
    report.write_text(redact(json.dumps({
        "seeds": str(args.seeds), "model": endpoint.model, "base_url": endpoint.base_url,
        "prompt_version": PROMPT_VERSION, "written": len(written), "failed": len(failed),
        "asked": sum(o.asked for o in outcomes),
        "failures": [{"line": f.line, "reason": f.reason, "asked": f.asked} for f in failed]}, indent=2)),
        encoding="utf-8")
    where = f"{args.out}: {len(written)} tasks written" if written else "nothing written"
    print(f"{where}; {len(failed)} of {len(outcomes)} seeds not written (reasons: {report})" if failed else
          f"{where} from {len(outcomes)} seeds by {endpoint.model}")
    return 1 if failed else 0
