"""A model profile: where the model is served, how to talk to it, what image it sees, how its replies become
actions, and the serving recipe it was evaluated with.

A profile is a TOML or JSON file, or a name (in `policy-profiles.toml` / $WEBEVAL_POLICY_PROFILES); command-line
options override single fields. It never holds an API key, only the name of the environment variable that does.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from webeval.outcomes.cost import Prices
from webeval.policy.openai.tool_names import check_tool_names
from webeval.profiles import ProfileError, catalogue_path, find, read_profile_file, validate

ADAPTERS = ("tools", "grid-1", "grid-999", "webvoyager", "ui-tars", "computer-use")
Adapter = Literal["tools", "grid-1", "grid-999", "webvoyager", "ui-tars", "computer-use"]
APIS = ("chat", "responses")
PROFILES_ENV = "WEBEVAL_POLICY_PROFILES"
PROFILE_FILE = "policy-profiles.toml"
BUILTIN_PROFILES: dict[str, dict[str, Any]] = {}  # the documented profiles are files: docs/profiles/
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED_BODY = {"model", "messages", "tools", "input", "instructions", "previous_response_id"}
# Adapters whose points may be on a grid of their own; the computer tool's display size is the image's.
_POINTED = ("tools", "ui-tars")
_NAMED = ("tools", "grid-1", "grid-999")  # adapters that hand the model the contract as function tools

__all__ = ["ADAPTERS", "APIS", "ImageLimits", "ImageSpec", "Profile", "ProfileError", "Recipe", "RecipeLock",
           "behaviour_digest", "load_profile", "make_profile", "read_profile_file", "sampling"]


def _sides_at_least(least: int, name: str, what: str) -> AfterValidator:
    """A width and height, each at least `least`; otherwise an error that says the pair must be `what`."""

    def check(value: tuple[int, int]) -> tuple[int, int]:
        if min(value) < least:
            raise ValueError(f"{name} {list(value)} must be {what}")
        return value

    return AfterValidator(check)


class _Table(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ImageSpec(_Table):
    """The screenshot as the model receives it: its encoding, and its size (the screen's unless told otherwise).

    `size` is a fixed width and height. `max_pixels` / `min_pixels` / `factor` resize as Qwen2.5-VL's processor
    does (`smart_resize`): each side rounded to a multiple of `factor`, the pixel count brought within the bounds,
    the aspect ratio kept as closely as that allows.
    """

    format: Literal["png", "jpeg", "webp"] = "png"
    quality: int | None = Field(default=None, ge=1, le=100)  # JPEG and WebP only
    size: Annotated[tuple[int, int], _sides_at_least(1, "size", "a positive width and height")] | None = None
    max_pixels: int | None = Field(default=None, ge=1)
    min_pixels: int | None = Field(default=None, ge=1)
    factor: int = Field(default=1, ge=1, le=256)

    @model_validator(mode="after")
    def _consistent(self) -> "ImageSpec":
        if self.quality is not None and self.format == "png":
            raise ValueError("quality applies to jpeg and webp, not png (which is lossless)")
        if self.size is not None and (self.max_pixels or self.min_pixels or self.factor != 1):
            raise ValueError("give either a fixed size or max_pixels/min_pixels/factor, not both")
        if self.max_pixels and self.min_pixels and self.min_pixels > self.max_pixels:
            raise ValueError(f"min_pixels {self.min_pixels} is above max_pixels {self.max_pixels}")
        return self

    @property
    def resizes(self) -> bool:
        return self.size is not None or bool(self.max_pixels or self.min_pixels) or self.factor != 1

    def describe(self) -> str:
        quality = f" quality {self.quality}" if self.quality else ""
        if self.size is not None:
            how = f"fixed {self.size[0]}x{self.size[1]}"
        elif self.resizes:
            bounds = [f"factor {self.factor}"] + [f"{name} {value}" for name, value in (
                ("min_pixels", self.min_pixels), ("max_pixels", self.max_pixels)) if value]
            how = "smart_resize " + ", ".join(bounds)
        else:
            how = "screen size"
        return f"{self.format}{quality}, {how}"


class ImageLimits(_Table):
    """What the server's image processor allows (vLLM's --mm-processor-kwargs and --limit-mm-per-prompt)."""

    max_pixels: int | None = Field(default=None, ge=1)
    min_pixels: int | None = Field(default=None, ge=1)
    per_prompt: int | None = Field(default=None, ge=1)


def _sha256(value: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{64}", value):
        raise ValueError(f"{value!r} is not a sha256 (64 lowercase hex digits, as `sha256sum FILE` prints)")
    return value


Sha256 = Annotated[str, AfterValidator(_sha256)]


class RecipeLock(_Table):
    """What the model was served with, pinned: the sha256 of each file the server loads, and what the server itself
    reports. `webeval profile check --served URL` compares what it can; a run records the lock."""

    tokenizer: Sha256 | None = None  # tokenizer.json as served (--tokenizer)
    chat_template: Sha256 | None = None  # the template file (--chat-template)
    processor: Sha256 | None = None  # preprocessor_config.json (the image processor)
    reasoning_parser: Sha256 | None = None  # the parser plugin file (--reasoning-parser-plugin)
    tool_call_parser: Sha256 | None = None  # a parser plugin file (--tool-parser-plugin); built-in: vllm_version
    served_root: str | None = None  # what /v1/models reports as the model's root (its weights' path or name)
    max_model_len: int | None = Field(default=None, ge=1)  # what /v1/models reports
    vllm_version: str | None = None  # what /version reports
    tokenizer_probe: Sha256 | None = None  # sha256 of /tokenize's token ids for webeval's probe text

    FILES: ClassVar[tuple[str, ...]] = ("tokenizer", "chat_template", "processor", "reasoning_parser",
                                       "tool_call_parser")

    def pinned(self) -> dict[str, str]:
        return {name: str(value) for name, value in self.model_dump().items() if value is not None}

    def describe(self) -> str:
        """`tokenizer 1a2b3c4d5e6f, chat template ...`: every pin, hashes shortened."""
        hashes = (*self.FILES, "tokenizer_probe")
        return ", ".join(f"{name.replace('_', ' ')} {value[:12] if name in hashes else value}"
                         for name, value in self.pinned().items()) or "-"


class Recipe(_Table):
    """How the model was served when it was evaluated; shown in the run's header and environment."""

    model_revision: str | None = None
    chat_template: str | None = None
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    image_limits: ImageLimits | None = None
    serve: str | None = None  # the command line that serves it
    lock: RecipeLock | None = None

    def values(self) -> dict[str, str]:
        """The recipe as flat name = value pairs (for the report's environment)."""
        values = {name: str(getattr(self, name)) for name in (
            "model_revision", "chat_template", "tool_call_parser", "reasoning_parser", "serve")
                  if getattr(self, name) is not None}
        limits = self.image_limits
        if limits is not None:
            values.update({f"image_limits.{name}": str(value) for name, value in limits.model_dump().items()
                           if value is not None})
        if self.lock is not None:
            values.update({f"lock.{name}": value for name, value in self.lock.pinned().items()})
        return values

    def describe(self) -> str:
        limits = self.image_limits
        images = "images: -"
        if limits is not None:
            parts = [f"≤ {limits.max_pixels} px" if limits.max_pixels else "",
                     f"≥ {limits.min_pixels} px" if limits.min_pixels else "",
                     f"{limits.per_prompt} per prompt" if limits.per_prompt else ""]
            images = "images: " + (", ".join(p for p in parts if p) or "-")
        locked = f", locked: {self.lock.describe()}" if self.lock is not None else ""
        return (f"revision {self.model_revision or '-'}, chat template {self.chat_template or '-'}, "
                f"tool-call parser {self.tool_call_parser or '-'}, reasoning parser {self.reasoning_parser or '-'}, "
                f"{images}{locked}")


class Profile(_Table):
    base_url: str
    model: str = Field(min_length=1)
    api_key_env: str = "OPENAI_API_KEY"
    api: Literal["chat", "responses"] = "chat"
    # Responses API: chain turns by the server's stored response, or send the whole (bounded) history every time.
    chain: Literal["previous_response_id", "full_input"] = "previous_response_id"
    adapter: Adapter = "tools"
    temperature: float | None = Field(default=0.0, ge=0, le=2)  # "none": not sent
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int = Field(default=1024, ge=1)
    # OpenAI's reasoning models take max_completion_tokens and refuse max_tokens; vLLM and SGLang take either.
    # The Responses API's name is max_output_tokens (the default there).
    max_tokens_param: Literal["max_tokens", "max_completion_tokens", "max_output_tokens"] = "max_tokens"
    # The model's reasoning in the history it is shown again: all of it, none, or only the last reply's.
    reasoning_history: Literal["keep", "drop", "keep-last"] = "drop"
    acknowledge_safety_checks: bool = False  # hosted computer use: go on past a pending safety check
    computer_tool: Literal["computer_use_preview", "computer"] = "computer_use_preview"
    computer_environment: Literal["browser", "linux", "ubuntu", "windows", "mac"] = "browser"
    # The space the model's coordinates are in: None means pixels of the image it sees; [1000, 1000] a virtual grid.
    coordinate_space: Annotated[tuple[int, int], _sides_at_least(2, "coordinate_space", "at least 2x2")] | None = None
    image: ImageSpec = ImageSpec()
    image_detail: Literal["auto", "low", "high"] = "auto"
    screenshots: int = Field(default=3, ge=1, le=50)  # screenshots kept in the prompt; older ones become a stub
    history_steps: int = Field(default=20, ge=1, le=1000)  # steps kept in the prompt at all; older ones are dropped
    # windowed: the last `screenshots` images and `history_steps` steps (a bounded prompt). append-only: every turn's
    # prompt is the previous one extended (every image, every reply as received, reasoning included), as trainers
    # that check token prefixes (NeMo-RL) need.
    history: Literal["windowed", "append-only"] = "windowed"
    # Ask a vLLM endpoint for each turn's prompt and generated token ids and log-probabilities (rollouts do).
    token_ids: bool = False
    timeout_s: float = Field(default=60.0, gt=0)  # one HTTP call
    retries: int = Field(default=3, ge=0, le=20)
    backoff_s: float = Field(default=1.0, ge=0)  # first wait after a failure; doubles each time
    max_wait_s: float = Field(default=60.0, gt=0)  # the longest wait; a longer Retry-After gives up at once
    system_prompt: str | None = None  # replaces the adapter's own instructions
    # The names the model knows the contract's tools by, where they are not ours: {"tabs": "tab"}.
    tool_names: dict[str, str] = Field(default_factory=dict)
    extra_body: dict[str, Any] = Field(default_factory=dict)  # server-specific parameters (top_k, chat_template_kwargs)
    recipe: Recipe | None = None
    prices: Prices | None = None  # US dollars per million input, cached input and output tokens: the run's cost

    @model_validator(mode="before")
    @classmethod
    def _api_defaults(cls, data: Any) -> Any:
        """Defaults that depend on the API: the token-limit name, and reasoning kept where the server keeps it."""
        if isinstance(data, dict) and data.get("api") == "responses":
            data = dict(data)
            data.setdefault("max_tokens_param", "max_output_tokens")
            data.setdefault("reasoning_history", "keep")
        return data

    @field_validator("temperature", "top_p", mode="before")
    @classmethod
    def _not_sent(cls, value: Any) -> Any:
        return None if value == "none" else value  # TOML has no null: "none" leaves the parameter out

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
        clash = _RESERVED_BODY & set(value)
        if clash:
            raise ValueError(f"extra_body may not set {', '.join(sorted(clash))}")
        return value

    @field_validator("tool_names")
    @classmethod
    def _tool_names(cls, value: dict[str, str]) -> dict[str, str]:
        problem = check_tool_names(value)
        if problem:
            raise ValueError(problem.removeprefix("tool_names: ").removeprefix("tool_names."))
        return value

    @model_validator(mode="after")
    def _coherent(self) -> "Profile":
        for problem in (self._api_problem(), self._space_problem(), self._recipe_problem()):
            if problem:
                raise ValueError(problem)
        return self

    def _api_problem(self) -> str | None:
        if self.adapter == "computer-use" and self.api != "responses":
            return "adapter 'computer-use' is the Responses API's computer tool: set api = \"responses\""
        if (self.api == "responses") != (self.max_tokens_param == "max_output_tokens"):
            right = "max_output_tokens" if self.api == "responses" else "max_tokens or max_completion_tokens"
            return f"max_tokens_param {self.max_tokens_param!r} does not fit api {self.api!r}: use {right}"
        if self.token_ids and self.api != "chat":
            return "token_ids are read from chat completions (vLLM's parameters): set api = \"chat\""
        if self.api == "responses" and self.chain == "previous_response_id" and self.reasoning_history != "keep":
            return (f"reasoning_history {self.reasoning_history!r} needs chain = \"full_input\": with "
                    "previous_response_id the server keeps the whole history, reasoning included")
        return None

    def _space_problem(self) -> str | None:
        if self.coordinate_space is not None and self.adapter not in _POINTED:
            return f"coordinate_space does not apply to adapter {self.adapter!r} (it has its own coordinates)"
        if self.tool_names and self.adapter not in _NAMED:
            return f"tool_names apply to the function-tool adapters ({', '.join(_NAMED)}), not {self.adapter!r}"
        return None

    def _recipe_problem(self) -> str | None:
        limits = self.recipe.image_limits if self.recipe else None
        if limits is None:
            return None
        if limits.per_prompt is not None and self.screenshots > limits.per_prompt:
            return (f"screenshots {self.screenshots} is more than the server takes per prompt "
                    f"(recipe.image_limits.per_prompt {limits.per_prompt})")
        largest = self.image.size[0] * self.image.size[1] if self.image.size else self.image.max_pixels
        if limits.max_pixels is not None and (largest is None or largest > limits.max_pixels):
            sent = f"up to {largest} px" if largest else "screen-size images"
            return (f"image sends {sent}, more than the server's recipe.image_limits.max_pixels {limits.max_pixels}: "
                    "the server would resize it again and the model's coordinates would be in a space the policy "
                    "does not know")
        return None


# vLLM's parameters for token-exact turns: the chosen token's log-probability only, tokens as `token_id:<id>`, and
# the prompt's and the generation's token ids on the response.
TOKEN_ID_PARAMETERS = {"logprobs": True, "top_logprobs": 0, "return_tokens_as_token_ids": True,
                       "return_token_ids": True}


# Where the model is served, how patiently it is waited for and what it costs (and which model: a condition of its
# own): not what it is sent or how its replies are read.
_TRANSPORT_FIELDS = {"base_url", "model", "api_key_env", "timeout_s", "retries", "backoff_s", "max_wait_s", "prices"}


def behaviour_digest(profile: Profile) -> str:
    """The sha256 of the profile's fields that shape what the model is sent and how its replies are read."""
    fields = {name: value for name, value in profile.model_dump(mode="json").items() if name not in _TRANSPORT_FIELDS}
    return hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def sampling(profile: Profile) -> dict[str, Any]:
    """The request's sampling and length parameters, then the server-specific fields, as the profile sets them."""
    chosen: dict[str, Any] = {name: getattr(profile, name) for name in ("temperature", "top_p")
                              if getattr(profile, name) is not None}
    tokens = TOKEN_ID_PARAMETERS if profile.token_ids and profile.api == "chat" else {}
    return {**chosen, profile.max_tokens_param: profile.max_tokens, **tokens, **profile.extra_body}


def make_profile(fields: dict[str, Any], source: str = "options") -> Profile:
    """A validated profile from the merged fields, or a one-line ProfileError naming the source and field."""
    missing = [name for name in ("base_url", "model") if fields.get(name) in (None, "")]
    if missing:
        raise ProfileError(f"{source}: no {' and no '.join(missing)} (pass --policy-{missing[0].replace('_', '-')} "
                           "or a profile that sets it)")
    return validate(Profile, fields, source)


def load_profile(reference: Path | str | None, overrides: dict[str, Any], root: Path | None = None) -> Profile:
    """The profile (a file, or a name) with the command line's fields on top."""
    if reference is None:
        fields, source = {}, "policy options"
    elif isinstance(reference, Path):
        fields, source = read_profile_file(reference), f"profile {reference}"
    else:
        found = find(reference, option="--policy-profile", builtins=BUILTIN_PROFILES,
                     catalogue=catalogue_path(PROFILES_ENV, PROFILE_FILE, root if root is not None else Path.cwd()))
        fields, source = found.fields, found.source
    fields = {**fields, **{k: v for k, v in overrides.items() if v is not None}}
    return make_profile(fields, source)
