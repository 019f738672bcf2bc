"""The `webeval` command: small subcommands over run directories, each in a module of its own."""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

# Each module has `add_parser(subparsers)`, which registers its subcommand with `func=run(args) -> int` (the module's
# name says what it does; `paired_gate` registers `webeval gate`, `profile_check` `webeval profile`,
# `collect_rollouts` `webeval rollouts collect`, `tasksets` `webeval tasks`,
# `new_suite` `webeval new-suite`).
COMMANDS = ("summary", "merge", "diff", "paired_gate", "prepare", "reverify", "report", "profile_check",
            "judge_agreement", "calibrate", "export", "split", "decompose", "imports", "collect_rollouts",
            "tasksets", "new_suite")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="webeval", description="Evaluate visual web agents; inspect their runs.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"webeval.cli.{name}").add_parser(subparsers)
    return parser


class CommandError(Exception):
    """A one-line message for the user; the command exits with status 2."""


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    # A command whose options depend on another of its options (a benchmark's own) parses the rest itself.
    args, extra = parser.parse_known_args(argv)
    if extra and not hasattr(args, "extra"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if hasattr(args, "extra"):
        args.extra = extra
    name = " ".join(part for part in (args.command, getattr(args, "tasks_command", None),
                                      getattr(args, "rollouts_command", None)) if part)

    said: set[str] = set()

    def one_line(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001 - warnings' own
        # What was skipped over (a torn record, a screenshot outside its folder) says so once, in one line, not in
        # two with the harness's own source line, and not again where another part of the harness met it too.
        if str(message) not in said:
            said.add(str(message))
            print(f"webeval {name}: warning: {message}", file=sys.stderr)

    warnings.showwarning = one_line
    try:
        return args.func(args)
    except CommandError as exc:
        print(f"webeval {name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
