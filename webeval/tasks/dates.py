"""Date templates of time-relative tasks: a question with `{slot}`s, a date policy and a format per slot.

The format is the maintained WebVoyager population's (`webvoyager.template.jsonl`). Its generator spreads the
templated tasks over 30 start dates three days apart, in file order, so that not every hotel search asks about the
same night; we do the same, so rendering against the file's own `date_used` reproduces its questions exactly.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any, Callable

SPREAD_SLOTS = 30  # distinct start dates the templated tasks of one file are spread over
SPREAD_DAYS = 3  # days between two neighbouring start dates

POLICIES = ("hotel_stay", "same_day_flight", "one_way_flight", "round_trip_flight")
_SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ABBR = ("Jan.", "Feb.", "Mar.", "Apr.", "May", "Jun.", "Jul.", "Aug.", "Sep.", "Oct.", "Nov.", "Dec.")


def _month(d: date) -> str:
    return d.strftime("%B")


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _md(d: date) -> str:
    return f"{_month(d)} {d.day}"


def _mdy(d: date) -> str:
    return f"{_month(d)} {d.day}, {d.year}"


def _mdo(d: date) -> str:
    return f"{_month(d)} {ordinal(d.day)}"


def _mdoy(d: date) -> str:
    return f"{_month(d)} {ordinal(d.day)}, {d.year}"


def _dmy(d: date) -> str:
    return f"{d.day} {_month(d)} {d.year}"


SINGLE: dict[str, Callable[[date], str]] = {
    "month_day": _md,
    "month_day_year": _mdy,
    "month_day_ordinal": _mdo,
    "month_day_ordinal_year": _mdoy,
    "day_month_year": _dmy,
    "abbr_month_day": lambda d: f"{_ABBR[d.month - 1]} {d.day}",
}


def _month_day_range(a: date, b: date) -> str:
    return f"{_md(a)}-{b.day}" if a.month == b.month else f"{_md(a)}-{_md(b)}"


def _month_day_range_year(a: date, b: date) -> str:
    if a.year != b.year:
        return f"{_mdy(a)}-{_mdy(b)}"
    return f"{_month_day_range(a, b)}, {a.year}"


def _month_day_to_day(a: date, b: date) -> str:
    return f"{_md(a)} to {b.day}" if a.month == b.month else f"{_md(a)} to {_md(b)}"


def _month_day_to_day_year(a: date, b: date) -> str:
    if a.month == b.month and a.year == b.year:
        return f"{_md(a)} to {b.day}, {a.year}"
    return f"{_mdy(a)} to {_mdy(b)}"


def _day_month_range_year(a: date, b: date) -> str:
    if a.year != b.year:
        return f"{_dmy(a)} to {_dmy(b)}"
    return f"{a.day} {_month(a)} to {b.day} {_month(b)} {a.year}"


RANGE: dict[str, Callable[[date, date], str]] = {
    "month_day_range": _month_day_range,
    "month_day_range_year": _month_day_range_year,
    "ordinal_month_day_range": lambda a, b: f"{_mdo(a)} - {_mdo(b)}",
    "month_day_to_day": _month_day_to_day,
    "month_day_to_day_year": _month_day_to_day_year,
    "numeric_dmy_range": lambda a, b: f"{a:%d/%m/%Y} - {b:%d/%m/%Y}",
    "sentence_range_year": lambda a, b: f"{_mdy(a)}, to {_mdy(b)}",
    "between_ordinal_range_year": lambda a, b: f"{_mdoy(a)}, and {_mdoy(b)}",
    "day_month_range_year": _day_month_range_year,
}

FORMATS = sorted([*SINGLE, *RANGE, *(f"end_{name}" for name in SINGLE)])


def _int(policy: dict[str, Any], key: str, default: int | None = None) -> int:
    value = policy.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"date_policy.{key} must be a whole number of days >= 0, not {value!r}")
    return value


def dates_for(policy: dict[str, Any], today: date, index: int) -> tuple[date, date]:
    """(start, end) of a templated task: check-in and check-out, or departure and return."""
    if not isinstance(policy, dict) or policy.get("type") not in POLICIES:
        kind = policy.get("type") if isinstance(policy, dict) else policy
        raise ValueError(f"date_policy type {kind!r} is unknown: use one of {', '.join(POLICIES)}")
    start = today + timedelta(days=_int(policy, "min_days_from_today") + SPREAD_DAYS * (index % SPREAD_SLOTS))
    duration = 0 if policy["type"] in ("same_day_flight", "one_way_flight") else _int(policy, "duration_days")
    return start, start + timedelta(days=duration)


def slots(template: str) -> list[str]:
    return _SLOT.findall(template)


def render(template: str, policy: dict[str, Any], formats: dict[str, str], today: date, index: int) -> str:
    """The question of the `index`-th templated task of its file, with its dates as of `today`."""
    if not isinstance(formats, dict):
        raise ValueError("render must map each slot to a date format")
    names = slots(template)
    missing = sorted(set(names) - set(formats))
    if missing:
        raise ValueError(f"ques_template slot {{{missing[0]}}} has no format in render")
    start, end = dates_for(policy, today, index)
    values: dict[str, str] = {}
    for name in names:
        fmt = formats[name]
        if fmt in RANGE:
            values[name] = RANGE[fmt](start, end)
        elif fmt in SINGLE:
            values[name] = SINGLE[fmt](start)
        elif isinstance(fmt, str) and fmt.startswith("end_") and fmt[4:] in SINGLE:
            values[name] = SINGLE[fmt[4:]](end)
        else:
            raise ValueError(f"render format {fmt!r} of slot {{{name}}} is unknown: use one of {', '.join(FORMATS)}")
    return _SLOT.sub(lambda m: values[m[1]], template)


def instance_pattern(template: str) -> re.Pattern[str]:
    """A pattern that a question matches when it is this template with some dates filled in."""
    parts = _SLOT.split(template)
    # split() alternates literal text and slot names
    return re.compile("".join(re.escape(p) if i % 2 == 0 else ".+?" for i, p in enumerate(parts)), re.DOTALL)
