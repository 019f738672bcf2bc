"""Who acts in an episode: the policy options, declared once, and the `PolicyChoice` they make.

`PolicyChoice.from_values(values)` checks the options (`POLICY_FLAGS`; a bad one is an OptionError of one line) and
resolves a model profile; `choice.factory(screen)` hands out what builds each episode's policy from its browser
session and its prepared task: the oracle (the task's own solution), a model behind an OpenAI-compatible API
(`openai`, optionally recording every exchange), or a recorded run played back offline (`replay`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from webeval.flags import Flag, OptionError, with_defaults
from webeval.outcomes.cost import Prices
from webeval.outcomes.record import NotRun
from webeval.policy.base import Policy
from webeval.policy.openai import (
    ADAPTERS, APIS, DUMP_FOLDER, HttpTransport, Mark, OpenAIPolicy, Profile, ProfileError, Recorder,
    RecordingTransport, ReplayMissing, ReplayTransport, Transport, api_key_from, find_recording, load_profile,
    make_adapter, read_recording,
)
from webeval.policy.openai.profile import behaviour_digest
from webeval.policy.openai.tool_names import parse_tool_names
from webeval.policy.oracle import oracle

if TYPE_CHECKING:  # what an episode hands the factory; the agent's and the runtime's types, not imported at run time
    from webeval.agent.environment import Prepared
    from webeval.runtime.session import TaskSession

POLICIES = ("oracle", "openai", "replay")
POLICY_FLAGS = (
    Flag("--policy", metavar="NAME", help=f"who acts: {', '.join(POLICIES)} (oracle: the tasks' own solutions)"),
    Flag("--policy-profile", metavar="NAME|PATH",
         help="model profile: a TOML or JSON file, or a name in policy-profiles.toml ($WEBEVAL_POLICY_PROFILES): "
              "endpoint, API, adapter, image, sampling, history, recipe"),
    Flag("--policy-api", choices=APIS,
         help="chat (/chat/completions, the default) or responses (/responses) (overrides the profile)"),
    Flag("--dump-observation", action="store_true",
         help="write what the model received each step (image as sent, text) to <attempt>/model-input/"),
    Flag("--policy-base-url", metavar="URL",
         help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (overrides the profile)"),
    Flag("--policy-model", metavar="NAME", help="the served model's name (overrides the profile)"),
    Flag("--policy-api-key-env", metavar="NAME",
         help="environment variable holding the API key (default OPENAI_API_KEY)"),
    Flag("--policy-adapter", choices=ADAPTERS,
         help=f"how the model acts: {', '.join(ADAPTERS)} (default tools; see docs/models.md)"),
    Flag("--policy-screenshots", type=int, metavar="K", help="screenshots kept in the prompt (default 3)"),
    Flag("--policy-tool-names", metavar="TOOL=NAME,...",
         help="the names the model is given for the contract's tools, e.g. tabs=tab (overrides the profile)"),
    Flag("--policy-timeout", type=float, metavar="S", help="seconds one model call may take (default 60)"),
    Flag("--policy-retries", type=int, metavar="N", help="retries of a failed model call (default 3)"),
    Flag("--record", action="store_true",
         help="keep each task's exact model requests and replies under its attempt folder"),
    Flag("--replay-from", metavar="DIR",
         help="with --policy replay: the run directory whose recordings to play back offline"),
)
PolicyFactory = Callable[["TaskSession", "Prepared"], Policy]


def check_policy(name: str | None) -> None:
    if name is None:
        raise OptionError(f"no policy: pass --policy, one of {', '.join(POLICIES)}")
    if name not in POLICIES:
        raise OptionError(f"--policy {name!r} is unknown: use one of {', '.join(POLICIES)}")


def _overrides(values: Mapping[str, Any]) -> dict[str, Any]:
    try:
        names = parse_tool_names(values["policy_tool_names"]) if values["policy_tool_names"] else None
    except ValueError as exc:
        raise OptionError(str(exc)) from None
    return {"base_url": values["policy_base_url"], "model": values["policy_model"],
            "api_key_env": values["policy_api_key_env"], "adapter": values["policy_adapter"],
            "api": values["policy_api"], "screenshots": values["policy_screenshots"],
            "timeout_s": values["policy_timeout"], "retries": values["policy_retries"], "tool_names": names}


def _refuse_strays(name: str | None, values: Mapping[str, Any]) -> None:
    """Options that belong to another policy than the one chosen."""
    if values["dump_observation"] and name not in ("openai", "replay"):
        raise OptionError("--dump-observation writes what a model received: use it with --policy openai or replay")
    if values["record"] and name != "openai":
        raise OptionError("--record keeps a model's requests and replies: use it with --policy openai")
    if values["replay_from"] and name != "replay":
        raise OptionError("--replay-from goes with --policy replay")


@dataclass(frozen=True)
class PolicyChoice:
    """The policy of a run: its name (None: none chosen yet), the resolved model profile, and what to keep."""

    name: str | None = None
    profile: Profile | None = None
    record: bool = False
    replay_from: Path | None = None
    dump: bool = False

    @classmethod
    def from_values(cls, values: Mapping[str, Any], root: Path | None = None) -> "PolicyChoice":
        """The choice the options make (keys of POLICY_FLAGS; a missing one has its default). Profiles by name
        are looked up under `root` (policy-profiles.toml). A bad option is an OptionError of one line."""
        values = with_defaults(POLICY_FLAGS, values)
        name = values["policy"]
        if name is not None:
            check_policy(name)
        _refuse_strays(name, values)
        dump = bool(values["dump_observation"])
        if name == "replay":
            if not values["replay_from"]:
                raise OptionError("--policy replay needs --replay-from DIR (a run directory recorded with --record)")
            replay_from = Path(values["replay_from"])
            if not replay_from.is_dir():
                raise OptionError(f"--replay-from {replay_from}: no such directory")
            return cls(name, replay_from=replay_from, dump=dump)
        if name != "openai":
            return cls(name)
        try:
            profile = load_profile(values["policy_profile"], _overrides(values), root)
        except ProfileError as exc:
            raise OptionError(str(exc)) from None
        return cls(name, profile=profile, record=bool(values["record"]), dump=dump)

    @property
    def model(self) -> str | None:
        """The model the policy calls, as its profile resolved it."""
        return self.profile.model if self.profile is not None else None

    @property
    def prices(self) -> Prices | None:
        """The price table of the model profile: what the policy's tokens cost (none: not priced)."""
        return self.profile.prices if self.profile is not None else None

    def recipe(self) -> dict[str, str]:
        """The serving recipe of the model profile (none: empty), for the run's environment."""
        profile = self.profile
        return profile.recipe.values() if profile is not None and profile.recipe is not None else {}

    def conditions(self) -> dict[str, str]:
        """What a run's score depends on in who acts: the policy, its model, its profile's behaviour (a digest of
        the fields that shape requests and readings, not where the model is served) and the recipe lock."""
        found = {"policy": self.name or "-"}
        if self.replay_from is not None:
            found["policy"] = f"replay of {self.replay_from.resolve()}"
        if self.profile is not None:
            found["policy model"] = self.profile.model
            found["policy profile"] = f"fields sha256 {behaviour_digest(self.profile)[:12]}"
            lock = self.profile.recipe.lock if self.profile.recipe is not None else None
            if lock is not None:
                found["recipe lock"] = lock.describe()
        return found

    def describe(self) -> str:
        name, profile = self.name, self.profile
        if name == "oracle":
            return "policy: oracle -- the tasks' built-in solutions are acting, not a model"
        if name is None:
            return "policy: none chosen (pass --policy)"
        if name == "openai" and profile is not None:
            record = ", recording" if self.record else ""
            served = f"\nserving recipe: {profile.recipe.describe()}" if profile.recipe is not None else ""
            return (f"policy: openai -- model {profile.model} at {profile.base_url}, api {profile.api}, adapter "
                    f"{profile.adapter}, image {profile.image.describe()}, {profile.screenshots} screenshots in the "
                    f"prompt{record}{served}")
        if name == "replay" and self.replay_from is not None:
            return f"policy: replay -- recorded model replies from {self.replay_from}, offline"
        return f"policy: {name}"

    def factory(self, screen: tuple[int, int], transports: Callable[[Transport], Transport] | None = None
                ) -> PolicyFactory:
        """What builds each episode's policy, for screenshots of `screen` (width, height) pixels. `transports`
        wraps each model transport (the rollout engine bounds the calls to one endpoint with it)."""
        check_policy(self.name)
        if (self.name == "openai" and self.profile is None) or (self.name == "replay" and self.replay_from is None):
            raise OptionError(f"--policy {self.name}: the choice has no model profile or recordings; make it with "
                              "PolicyChoice.from_values")

        def episode_policy(session: TaskSession, prepared: Prepared) -> Policy:
            if self.name == "oracle":
                return oracle(session, prepared)
            if self.name == "replay":
                return self._replay_policy(screen, session, prepared)
            return self._live_policy(screen, session, prepared, transports)

        return episode_policy

    def _dump(self, session: TaskSession) -> Path | None:
        return session.folder / DUMP_FOLDER if self.dump else None

    def _live_policy(self, screen: tuple[int, int], session: TaskSession, prepared: Prepared,
                     transports: Callable[[Transport], Transport] | None) -> Policy:
        profile = self.profile
        key = api_key_from(os.environ, profile)
        recorder = None
        if self.record:
            recorder = Recorder(session.folder, (key,))
            recorder.header(prepared.task.id, prepared.task.start_url, screen, profile.model_dump(mode="json"))

        def transport():
            live = HttpTransport(profile, key)
            live = transports(live) if transports is not None else live
            return RecordingTransport(live, recorder) if recorder is not None else live

        return OpenAIPolicy(profile, make_adapter(profile, screen, _marks(session)), transport,
                            dump=self._dump(session))

    def _replay_policy(self, screen: tuple[int, int], session: TaskSession, prepared: Prepared) -> Policy:
        try:
            path = find_recording(self.replay_from, prepared.task.id)
            header, _ = read_recording(path)
        except ReplayMissing as exc:
            raise NotRun("replay_missing", str(exc)) from None
        recorded_screen = tuple(header.get("screen") or ())
        if recorded_screen != tuple(screen):
            raise NotRun("replay_screen", f"recorded at {recorded_screen[0]}x{recorded_screen[1]}, this run's "
                                          f"screen is {screen[0]}x{screen[1]}")
        profile = Profile.model_validate(header["profile"])
        return OpenAIPolicy(profile, make_adapter(profile, screen, _marks(session)),
                            lambda: ReplayTransport(path, prepared.task.start_url), name="replay",
                            dump=self._dump(session))


def _marks(session: TaskSession):
    """The set-of-marks labels of the session's active page, read when an adapter draws them."""
    from webeval.runtime.marks import interactive_elements  # the runtime reads the page, when an episode runs

    async def marks() -> list[Mark]:
        elements = await interactive_elements(session)
        return [Mark(i, element) for i, element in enumerate(elements)]

    return marks
