"""`webeval serve --suite NAME --slots N`: the rollout service for trainers (docs/training.md).

Step sessions in NeMo Gym's resources-server shape (/seed_session, /computer, /navigate, /tabs, /terminate, /verify,
/close_session), whole episodes in its agent-server shape (/run), /aggregate_metrics, /health and /metrics. It
listens on 127.0.0.1 unless told otherwise; any other address needs --token-env. With --ray ADDRESS the whole
episodes run on the node actors of a Ray cluster and the step routes are refused (409). The suite's own options
(`--miniwob-seeds`, `--population`, the judge's, ...) are taken after `--suite`; `--help` with a `--suite` lists them.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from webeval.cli import CommandError
from webeval.cli.ray_options import check_ray_values, ray_flags
from webeval.cli.suite_commands import suite_command_values
from webeval.flags import Flag, OptionError, add_arguments
from webeval.policy.choice import POLICY_FLAGS
from webeval.run_settings import RUN_DIR, RUN_FLAGS

STOP_EXIT_CODE = 3  # as `webeval rollouts collect`: the policy endpoint cannot serve, so nothing can run
DEFAULT_SLOTS = 4
OWN_FLAGS = (
    Flag("--suite", default="local", metavar="NAME",
         help="local (default), miniwob, webvoyager, rubric or tasks:FILE"),
    Flag("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"),
    Flag("--port", type=int, default=8100, help="port (default 8100; 0: any free one, said on stdout)"),
    Flag("--out", metavar="DIR", help="the collection folder: rollouts.jsonl, results.jsonl, screenshots (default "
                                      "reports/service/<date-time>)"),
    Flag("--session-ttl", type=float, default=120.0, metavar="S",
         help="seconds a step session may wait for its next tool call before it is closed and masked "
              "session_expired (default 120)"),
    Flag("--token-env", metavar="NAME",
         help="environment variable holding the bearer token every request must carry (needed for any --host but "
              "loopback)"),
    Flag("--max-body", type=int, default=4 << 20, metavar="BYTES",
         help="largest request body accepted; larger is 413 (default 4 MiB)"),
    Flag("--run-queue", type=int, default=256, metavar="N",
         help="whole episodes (/run) that may wait for a slot before more are refused with 429 (default 256)"),
    Flag("--allow-request-endpoint", action="store_true",
         help="let a /run request name its own policy endpoint (policy_base_url)"),
    Flag("--no-token-ids", action="store_true",
         help="do not ask the endpoint for token ids and log-probabilities (for an endpoint that refuses vLLM's "
              "parameters)"),
    Flag("--history", choices=("append-only", "windowed"), default="append-only",
         help="the /run policy's prompt: append-only (each turn extends the last; the default) or windowed"),
)
RAY_FLAGS = ray_flags("whole episodes (/run)", "a /run", after="; the step routes answer 409")
COMMON_FLAGS = (*OWN_FLAGS, *RAY_FLAGS, *POLICY_FLAGS, *(flag for flag in RUN_FLAGS if flag is not RUN_DIR))


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("serve", add_help=False, help="serve rollouts to a trainer over HTTP (NeMo Gym's "
                                   "shapes)", description=__doc__.splitlines()[0])
    parser.add_argument("-h", "--help", action="store_true", help="show this help (with --suite: its options)")
    add_arguments(parser, COMMON_FLAGS)
    parser.set_defaults(func=run, extra=[])


def _check(values: dict[str, Any]) -> None:
    for name in ("session_ttl", "max_body", "run_queue"):
        if values[name] <= 0:
            raise CommandError(f"--{name.replace('_', '-')} must be positive")
    if not 0 <= values["port"] <= 65535:
        raise CommandError("--port must be 0 to 65535")
    check_ray_values(values)


def run(args: argparse.Namespace) -> int:
    parsed = suite_command_values(args, "webeval serve", __doc__, "service, policy and runtime", COMMON_FLAGS)
    if parsed is None:
        return 0
    values, suite_values = parsed
    _check(values)
    return _serve(args.suite, suite_values, values)


def _serve(suite: str, suite_values: dict[str, Any], values: dict[str, Any]) -> int:
    from webeval.run_settings import run_settings
    from webeval.service.access import AccessError
    from webeval.service.rollout_service import ServiceSettings
    from webeval.service.serving import EndpointDown, Listening, OnRay, ServeError, run_serve

    out = Path(values["out"] or Path("reports") / "service" / datetime.now().strftime("%Y%m%d-%H%M%S"))
    try:
        runtime = run_settings(values, default_slots=DEFAULT_SLOTS)
        settings = ServiceSettings.of(runtime, suite=suite, session_ttl_s=values["session_ttl"],
                                      run_queue=values["run_queue"],
                                      allow_request_endpoint=values["allow_request_endpoint"],
                                      history=values["history"])
        where = Listening(values["host"], values["port"], out, values["token_env"], values["max_body"])
        ray = OnRay(values["ray"], values["resubmit_lost"]) if values["ray"] else None
        run_serve(suite, suite_values, values, settings, where, token_ids=not values["no_token_ids"], ray=ray)
    except EndpointDown as exc:
        print(f"webeval serve: {exc}", file=sys.stderr)
        return STOP_EXIT_CODE
    except (AccessError, ServeError, OptionError) as exc:
        raise CommandError(str(exc)) from None
    return 0
