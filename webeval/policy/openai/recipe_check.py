"""A profile's recipe lock against what its server reports (webeval.models.served): each pin matches, differs, is
not pinned (the served value is shown, to pin), or cannot be checked from outside the server, one line each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from webeval.models.served import ServedFacts
from webeval.policy.openai.profile import RecipeLock

State = Literal["ok", "differs", "unpinned", "unchecked"]
# Files the server loads but does not serve: only their pins are recorded.
NOT_SERVED = {
    "tokenizer": "the server does not serve its tokenizer files (the tokenizer at work is the probe's to check)",
    "chat_template": "the server does not serve its chat template",
    "processor": "the server does not serve its image processor's configuration",
    "reasoning_parser": "the server does not serve its reasoning parser's file",
    "tool_call_parser": "the server does not serve its tool-call parser's file (a built-in one comes with the vLLM "
                        "version)",
}
REPORTED = ("served_root", "max_model_len", "vllm_version", "tokenizer_probe")


@dataclass(frozen=True)
class Finding:
    name: str
    state: State
    line: str


def _label(name: str) -> str:
    return name.replace("_", " ")


def _reported(lock: RecipeLock, facts: ServedFacts, name: str) -> Finding:
    served = {"served_root": facts.root, "max_model_len": facts.max_model_len, "vllm_version": facts.version,
              "tokenizer_probe": facts.tokenizer_probe}[name]
    pinned = getattr(lock, name)
    if served is None:
        why = facts.unread.get(name, f"the server does not list model {facts.model!r}")
        return Finding(name, "unchecked", f"{_label(name)}: cannot be checked: {why}")
    if pinned is None:
        return Finding(name, "unpinned", f"{_label(name)}: not pinned; the server reports {served}")
    if str(pinned) == str(served):
        return Finding(name, "ok", f"{_label(name)}: ok ({served})")
    return Finding(name, "differs", f"{_label(name)}: DIFFERS: pinned {pinned}, the server reports {served}")


def _file(lock: RecipeLock, name: str) -> Finding:
    pinned = getattr(lock, name)
    held = f"pinned sha256 {pinned[:12]}, recorded by each run" if pinned else "not pinned"
    return Finding(name, "unchecked", f"{_label(name)}: cannot be checked: {NOT_SERVED[name]} ({held})")


def check_recipe(lock: RecipeLock | None, facts: ServedFacts) -> list[Finding]:
    """One finding per pin the lock can hold: what the server reports first, then the files it does not serve."""
    lock = lock or RecipeLock()
    return [*(_reported(lock, facts, name) for name in REPORTED), *(_file(lock, name) for name in RecipeLock.FILES)]
