"""A model profile: where the model is served, how to talk to it, and how its replies become actions.

A profile is a TOML or JSON file; command-line options override single fields. It never holds an API key, only the
name of the environment variable that does.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

ADAPTERS = ("tools", "grid-1", "grid-999", "webvoyager")
Adapter = Literal["tools", "grid-1", "grid-999", "webvoyager"]
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ProfileError(ValueError):
    """A profile that cannot be used; the message is one line for the user."""


class Profile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    model: str = Field(min_length=1)
    api_key_env: str = "OPENAI_API_KEY"
    adapter: Adapter = "tools"
    temperature: float | None = Field(default=0.0, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int = Field(default=1024, ge=1)
    # OpenAI's reasoning models take max_completion_tokens and refuse max_tokens; vLLM and SGLang take either.
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    image_detail: Literal["auto", "low", "high"] = "auto"
    screenshots: int = Field(default=3, ge=1, le=50)  # screenshots kept in the prompt; older ones become a stub
    history_steps: int = Field(default=20, ge=1, le=1000)  # steps kept in the prompt at all; older ones are dropped
    timeout_s: float = Field(default=60.0, gt=0)  # one HTTP call
    retries: int = Field(default=3, ge=0, le=20)
    backoff_s: float = Field(default=1.0, ge=0)  # first wait after a failure; doubles each time
    max_wait_s: float = Field(default=60.0, gt=0)  # the longest wait; a longer Retry-After gives up at once
    system_prompt: str | None = None  # replaces the adapter's own instructions
    extra_body: dict[str, Any] = Field(default_factory=dict)  # server-specific parameters (top_k, chat_template_kwargs)

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"base_url {value!r} is not an http(s) URL")
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not _ENV_NAME.match(value):
            raise ValueError(f"api_key_env {value!r} is not an environment variable name")
        return value

    @field_validator("extra_body")
    @classmethod
    def _no_key_in_body(cls, value: dict[str, Any]) -> dict[str, Any]:
        clash = {"model", "messages", "tools"} & set(value)
        if clash:
            raise ValueError(f"extra_body may not set {', '.join(sorted(clash))}")
        return value


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def read_profile_file(path: Path) -> dict[str, Any]:
    """The fields a profile file sets (TOML, or JSON by its .json suffix)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"cannot read profile {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"profile {path} is not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {exc}") \
            from None
    if not isinstance(data, dict):
        raise ProfileError(f"profile {path} must be a table of fields")
    if "api_key" in data:
        raise ProfileError(f"profile {path} holds an api_key: put the key in an environment variable and name it "
                           "with api_key_env")
    return data


def make_profile(fields: dict[str, Any], source: str = "options") -> Profile:
    """A validated profile from the merged fields, or a one-line ProfileError naming the source and field."""
    missing = [name for name in ("base_url", "model") if fields.get(name) in (None, "")]
    if missing:
        raise ProfileError(f"{source}: no {' and no '.join(missing)} (pass --policy-{missing[0].replace('_', '-')} "
                           "or a profile that sets it)")
    try:
        return Profile.model_validate(fields)
    except ValidationError as exc:
        raise ProfileError(f"{source}: {_first_error(exc)}") from None


def load_profile(path: Path | None, overrides: dict[str, Any]) -> Profile:
    """The profile file (if any) with the command line's fields on top."""
    fields = read_profile_file(path) if path is not None else {}
    fields.update({k: v for k, v in overrides.items() if v is not None})
    return make_profile(fields, f"profile {path}" if path is not None else "policy options")
