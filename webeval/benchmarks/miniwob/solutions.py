"""Oracle solutions of MiniWoB++ tasks: from the page's utterance (and, where the utterance is not enough, the page's
own elements) to steps that the oracle acts out through the same visible input a model uses.

A solver sees the page once, right after the episode started; its steps name elements by selector, resolved to
screen coordinates when they are acted. Where no plain selector singles an element out, the solver marks it with a
`data-oracle` attribute (invisible: nothing a model would see changes).
"""

from __future__ import annotations

import json
import re
from typing import Awaitable, Callable

from playwright.async_api import Page

from webeval.tasks import OracleStep

Solver = Callable[[Page, str], Awaitable[list[OracleStep]]]
SOLVERS: dict[str, Solver] = {}


class SolutionError(RuntimeError):
    """The page is not what the solver expects (the package changed?): a bug to fix, never a model's failure."""


def solves(*names: str) -> Callable[[Solver], Solver]:
    def register(solver: Solver) -> Solver:
        for name in names:
            SOLVERS[name] = solver
        return solver

    return register


def click(selector: str) -> OracleStep:
    return OracleStep(do="click", selector=selector)


def type_into(selector: str, text: str) -> OracleStep:
    return OracleStep(do="type", selector=selector, text=text)


def key(*keys: str) -> OracleStep:
    return OracleStep(do="key", keys=list(keys))


def text_is(text: str) -> str:
    """Playwright's exact-text pseudo-class, quoted."""
    return f":text-is({json.dumps(text)})"


def quoted(utterance: str) -> list[str]:
    """The utterance's double-quoted parts, in order."""
    return re.findall(r'"([^"]*)"', utterance)


def marked(index: int) -> str:
    return f'[data-oracle="{index}"]'


async def mark(page: Page, script: str, argument: object = None) -> int:
    """Run `script` (it sets data-oracle="0", "1", ... on the elements to act on, and returns how many it marked)."""
    count = await page.evaluate(script, argument)
    if not isinstance(count, int) or count < 1:
        raise SolutionError(f"{page.url}: nothing on the page fits the solution ({count!r})")
    return count


@solves("click-button")
async def click_button(page: Page, utterance: str) -> list[OracleStep]:
    return [click(f"#area button{text_is(quoted(utterance)[0])}")]


@solves("click-checkboxes")
async def click_checkboxes(page: Page, utterance: str) -> list[OracleStep]:
    listed = re.fullmatch(r"Select (.*) and click Submit\.", utterance)
    if listed is None:
        raise SolutionError(f"unexpected utterance {utterance!r}")
    names = [] if listed[1] == "nothing" else listed[1].split(", ")
    return [*(click(f"#boxes label{text_is(name)} input") for name in names), click("#subbtn")]


@solves("enter-text")
async def enter_text(page: Page, utterance: str) -> list[OracleStep]:
    return [type_into("#tt", quoted(utterance)[0]), click("#subbtn")]


@solves("login-user")
async def login_user(page: Page, utterance: str) -> list[OracleStep]:
    user, password = quoted(utterance)
    return [type_into("#username", user), type_into("#password", password), click("#subbtn")]


@solves("drag-box")
async def drag_box(page: Page, utterance: str) -> list[OracleStep]:
    return [OracleStep(do="drag", selector="#draggableSmall", to="#draggableLarge"), click("#subbtn")]
