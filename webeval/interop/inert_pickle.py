"""Reading pickles of another harness as data, never as code.

A pickle names classes and functions that `pickle.load` imports and calls; an experiment folder found on disk is
untrusted, so nothing it names is imported or called here. Every global the pickle names becomes an `Inert` stand-in
that only records what the pickle gives it (its arguments, its state, its items), and the built-in containers
(dicts, lists, tuples, strings, numbers) come back as themselves. What is not plain data (a numpy array, a
BrowserGym observation object) stays an `Inert` whose fields can be looked at, and means nothing more.
"""

from __future__ import annotations

import gzip
import io
import pickle
import zlib
from pathlib import Path
from typing import Any

from webeval.interop.imported import MAX_SOURCE_BYTES, Unreadable


class Inert:
    """An object of a class the pickle names, never imported: what the pickle gave it, kept as data."""

    named = "?"  # module.name of the class the pickle named

    def __new__(cls, *args: Any, **kwargs: Any) -> "Inert":
        made = super().__new__(cls)
        made.__dict__.update(args=args, kwargs=kwargs, state=None, items={}, listed=[])
        return made

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # a REDUCE calls the class: the arguments are kept
        self.__dict__.update(args=args, kwargs=kwargs)

    def __setstate__(self, state: Any) -> None:
        self.__dict__["state"] = state

    def __setitem__(self, key: Any, value: Any) -> None:
        self.__dict__["items"][key] = value

    def append(self, value: Any) -> None:
        self.__dict__["listed"].append(value)

    def extend(self, values: Any) -> None:
        self.__dict__["listed"].extend(values)

    def __repr__(self) -> str:
        return f"<inert {self.named}>"


class _InertUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self._classes: dict[tuple[str, str], type] = {}

    def find_class(self, module: str, name: str) -> type:
        key = (module, name)
        if key not in self._classes:
            self._classes[key] = type(name.replace(".", "_") or "Inert", (Inert,), {"named": f"{module}.{name}"})
        return self._classes[key]

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("a persistent reference: not plain data")


def loads(data: bytes) -> Any:
    return _InertUnpickler(data).load()


def load(path: Path, label: str) -> Any:
    """A pickle file's data (gunzipped when it ends in .gz), or Unreadable naming `label`."""
    try:
        raw = path.read_bytes() if path.stat().st_size <= MAX_SOURCE_BYTES else None
        if raw is None:
            raise Unreadable(f"{label}: larger than {MAX_SOURCE_BYTES >> 20} MB")
        if path.name.endswith(".gz"):
            with gzip.open(io.BytesIO(raw)) as unzipped:
                raw = unzipped.read(MAX_SOURCE_BYTES + 1)
            if len(raw) > MAX_SOURCE_BYTES:
                raise Unreadable(f"{label}: unpacks to more than {MAX_SOURCE_BYTES >> 20} MB")
        return loads(raw)
    except FileNotFoundError:
        raise Unreadable(f"no {label}") from None
    except OSError as exc:  # gzip's BadGzipFile is an OSError too
        raise Unreadable(f"{label}: cannot read it ({exc.strerror or exc})") from None
    except (pickle.UnpicklingError, EOFError, zlib.error, ValueError, TypeError, IndexError, KeyError,
            AttributeError, RecursionError, MemoryError) as exc:
        raise Unreadable(f"{label}: not a readable pickle ({type(exc).__name__})") from None


def field(value: Any, name: str) -> Any:
    """A field of a dict, or of an inert object's state (a dataclass's `__dict__`, or (dict, slots)); else None."""
    if isinstance(value, dict):
        return value.get(name)
    if isinstance(value, Inert):
        state = value.__dict__.get("state")
        if isinstance(state, tuple) and len(state) == 2:  # (__dict__, __slots__ values)
            state = {**(state[0] or {}), **(state[1] or {})} if all(
                isinstance(s, dict) or s is None for s in state) else None
        if isinstance(state, dict):
            return state.get(name)
        return value.__dict__["items"].get(name)
    return None
