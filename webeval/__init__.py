"""webeval: evaluate and train visual web agents in a real, headed Chromium.

The episode API (docs/api.md): `await webeval.run_task(task, slot, webeval.oracle, judge)` runs one task on a `Slot`
(a display, a browser and visible input that episodes use in turn) to its attempt record. The names load when first
used: `import webeval` (which pytest does for the plugin) starts no browser library.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "run_task": "webeval.agent.evaluate",
    "Slot": "webeval.runtime.slot",
    "oracle": "webeval.policy.oracle",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'webeval' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
