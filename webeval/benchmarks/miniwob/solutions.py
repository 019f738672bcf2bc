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
    """The utterance's double-quoted parts, in order (at least one)."""
    parts = re.findall(r'"([^"]*)"', utterance)
    if not parts:
        raise SolutionError(f"the utterance {utterance!r} quotes nothing")
    return parts


def matched(pattern: str, utterance: str) -> re.Match[str]:
    found = re.fullmatch(pattern, utterance)
    if found is None:
        raise SolutionError(f"the utterance {utterance!r} does not read as {pattern!r}")
    return found


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


@solves("click-checkboxes", "click-checkboxes-large", "click-option")
async def click_checkboxes(page: Page, utterance: str) -> list[OracleStep]:
    listed = matched(r"Select (.*) and click Submit\.", utterance)[1]
    names = [] if listed == "nothing" else listed.split(", ")
    return [*(click(f"#area label{text_is(name)} input") for name in names), click("#subbtn")]


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


@solves("enter-password")
async def enter_password(page: Page, utterance: str) -> list[OracleStep]:
    password = quoted(utterance)[0]
    return [type_into("#password", password), type_into("#verify", password), click("#subbtn")]


@solves("enter-text-2")
async def enter_text_2(page: Page, utterance: str) -> list[OracleStep]:
    word = quoted(utterance)[0]
    return [type_into("#tt", word.upper() if "upper case" in utterance else word.lower()), click("#subbtn")]


@solves("click-link")
async def click_link(page: Page, utterance: str) -> list[OracleStep]:
    return [click(f"#area span.alink{text_is(quoted(utterance)[0])}")]


@solves("click-test", "click-test-2")
async def click_test(page: Page, utterance: str) -> list[OracleStep]:
    return [click("#subbtn")]


@solves("click-button-sequence")
async def click_button_sequence(page: Page, utterance: str) -> list[OracleStep]:
    return [click("#subbtn"), click("#subbtn2")]


@solves("click-dialog")
async def click_dialog(page: Page, utterance: str) -> list[OracleStep]:
    return [click(".ui-dialog-titlebar-close")]


@solves("click-tab")
async def click_tab(page: Page, utterance: str) -> list[OracleStep]:
    number = matched(r"Click on Tab #(\d)\.", utterance)[1]
    return [click(f'#area ul a[href="#tabs-{number}"]')]


@solves("click-collapsible")
async def click_collapsible(page: Page, utterance: str) -> list[OracleStep]:
    return [click("#area h3"), click("#subbtn")]


@solves("click-widget")
async def click_widget(page: Page, utterance: str) -> list[OracleStep]:
    return [click(f'#area .widget [data-type="{quoted(utterance)[0]}"]')]


@solves("focus-text", "focus-text-2")
async def focus_text(page: Page, utterance: str) -> list[OracleStep]:
    nth = re.search(r"the (\d)(?:st|nd|rd|th) input", utterance)
    return [click(f"#tt{nth[1]}" if nth else "#tt")]


@solves("use-spinner")
async def use_spinner(page: Page, utterance: str) -> list[OracleStep]:
    wanted = int(matched(r"Select (-?\d+) with the spinner and hit Submit\.", utterance)[1])
    arrow = ".ui-spinner-up" if wanted > 0 else ".ui-spinner-down"
    return [*(click(arrow) for _ in range(abs(wanted))), click("#subbtn")]


@solves("simple-arithmetic")
async def simple_arithmetic(page: Page, utterance: str) -> list[OracleStep]:
    problem = matched(r"(\d) ([-+x]) (\d) =", (await page.inner_text("#math-problem")).strip())
    first, operator, second = int(problem[1]), problem[2], int(problem[3])
    result = first + second if operator == "+" else first - second if operator == "-" else first * second
    return [type_into("#math-answer", str(result)), click("#subbtn")]


@solves("find-word")
async def find_word(page: Page, utterance: str) -> list[OracleStep]:
    position = int(matched(r"Find the (\d+)(?:st|nd|rd|th) word in the paragraph.*", utterance)[1])
    words = [re.sub(r"[^a-zA-Z]", "", word) for word in (await page.inner_text("#area p")).split()]
    return [type_into("#answer-input", words[position - 1]), click("#subbtn")]


@solves("choose-list")
async def choose_list(page: Page, utterance: str) -> list[OracleStep]:
    item = matched(r"Select (.*) from the list and click Submit\.", utterance)[1]
    return [click("#options"), OracleStep(do="type", text=item), key("enter"), click("#area button")]


# Chromium's date and time fields (en-US): a click lands on a later part; the arrow keys go back to the first.
@solves("enter-date")
async def enter_date(page: Page, utterance: str) -> list[OracleStep]:
    month, day, year = matched(r"Enter (\d\d)/(\d\d)/(\d{4}) as the date and hit submit\.", utterance).groups()
    return [click("#tt"), key("left"), key("left"), OracleStep(do="type", text=month + day + year), click("#subbtn")]


# The link's tab (marked 0), then the link (marked 1). Where no tab holds the link, the medium variant's rule is
# to click its second tab (marked 0 alone).
MARK_TAB_LINK = """(text) => {
  const link = [...document.querySelectorAll('#area span.alink')].find(span => span.textContent === text);
  if (!link) {
    const second = document.querySelectorAll('#area .ui-tab')[1];
    if (second) second.dataset.oracle = '0';
    return second ? 1 : 0;
  }
  const panel = link.closest('[id^="tabs-"]');
  document.querySelector(`#area ul a[href="#${panel.id}"]`).dataset.oracle = '0';
  link.dataset.oracle = '1';
  return 2;
}"""


@solves("click-tab-2", "click-tab-2-easy", "click-tab-2-medium", "click-tab-2-hard")
async def click_tab_2(page: Page, utterance: str) -> list[OracleStep]:
    count = await mark(page, MARK_TAB_LINK, quoted(utterance)[0])
    return [click(marked(index)) for index in range(count)]


# The shallowest item of that name, and the folders above it from the top: marked 0, 1, ... in the order to click.
MARK_TREE_PATH = """(name) => {
  const depth = span => { let d = 0; for (let n = span; n; n = n.parentElement) d += n.tagName === 'UL'; return d; };
  const spans = [...document.querySelectorAll('#tree span')].filter(span => span.textContent === name);
  if (!spans.length) return 0;
  const target = spans.sort((a, b) => depth(a) - depth(b))[0];
  const path = [];
  for (let item = target.parentElement.parentElement.closest('li'); item; item = item.parentElement.closest('li'))
    path.unshift(item.querySelector(':scope > span'));
  path.push(target);
  path.forEach((span, index) => { span.dataset.oracle = String(index); });
  return path.length;
}"""


@solves("navigate-tree")
async def navigate_tree(page: Page, utterance: str) -> list[OracleStep]:
    count = await mark(page, MARK_TREE_PATH, quoted(utterance)[0])
    return [click(marked(index)) for index in range(count)]


# The first country the autocomplete would offer that starts and ends as asked (the page's own list).
FIRST_FIT = "([start, end]) => ui_utils.COUNTRIES.find(item => item.startsWith(start) && item.endsWith(end)) || null"


@solves("use-autocomplete", "use-autocomplete-nodelay")
async def use_autocomplete(page: Page, utterance: str) -> list[OracleStep]:
    start, *end = quoted(utterance)
    item = await page.evaluate(FIRST_FIT, [start, end[0] if end else ""])
    if item is None:
        raise SolutionError(f"no country starts with {start!r} and ends with {end!r}")
    return [type_into("#tags", start), click(f".ui-autocomplete {text_is(item)}"), click("#subbtn")]


@solves("enter-time")
async def enter_time(page: Page, utterance: str) -> list[OracleStep]:
    hour, minute, half = matched(r"Enter (\d+):(\d\d) ([AP])M as the time and press submit\.", utterance).groups()
    typed = f"{int(hour):02d}{minute}{half}"
    return [click("#tt"), key("left"), key("left"), OracleStep(do="type", text=typed), click("#subbtn")]
