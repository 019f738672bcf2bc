"""Presets: a named set of option values that puts a run on another system's terms, so that its score can be set
beside that system's reported ones.

`nemo` is NeMo Gym's WebVoyager run (its reported 300/552 for Qwen3.5-122B-A10B and 415/552, 420/552 for Nano Omni):
its maintained 552-task population, a 1920x1080 screen, its tool names (`computer`, `navigate`, `tab`, `terminate`:
the contract's `tabs` is its `tab`) and its convention for a judge reply with no readable verdict (the task fails).
An option given explicitly with another value contradicts the preset: that is an error of one line, never a silent
override in either direction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from webeval.flags import OptionError

# Each option a preset sets, by its value's key, as the user writes it.
_OPTIONS = {"population": "--population", "screen": "--screen", "judge_unparseable": "--judge-unparseable",
            "policy_tool_names": "--policy-tool-names"}


@dataclass(frozen=True)
class Preset:
    name: str
    title: str  # whose run it reproduces
    population: str
    screen: str
    judge_unparseable: str
    policy_tool_names: str  # as --policy-tool-names takes them

    def options(self) -> dict[str, str]:
        return {key: getattr(self, key) for key in _OPTIONS}

    def tools(self) -> str:
        names = dict(pair.split("=", 1) for pair in self.policy_tool_names.split(","))
        return ", ".join(names.get(tool, tool) for tool in ("computer", "navigate", "tabs", "terminate"))

    def terms(self) -> str:
        """The preset as the session header and the summary say it."""
        verdict = "fails" if self.judge_unparseable == "fail" else "is masked"
        return (f"{self.name}: {self.title}, on the seed's terms: population {self.population}, screen {self.screen}, "
                f"tools {self.tools()}, a judge reply with no readable verdict {verdict}")


PRESETS = {
    "nemo": Preset("nemo", "NeMo Gym's WebVoyager run", population="nemo-552", screen="1920x1080",
                   judge_unparseable="fail", policy_tool_names="tabs=tab"),
}


def preset_named(name: str | None) -> Preset | None:
    if name is None:
        return None
    if name not in PRESETS:
        raise OptionError(f"--preset {name!r} is unknown: use one of {', '.join(PRESETS)}")
    return PRESETS[name]


def preset_values(name: str | None, given: Mapping[str, Any]) -> dict[str, str]:
    """The option values a preset sets (none without one). `given` holds the values given explicitly (None: not
    given); one that contradicts the preset, or a task file of one's own, is an OptionError naming each."""
    preset = preset_named(name)
    if preset is None:
        return {}
    wanted = preset.options()
    clashes = [f"{_OPTIONS[key]} {given[key]}" for key, value in wanted.items()
               if given.get(key) is not None and given[key] != value]
    if given.get("tasks_file"):
        clashes.append(f"--tasks-file {given['tasks_file']}")
    if clashes:
        sets = ", ".join(f"{_OPTIONS[key]} {value}" for key, value in wanted.items())
        raise OptionError(f"--preset {preset.name} sets {sets}: drop {', '.join(clashes)}, or leave out --preset")
    return wanted
