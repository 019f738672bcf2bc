"""What a Chromium that failed to start said: Playwright's launch error carries the browser's log, whose last
lines name the cause (a FATAL "Too many open files", a missing library, a full disk) where its first line does not."""

from __future__ import annotations

import re

from webeval.outcomes.redact import redact

_ERR = re.compile(r"^\s*(?:- )?\[pid=\d+\]\[err\] (.*)$")
_EXIT = re.compile(r"<process did exit: (exitCode=[^,>]*, signal=[^>]*)>")
# Chromium's own prefix: [pid:tid:MMDD/HHMMSS.micros:LEVEL:path/file.cc:line]
_PREFIX = re.compile(r"^\[[\d:/.]*:(?P<level>[A-Z]+):(?P<where>[^\]]*)\]\s*")
_NOISE = ("dbus/", "Fontconfig", "crashpad/", "cpufreq", "unexpected operator")
# A line that gives a cause in the system's words: "Too many open files (24)", "No space left on device".
_CAUSE = re.compile(r"\(\d+\)$|Too many open files|FD exhaustion|No space left|Permission denied|"
                    r"cannot open shared object|Socket path too long|Out of memory", re.I)
KEPT_LINES = 3


def _tidy(line: str) -> str:
    match = _PREFIX.match(line)
    return f"{match['level']} {match['where'].rsplit('/', 1)[-1]}: {line[match.end():]}" if match else line


def launch_failure(message: str, kept: int = KEPT_LINES) -> str:
    """One line: the launch error's first line, then the browser's last telling log lines (its FATAL ones, else those
    that give a cause in the system's words, else its last; the noise of a machine without D-Bus left out) and how
    the process exited; secrets masked."""
    lines = message.splitlines()
    head = (lines[0] if lines else "no error message").removeprefix("BrowserType.launch: ")
    raw = [m[1].strip() for line in lines if (m := _ERR.match(line)) and m[1].strip()]
    telling = list(dict.fromkeys(_tidy(line) for line in raw if not any(noise in line for noise in _NOISE)))
    fatal = [line for line in telling if line.startswith("FATAL ")]
    causes = [line for line in telling if _CAUSE.search(line)]
    chosen = (fatal or causes or telling)[-kept:]
    exited = _EXIT.search(message)
    tail = "; its log: " + " | ".join(chosen) if chosen else ""
    return redact(f"{head}{tail}" + (f"; it exited ({exited[1]})" if exited else ""))
