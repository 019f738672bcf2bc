"""What happened in the browser between two observations (dialogs, new tabs, downloads, refusals), as the agent reads
it: a page that raises a dialog five times a second must not grow the next observation's text without bound."""

from __future__ import annotations

SHOWN_PER_KIND = 3  # the first few of a kind word for word, the rest counted
TEXT_CHARS = 300  # a dialog's message is the page's to choose: cut it


class Events:
    def __init__(self) -> None:
        self._shown: dict[str, dict[str, int]] = {}  # kind -> text -> times, in the order they came
        self._more: dict[str, int] = {}  # kind -> how many more, beyond those shown

    def add(self, text: str, kind: str | None = None) -> None:
        """One event; `kind` groups those that are counted together ("dialogs", "tabs"), by default the text."""
        if len(text) > TEXT_CHARS:
            text = text[:TEXT_CHARS] + "..."
        kind = kind or text
        shown = self._shown.setdefault(kind, {})
        if text in shown:
            shown[text] += 1
        elif len(shown) < SHOWN_PER_KIND:
            shown[text] = 1
        else:
            self._more[kind] = self._more.get(kind, 0) + 1

    def take(self) -> list[str]:
        """The events since the last take, repeats counted, then forgotten."""
        lines = []
        for kind, shown in self._shown.items():
            lines += [text if times == 1 else f"{text} ({times} times)" for text, times in shown.items()]
            if self._more.get(kind):
                lines.append(f"and {self._more[kind]} more {kind}")
        self.clear()
        return lines

    def clear(self) -> None:
        self._shown.clear()
        self._more.clear()
