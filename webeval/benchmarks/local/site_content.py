"""A site's fixed content: a JSON file of package data beside its routes, read once when the site is loaded.

The content is data, not code: tables of records that name their fields. The site's code unpacks some of them as
tuples, so `rows` gives a table in that form, its fields in the order the code unpacks them; a record with a field
missing or one too many fails at import, never on the page that shows it.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def site_content(package: str, name: str) -> dict[str, Any]:
    """The JSON document `name` of a site's package (the `__package__` of its modules)."""
    return json.loads(resources.files(package).joinpath(name).read_text(encoding="utf-8"))


def rows(records: list[dict[str, Any]], *fields: str) -> list[tuple[Any, ...]]:
    """Each record as a tuple of its `fields`, in that order; a record whose fields are not exactly these raises."""
    for record in records:
        if record.keys() != set(fields):
            raise ValueError(f"a record with fields {sorted(record)} where {sorted(fields)} were expected: {record}")
    return [tuple(record[field] for field in fields) for record in records]
