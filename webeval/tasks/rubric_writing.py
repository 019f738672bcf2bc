"""Rubrics written by a model, as WebGym makes its tasks: the prompt, the reply it expects, and the checks.

A seed is a goal and a start URL (optionally an id, a site and a domain). The model names the website and its domain
(the kind of site) and writes the rubric as fact groups: one group per fact the task asks for, in the order the goal
asks them, each group the criteria that check that fact. A reply is used only when it is one JSON object with a site,
a domain and at least one group, no group empty and no criterion blank; otherwise it is asked again, and a seed whose
replies never pass is reported with the reason, never written. No network here: webeval.judges.rubric_generation
asks the model.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from pydantic import Field, ValidationError

from webeval.outcomes.reply_json import json_objects
from webeval.tasks.model import SAFE_ID, Frozen, Task
from webeval.tasks.population import TaskFileError, describe_error

WRITER_PROMPT = """\
You write the rubric of a task for a web agent: what a judge must find established, from the agent's screenshots \
and final answer, for the task to count as done.

Group the criteria by the fact they check: one group for each fact the task asks for, in the order the task asks \
for them, and in each group the criteria that together establish that fact. A criterion is one short statement a \
judge can check; it never repeats the whole task, and it asks for nothing the task does not ask for.

Also name the website the task is on (its usual short name, such as "Allrecipes" or "BBC News") and its domain, \
one or two words for the kind of site (such as "travel", "shopping", "news", "reference", "government").

Reply with exactly one JSON object and nothing else:
{"site": "<website>", "domain": "<kind of site>", "fact_groups": [["<criterion>", ...], ...]}"""

PROMPT_VERSION = "rubric-writer#" + hashlib.sha256(WRITER_PROMPT.encode()).hexdigest()[:12]
GENERATED_TAG = "generated"
_NOT_ID = re.compile(r"[^A-Za-z0-9_.\-]+")


class Seed(Frozen):
    """One line of a seeds file."""

    goal: str = Field(min_length=1)
    start_url: str
    id: str | None = None
    site: str | None = Field(default=None, min_length=1)
    domain: str | None = Field(default=None, min_length=1)


class Unwritable(ValueError):
    """A reply that gives no usable rubric; the message says why, for the re-ask and for the report."""


def read_seeds(path, rows) -> list[tuple[int, Seed]]:
    """(line, seed) of every row, or a TaskFileError naming the file and line of the first bad one (a duplicate id
    names both lines)."""
    seeds, seen = [], {}
    for line, row in rows:
        try:
            seed = Seed.model_validate(row)
            Task.model_validate({"id": seed.id or "seed", "site": "seed", "goal": seed.goal,
                                 "start_url": seed.start_url})  # the checks a written task will meet
        except ValidationError as exc:
            raise TaskFileError(f"{path}:{line}: {describe_error(exc)}") from None
        if seed.id is not None:
            if seed.id in seen:
                raise TaskFileError(f"{path}:{line}: duplicate task id {seed.id!r} (first on line {seen[seed.id]})")
            seen[seed.id] = line
        seeds.append((line, seed))
    if not seeds:
        raise TaskFileError(f"{path}: no seeds in it")
    return seeds


def messages(seed: Seed) -> list[dict[str, Any]]:
    known = (f"\nThe website is {seed.site}." if seed.site else "") + (
        f"\nIts domain is {seed.domain}." if seed.domain else "")
    return [{"role": "system", "content": WRITER_PROMPT},
            {"role": "user", "content": f"Task: {seed.goal}\nStart URL: {seed.start_url}{known}"}]


def reask_text(why: str) -> str:
    """The follow-up after an unusable reply."""
    return (f"Your reply could not be used ({why}). Reply again with exactly one JSON object: "
            '{"site": "...", "domain": "...", "fact_groups": [["...", ...], ...]}.')


def _text(document: dict[str, Any], key: str) -> str:
    value = document.get(key)
    if not isinstance(value, str) or not value.strip():
        raise Unwritable(f"invalid rubric: {key!r} is not a name")
    return " ".join(value.split())


def read_reply(content: str | None) -> tuple[str, str, list[list[str]]]:
    """(site, domain, fact groups) from a reply, or Unwritable saying why not."""
    documents = [d for d in json_objects(content or "") if "fact_groups" in d]
    if not documents:
        raise Unwritable("unreadable reply: no JSON object with fact_groups in it")
    document = documents[0]
    groups = document["fact_groups"]
    if not isinstance(groups, list) or not groups:
        raise Unwritable("invalid rubric: fact_groups is not a list of at least one group")
    for g, group in enumerate(groups, 1):
        if not isinstance(group, list) or not group:
            raise Unwritable(f"invalid rubric: fact group {g} is not a list of at least one criterion")
        for c, criterion in enumerate(group, 1):
            if not isinstance(criterion, str) or not criterion.strip():
                raise Unwritable(f"invalid rubric: criterion {c} of fact group {g} is empty")
    return _text(document, "site"), _text(document, "domain"), [[" ".join(c.split()) for c in g] for g in groups]


def task_id(seed: Seed, site: str, line: int) -> str:
    """The seed's own id, or `<site>--<seeds file line>` (unique within the file)."""
    if seed.id is not None:
        return seed.id
    name = _NOT_ID.sub("-", site).strip("-.") or "site"
    candidate = f"{name}--{line}"
    return candidate if SAFE_ID.fullmatch(candidate) else f"site--{line}"


def written_task(seed: Seed, line: int, reply: str | None, model: str) -> Task:
    """The task a reply writes for a seed (the seed's own site and domain win), or Unwritable."""
    site, domain, groups = read_reply(reply)
    site, domain = seed.site or site, seed.domain or domain
    try:
        return Task(id=task_id(seed, site, line), site=site, domain=domain, goal=seed.goal, start_url=seed.start_url,
                    rubric=groups, tags=[GENERATED_TAG, f"rubric-by:{model}"])
    except ValidationError as exc:
        raise Unwritable(f"invalid rubric: {describe_error(exc)}") from None
