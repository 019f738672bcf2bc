"""Command-line options declared once and rendered into each front door: pytest's option groups and argparse parsers.

A family is a tuple of `Flag`s (the judge's in webeval.judges.judge_options, the policy's in webeval.policy.choice,
the run's in webeval.run_settings, and each benchmark's own). A door renders a family (`add_pytest_options`,
`add_arguments`), parses, and reads the values back as a mapping by destination (`values_of`); the function that
builds a configuration from such a mapping raises `OptionError` (one line) for a bad value, which pytest shows as a
usage error and the `webeval` command as its one-line error.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping


class OptionError(ValueError):
    """An option value that cannot be used; the message (one line) names the option and what to do."""


@dataclass(frozen=True)
class Flag:
    name: str  # the option string, e.g. "--judge-model"
    dest: str = ""  # the value's key; from the name when empty ("--judge-model" -> "judge_model")
    type: Callable[[str], Any] | None = None
    default: Any = None
    help: str = ""
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    action: str | None = None  # "store_true" or "append"

    @property
    def key(self) -> str:
        return self.dest or self.name.lstrip("-").replace("-", "_")

    def fresh_default(self) -> Any:
        """The default: a new list for an appended option (argparse appends to the default object itself), False
        for a switch."""
        if self.action == "append":
            return list(self.default or ())
        if self.action == "store_true":
            return bool(self.default)
        return self.default

    def keywords(self) -> dict[str, Any]:
        """The keyword arguments of argparse's add_argument (and pytest's addoption, which takes the same)."""
        given: dict[str, Any] = {"dest": self.key, "default": self.fresh_default(), "help": self.help}
        if self.action is not None:
            given["action"] = self.action
        if self.type is not None:
            given["type"] = self.type
        if self.metavar is not None:
            given["metavar"] = self.metavar
        if self.choices is not None:
            given["choices"] = self.choices
        return given


def add_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, flags: Iterable[Flag]) -> None:
    """Render a family into an argparse parser (or one of its argument groups)."""
    for flag in flags:
        parser.add_argument(flag.name, **flag.keywords())


def add_pytest_options(group: Any, flags: Iterable[Flag]) -> None:
    """Render a family into a pytest option group (`parser.getgroup(...)`); pytest takes argparse's keywords."""
    for flag in flags:
        group.addoption(flag.name, **flag.keywords())


def values_of(parsed: Any, flags: Iterable[Flag]) -> dict[str, Any]:
    """The family's values from a parsed namespace (argparse's, or pytest's `config.option`), by destination; a flag
    the namespace lacks has its default."""
    return {flag.key: getattr(parsed, flag.key, flag.fresh_default()) for flag in flags}


def defaults(flags: Iterable[Flag]) -> dict[str, Any]:
    return {flag.key: flag.fresh_default() for flag in flags}


def with_defaults(flags: Iterable[Flag], values: Mapping[str, Any] | None) -> dict[str, Any]:
    """`values` over the family's defaults; a value of None for a flag with a default keeps the default."""
    given = dict(values or {})
    merged = defaults(flags)
    for key, value in given.items():
        if value is not None or key not in merged:
            merged[key] = value
    return merged


def option_strings(flags: Iterable[Flag]) -> set[str]:
    return {flag.name for flag in flags}
