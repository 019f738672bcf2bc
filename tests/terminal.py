"""A command run in a pseudo-terminal, and the screen its output leaves: what a person at a terminal would see.

The screen understands what pytest and webeval's live line write: text, carriage return, line feed, erase to the end
of the line (ESC [ K), cursor up (ESC [ n A), cursor to a column (ESC [ n G); colours and other control sequences
are dropped. Lines longer than the width wrap, as on a terminal.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import time
from pathlib import Path

_CONTROL = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b.|[\r\n\b]")


class Screen:
    def __init__(self, width: int) -> None:
        self.width = width
        self.rows: list[list[str]] = [[]]
        self.row = self.col = 0

    def _put(self, char: str) -> None:
        if self.col >= self.width:
            self._feed()
            self.col = 0
        line = self.rows[self.row]
        line.extend(" " * (self.col + 1 - len(line)))
        line[self.col] = char
        self.col += 1

    def _feed(self) -> None:
        self.row += 1
        while len(self.rows) <= self.row:
            self.rows.append([])

    def _control(self, match: re.Match[str]) -> None:
        text, final = match[0], match[2]
        if text == "\r":
            self.col = 0
        elif text == "\n":
            self._feed()
        elif text == "\b":
            self.col = max(0, self.col - 1)
        elif final == "K":
            del self.rows[self.row][self.col:]
        elif final == "A":
            self.row = max(0, self.row - int(match[1] or 1))
        elif final == "G":
            self.col = int(match[1] or 1) - 1

    def feed(self, text: str) -> "Screen":
        position = 0
        for match in _CONTROL.finditer(text):
            for char in text[position:match.start()]:
                self._put(char)
            self._control(match)
            position = match.end()
        for char in text[position:]:
            self._put(char)
        return self

    def lines(self) -> list[str]:
        return ["".join(row).rstrip() for row in self.rows]


def run_in_pty(command: list[str], cwd: Path, env: dict[str, str], width: int = 120,
               timeout: float = 300) -> tuple[int, str]:
    """(exit status, everything written to the terminal) of a command whose stdout and stderr are a terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    proc = subprocess.Popen(command, cwd=cwd, env={**env, "TERM": "xterm", "COLUMNS": str(width)},
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    return proc.wait(timeout=max(1.0, deadline - time.monotonic())), b"".join(chunks).decode(errors="replace")
