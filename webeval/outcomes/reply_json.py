"""The JSON objects in a model's reply, wherever it wrote them: what a judge's verdict and a written rubric are read
from. A model may answer with the bare object, fence it in Markdown, or put it inside prose."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def json_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects in a reply: the whole of it, each fenced block, and the span from its first { to its last }."""
    candidates = [text, *_FENCE.findall(text)]
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{"):text.rindex("}") + 1])
    found = []
    for candidate in candidates:
        try:
            document = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(document, dict):
            found.append(document)
    return found
