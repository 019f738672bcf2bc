"""Profiles: settings for a model endpoint, chosen by name or by path, read from TOML or JSON, checked by a schema.

One loader serves the policy's and the judge's profiles, so both take the same forms and follow the same rules:

- a *path* (it names a `.toml` or `.json` file, or has a directory part) is a file holding one profile's fields;
- a *name* is looked up in a profiles file of named tables (TOML or JSON), then among the built-in profiles.

A profile never holds a key, only the name of the environment variable that does. Unknown keys, wrong types and a
missing file are errors of one line that name the file and the key. Nothing here touches the network.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, TypeVar

from pydantic import BaseModel, ValidationError

SUFFIXES = (".toml", ".json")
M = TypeVar("M", bound=BaseModel)


class ProfileError(ValueError):
    """A profile that cannot be used; the message is one line for the user."""


@dataclass(frozen=True)
class Found:
    """A profile's fields as written, and where they were found (for messages)."""

    fields: dict[str, Any]
    source: str
    path: Path | None = None  # the file that held them; None for a built-in


def is_path(reference: str) -> bool:
    """A reference is a path when it names a .toml/.json file or has a directory part; otherwise it is a name."""
    return reference.endswith(SUFFIXES) or "/" in reference or "\\" in reference


def _parse(path: Path, text: str) -> Any:
    kind = "JSON" if path.suffix == ".json" else "TOML"
    try:
        return json.loads(text) if kind == "JSON" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"{path}: invalid {kind}: {exc}".replace("\n", " ")) from None


def _read(path: Path, cannot: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"{cannot}: {exc.strerror or exc}") from None
    return _parse(path, text)


def read_profile_file(path: Path) -> dict[str, Any]:
    """The fields of a file that holds one profile."""
    data = _read(path, f"cannot read profile {path}")
    if not isinstance(data, dict):
        raise ProfileError(f"profile {path} must be a table of fields")
    return data


def read_catalogue(path: Path) -> dict[str, dict[str, Any]]:
    """The named profiles of a profiles file: one table per name."""
    data = _read(path, f"{path}: cannot read profiles")
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: a profiles file is a table of named profiles")
    for name, table in data.items():
        if not isinstance(table, dict):
            raise ProfileError(f"{path}: profile {name!r} must be a table ([{name}])")
    return data


def catalogue_path(variable: str, file_name: str, root: Path | None) -> Path | None:
    """The profiles file: the one $variable names (which must exist), else `file_name` in the root if it is there."""
    if os.environ.get(variable):
        return Path(os.environ[variable])
    path = root / file_name if root is not None else None
    return path if path is not None and path.is_file() else None


def find(reference: str, *, option: str, builtins: Mapping[str, Mapping[str, Any]],
         catalogue: Path | None) -> Found:
    """The profile a command-line reference means: a file by path, else a name in the profiles file or built in."""
    if is_path(reference):
        path = Path(reference).expanduser()
        return Found(read_profile_file(path), f"profile {path}", path)
    named = read_catalogue(catalogue) if catalogue is not None else {}
    if reference in named:
        return Found(dict(named[reference]), f"{catalogue}: profile {reference!r}", catalogue)
    if reference in builtins:
        return Found(dict(builtins[reference]), f"built-in profile {reference!r}")
    known = sorted({*named, *builtins})
    where = f" (profiles: built-in and {catalogue})" if named else ""
    choices = f"use one of {', '.join(known)}" if known else "no profile has a name here"
    raise ProfileError(f"{option} {reference!r} is unknown: {choices}{where}, or give the path of a .toml or "
                       ".json file")


def first_error(error: ValidationError) -> str:
    """A pydantic error as `key: message`, or `has unknown key 'x'` for a key the schema does not have."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    if first["type"] == "extra_forbidden":
        return f"has unknown key {where!r}"
    message = first["msg"].removeprefix("Value error, ")
    return f": {where}: {message}" if where else f": {message}"


def validate(schema: type[M], fields: Mapping[str, Any], source: str) -> M:
    """The fields checked by the schema (which forbids unknown keys), or a one-line ProfileError."""
    if "api_key" in fields:
        raise ProfileError(f"{source} holds an API key: name its variable with api_key_env")
    try:
        return schema.model_validate(dict(fields))
    except ValidationError as exc:
        problem = first_error(exc)
        joint = "" if problem.startswith(":") else " "
        raise ProfileError(f"{source}{joint}{problem}".replace("\n", " ")) from None
