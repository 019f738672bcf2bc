"""A cache of verdicts, kept next to the evidence they judge: re-judging the same evidence with the same judge
costs no call.

An entry's key is the sha256 of the evidence (its document and every screenshot's bytes), the protocol, the judge
model (and its endpoint) and the prompt version; it lives in the attempt folder as `verdicts/<key>.json`, so it
travels with a copied run and is never shared between runs by accident. Only verdicts are kept, never errors.
"""

from __future__ import annotations

import hashlib
import os

from webeval.outcomes.evidence import EVIDENCE, Evidence
from webeval.outcomes.verdict import Verdict

FOLDER = "verdicts"


def evidence_sha256(evidence: Evidence) -> str:
    digest = hashlib.sha256(evidence.model_dump_json().encode("utf-8"))
    for path in evidence.screenshot_paths():
        digest.update(b"\0" + path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def usable(evidence: Evidence) -> bool:
    """Only evidence stored in an attempt folder has a place for its verdicts."""
    return (evidence.folder / EVIDENCE).is_file()


def cache_key(evidence: Evidence, protocol: str, model: str, prompt_version: str) -> str:
    parts = [evidence_sha256(evidence), protocol, model, prompt_version]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def cached(evidence: Evidence, key: str) -> Verdict | None:
    path = evidence.folder / FOLDER / f"{key}.json"
    try:
        return Verdict.model_validate_json(path.read_bytes())
    except (OSError, ValueError):  # absent, or a torn entry: judge again
        return None


def store(evidence: Evidence, key: str, verdict: Verdict) -> None:
    folder = evidence.folder / FOLDER
    folder.mkdir(exist_ok=True)
    aside = folder / f".{key}.{os.getpid()}"
    aside.write_text(verdict.model_dump_json(indent=2), encoding="utf-8")
    os.replace(aside, folder / f"{key}.json")
