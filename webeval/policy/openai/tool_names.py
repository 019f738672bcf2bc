"""The names a model knows the contract's tools by, where they are not ours (NeMo Gym's WebVoyager agent calls
`tab` what the contract calls `tabs`).

Only the names change: the arguments are the contract's and are validated as strictly. A call is read by the
model's names only: a contract name the model was not given (`tabs` when it was given `tab`) is an unknown tool,
as any other stray name is, and every error the model reads back names its tools as it was given them.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from webeval.actions import TOOL_NAMES, ActionError, parse_call
from webeval.policy.base import ToolCall

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


def check_tool_names(names: Mapping[str, str]) -> str | None:
    """Why a mapping {contract name: the model's name} cannot be used, or None."""
    for contract, shown in names.items():
        if contract not in TOOL_NAMES:
            return f"tool_names: {contract!r} is not a tool of the contract ({', '.join(TOOL_NAMES)})"
        if not isinstance(shown, str) or not _NAME.match(shown):
            return f"tool_names.{contract}: {shown!r} is not a function name (letters, digits, _ and -)"
    shown_all = [names.get(tool, tool) for tool in TOOL_NAMES]
    clash = sorted({name for name in shown_all if shown_all.count(name) > 1})
    if clash:
        return f"tool_names: two tools would both be called {clash[0]!r}"
    return None


def parse_tool_names(text: str, option: str = "--policy-tool-names") -> dict[str, str]:
    """`tabs=tab,terminate=done` as {contract name: the model's name}; a ValueError says what is wrong."""
    found: dict[str, str] = {}
    for pair in (part.strip() for part in text.split(",")):
        contract, sep, shown = pair.partition("=")
        if not sep or not contract.strip() or not shown.strip():
            raise ValueError(f"{option} {text!r}: expected CONTRACT=NAME pairs, e.g. tabs=tab")
        found[contract.strip()] = shown.strip()
    problem = check_tool_names(found)
    if problem:
        raise ValueError(f"{option}: {problem.removeprefix('tool_names: ')}")
    return found


class ToolNames:
    """A mapping in use: the contract's tools renamed for the model, and the model's calls named back."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.shown = {tool: names.get(tool, tool) for tool in TOOL_NAMES}
        self.contract = {shown: tool for tool, shown in self.shown.items()}

    @property
    def renames(self) -> bool:
        return any(tool != shown for tool, shown in self.shown.items())

    def listed(self) -> str:
        return ", ".join(self.shown.values())

    def rename_schemas(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for tool in tools:
            function = tool["function"]
            function["name"] = self.shown.get(function["name"], function["name"])
        return tools

    def to_contract(self, calls: list[ToolCall]) -> list[ToolCall] | str:
        """The calls under the contract's names, or the error the model reads (an unknown name, no call at all)."""
        if not calls:
            return f"no tool call in the reply: call one of {self.listed()}"
        named = []
        for call in calls:
            if call.name not in self.contract:
                return f"unknown tool {call.name!r}: call one of {self.listed()}"
            named.append(ToolCall(self.contract[call.name], call.arguments))
        return named

    def first_error(self, calls: list[ToolCall], screen: tuple[int, int]) -> str | None:
        """The contract's error for a renamed tool's call, told under the model's name for it."""
        for call in calls:
            shown = self.shown[call.name]
            if shown == call.name:
                continue
            try:
                parse_call(call.name, call.arguments, screen)
            except ActionError as exc:
                said = str(exc).removeprefix(call.name)
                return shown + said.replace(f"{call.name} action", f"{shown} action")
        return None
