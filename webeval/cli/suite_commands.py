"""Commands that run a suite's tasks (`webeval rollouts collect`, `webeval serve`): their own options first, then,
after `--suite NAME`, the suite's own options, which only the suite knows; `--help` with a `--suite` lists both."""

from __future__ import annotations

import argparse
from typing import Any

from webeval.cli import CommandError
from webeval.flags import Flag, OptionError, add_arguments, values_of


def suite_command_values(args: argparse.Namespace, prog: str, doc: str, own_options: str,
                         flags: tuple[Flag, ...]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(the command's values of `flags`, the suite's values of the options left over in `args.extra`), or None when
    `--help` asked for them and they were printed. `doc` is the command module's docstring: its first line describes
    the command, the rest is the help's epilog; `own_options` titles the command's group of options."""
    from webeval.benchmarks import benchmark_flags

    try:
        suite_flags = benchmark_flags(args.suite)
    except OptionError as exc:
        raise CommandError(str(exc)) from None
    if args.help:
        parser = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0],
                                         epilog=" ".join(doc.splitlines()[2:]))
        add_arguments(parser.add_argument_group(own_options), flags)
        add_arguments(parser.add_argument_group("the suite's own options"), suite_flags)
        parser.print_help()
        return None
    suite_parser = argparse.ArgumentParser(prog=f"{prog} --suite {args.suite}", add_help=False)
    add_arguments(suite_parser, suite_flags)
    suite_values = values_of(suite_parser.parse_args(args.extra), suite_flags)
    return values_of(args, flags), suite_values
