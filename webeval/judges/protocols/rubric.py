"""The `rubric` protocol: WebGym's rubric judge, in our own words.

A rubric task lists fact groups (`Task.rubric`: a list of groups, each a list of facts). The judge sees the task,
the agent's answer, the URLs it visited, its action history and a few screenshots chosen by relevance to the facts
(each scored 1-5 in a call of its own, those at 3 or more kept, best first, at most `keep`; the last screenshot is
always kept). It says for every fact whether it holds; a group holds when all its facts do, and the task succeeds
only when every group holds. A page that is a bot wall or a CAPTCHA is not the agent's failure: the judge says so
and the attempt is `infra[site_blocked]`.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from pathlib import Path
from typing import Any

from webeval.judges.protocols.chat import ChatJudge, image_part
from webeval.judges.protocols.webjudge import action_history, score
from webeval.models import Endpoint, Reading, Unreadable
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import InfraError, JudgeError
from webeval.outcomes.reply_json import json_objects
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

KEEP = 4
THRESHOLD = 3
_BLOCKED = re.compile(r"captcha|are you a robot|verify you are human|access denied|just a moment", re.IGNORECASE)

RELEVANCE_PROMPT = """\
You help judge a web agent. Given the facts a task must establish and one screenshot from the agent's run, rate \
how much the screenshot shows evidence about those facts, from 1 (nothing) to 5 (it shows one of them plainly). \
Reply with one line of reasoning, then a line "Score: <1-5>"."""

RUBRIC_PROMPT = """\
You judge whether a web agent established the facts a task requires. You get the task, the agent's final answer, \
the URLs it visited, its actions, and screenshots from its run (the last one is the final page). The screenshots \
are genuine; the answer was written by the agent and may be wrong. A fact holds only when the screenshots or the \
visited pages support it and the answer states it where the task asks for it. Do not demand more than a fact says.

If the pages are a bot wall, a CAPTCHA or an access-denied page, so that the agent could not have done the task, \
say so with "blocked": true.

Reply with exactly one JSON object:
{"facts": {"<fact id>": {"holds": true or false, "why": "<short reason>"}, ...}, "blocked": false}"""

PROMPT_VERSION = "rubric#" + hashlib.sha256((RELEVANCE_PROMPT + RUBRIC_PROMPT).encode()).hexdigest()[:12]


def fact_ids(rubric: list[list[str]]) -> dict[str, str]:
    """'<group>.<fact>' (from 1) -> the fact."""
    return {f"{g}.{f}": fact for g, group in enumerate(rubric, 1) for f, fact in enumerate(group, 1)}


def read_facts(content: str, wanted: dict[str, str]) -> tuple[dict[str, dict[str, Any]], bool]:
    """({fact id: {"holds", "why"}}, blocked) from a reply; Unreadable when it does not rule on every fact."""
    for document in json_objects(content):
        facts = document.get("facts")
        if not isinstance(facts, dict):
            continue
        ruled = {}
        for key in wanted:
            entry = facts.get(key)
            holds = entry.get("holds") if isinstance(entry, dict) else entry
            if not isinstance(holds, bool):
                break
            ruled[key] = {"fact": wanted[key], "holds": holds,
                          "why": str(entry.get("why", "")) if isinstance(entry, dict) else ""}
        else:
            return ruled, document.get("blocked") is True
    raise Unreadable(f"no ruling on every fact ({', '.join(wanted)})")


class RubricJudge(ChatJudge):
    name = "rubric"
    prompt_version = PROMPT_VERSION

    def __init__(self, endpoint: Endpoint, last_screenshots: int | None = None, reasks: int = 2,
                 keep: int = KEEP) -> None:
        super().__init__(endpoint, last_screenshots, reasks)
        self.keep = keep

    async def judge(self, task: Task, evidence: Evidence) -> Verdict:
        if not task.rubric:
            raise JudgeError(f"task {task.id} has no rubric: the rubric protocol judges rubric tasks only",
                             kind="config")
        if evidence.titles and _BLOCKED.search(evidence.titles[-1]):
            raise InfraError("site_blocked", f"the last page is {evidence.titles[-1]!r}")
        wanted = fact_ids(task.rubric)
        shots, scores = await self._chosen(evidence, wanted)
        read = await self._rule(task, evidence, wanted, shots)
        ruled, blocked = read.value
        if blocked:
            raise InfraError("site_blocked", "the judge saw a bot wall or CAPTCHA page")
        groups = [all(ruled[f"{g}.{f}"]["holds"] for f in range(1, len(group) + 1))
                  for g, group in enumerate(task.rubric, 1)]
        missed = [key for key, entry in ruled.items() if not entry["holds"]]
        reason = ("every fact group holds" if all(groups) else
                  "; ".join(f"{key} does not hold ({ruled[key]['fact']}): {ruled[key]['why']}" for key in missed))
        return self.verdict(all(groups), reason, read.content,
                            {"facts": ruled, "groups": groups, "screenshots": [p.name for p in shots],
                             "relevance": scores, "asked": read.asked})

    async def _chosen(self, evidence: Evidence, wanted: dict[str, str]) -> tuple[list[Path], dict[str, int]]:
        """The screenshots shown: the most relevant (at the threshold or more, at most `keep`), and the last."""
        shots = evidence.screenshot_paths(self.last)
        if len(shots) <= self.keep:
            return shots, {}
        facts = "\n".join(f"{key}: {fact}" for key, fact in wanted.items())
        asks = [{"model": self.endpoint.model, "temperature": 0, "messages": [
            {"role": "system", "content": RELEVANCE_PROMPT},
            {"role": "user", "content": [{"type": "text", "text": f"Facts:\n{facts}"}, image_part(path)]}]}
            for path in shots[:-1]]
        replies = await asyncio.gather(*(self.ask(ask) for ask in asks))
        scores = {path.name: score(reply or "")[0] for path, reply in zip(shots, replies)}
        ranked = sorted((p for p in shots[:-1] if scores[p.name] >= THRESHOLD), key=lambda p: -scores[p.name])
        chosen = set(ranked[:self.keep - 1])
        return [p for p in shots[:-1] if p in chosen] + [shots[-1]], scores

    async def _rule(self, task: Task, evidence: Evidence, wanted: dict[str, str],
                    shots: list[Path]) -> Reading[tuple[dict[str, dict[str, Any]], bool]]:
        said = evidence.answer if evidence.answer is not None else "(the agent gave no answer)"
        text = (f"Task: {evidence.goal or task.goal}\n\nFinal answer of the agent: {said}\n\nFacts:\n"
                + "\n".join(f"{key}: {fact}" for key, fact in wanted.items())
                + "\n\nVisited URLs:\n" + "\n".join(dict.fromkeys(evidence.urls))
                + "\n\nActions:\n" + "\n".join(f"{i + 1}. {line}" for i, line in enumerate(action_history(evidence)))
                + f"\n\n{len(shots)} screenshots follow, oldest first.")
        request: dict[str, Any] = {"model": self.endpoint.model, "temperature": 0, "messages": [
            {"role": "system", "content": RUBRIC_PROMPT},
            {"role": "user", "content": [{"type": "text", "text": text}, *(image_part(p) for p in shots)]}]}
        return await self.ask_until_read(request, lambda content: read_facts(content, wanted), _again)


def _again(why: str) -> str:
    return ('Your reply did not rule on every fact. Reply again with exactly one JSON object: {"facts": '
            '{"<fact id>": {"holds": true|false, "why": "..."}}, "blocked": false}, with every fact id listed.')
