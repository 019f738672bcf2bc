"""`webeval serve --suite local|miniwob|tasks:FILE|webvoyager --slots N`: the rollout service for trainers
(docs/training.md).

Step sessions in NeMo Gym's resources-server shape (/seed_session, /computer, /navigate, /tabs, /terminate, /verify,
/close_session), whole episodes in its agent-server shape (/run), /aggregate_metrics, /health and /metrics. It
listens on 127.0.0.1 unless told otherwise; any other address needs --token-env.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from webeval.benchmarks import PACKAGES, benchmark_flags
from webeval.flags import OptionError, add_arguments, values_of
from webeval.policy.choice import POLICY_FLAGS

DEFAULT_PORT = 8100


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} is not positive")
        return value

    return parse


def _screen(text: str) -> tuple[int, int]:
    width, _, height = text.lower().partition("x")
    if not (width.isdigit() and height.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT")
    return int(width), int(height)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("serve", help="serve rollouts to a trainer over HTTP (NeMo Gym's shapes)",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("--suite", required=True, metavar="SPEC",
                        help="the benchmark: local, miniwob, webvoyager, rubric or tasks:FILE")
    parser.add_argument("--slots", type=_positive(int), default=4, help="browsers run at once (default 4)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="the collection folder: rollouts.jsonl, results.jsonl, screenshots (default "
                             "reports/service/<date-time>)")
    parser.add_argument("--session-ttl", type=_positive(float), default=120.0, metavar="S",
                        help="seconds a step session may wait for its next tool call before it is closed and masked "
                             "session_expired (default 120)")
    parser.add_argument("--token-env", metavar="NAME",
                        help="environment variable holding the bearer token every request must carry (needed for "
                             "any --host but loopback)")
    parser.add_argument("--max-body", type=_positive(int), default=4 << 20, metavar="BYTES",
                        help="largest request body accepted; larger is 413 (default 4 MiB)")
    parser.add_argument("--run-queue", type=_positive(int), default=256, metavar="N",
                        help="whole episodes (/run) that may wait for a slot before more are refused with 429")
    parser.add_argument("--allow-request-endpoint", action="store_true",
                        help="let a /run request name its own policy endpoint (policy_base_url)")
    parser.add_argument("--screen", type=_screen, default=(1280, 720), metavar="WxH", help="default 1280x720")
    parser.add_argument("--browser", default=None, metavar="PATH", help="the Chromium to run (default: found)")
    group = parser.add_argument_group("who acts in whole episodes (/run)")
    add_arguments(group, POLICY_FLAGS)
    group.add_argument("--no-token-ids", action="store_true",
                       help="do not ask the endpoint for token ids and log-probabilities (one that refuses them)")
    group.add_argument("--history", choices=("append-only", "windowed"), default="append-only",
                       help="how the prompt is kept across turns (default append-only, what trainers assert)")
    _benchmark_options(parser)
    parser.set_defaults(func=run)


def _benchmark_options(parser: argparse.ArgumentParser) -> None:
    """Each benchmark's own options (a flag two benchmarks share, such as the judge's, once)."""
    seen = {action for action in parser._option_string_actions}
    for name in PACKAGES:
        flags = [flag for flag in benchmark_flags(name) if flag.name not in seen]
        if flags:
            add_arguments(parser.add_argument_group(f"the {name} benchmark"), flags)
            seen |= {flag.name for flag in flags}


def _values(args: argparse.Namespace) -> dict:
    """The policy's and the benchmarks' option values, by destination."""
    flags = [*POLICY_FLAGS, *(flag for name in PACKAGES for flag in benchmark_flags(name))]
    return values_of(args, flags)


def run(args: argparse.Namespace) -> int:
    from webeval.cli import CommandError
    from webeval.service.access import AccessError
    from webeval.service.rollout_service import ServiceSettings
    from webeval.service.serving import Listening, ServeError, run_serve

    out = args.out or Path("reports") / "service" / datetime.now().strftime("%Y%m%d-%H%M%S")
    settings = ServiceSettings(suite=args.suite, slots=args.slots, session_ttl_s=args.session_ttl,
                               run_queue=args.run_queue, allow_request_endpoint=args.allow_request_endpoint,
                               screen=args.screen, browser_path=args.browser, history=args.history)
    where = Listening(args.host, args.port, out, args.token_env, args.max_body)
    try:
        run_serve(args.suite, _values(args), settings, where, token_ids=not args.no_token_ids)
    except (AccessError, ServeError, OptionError) as exc:
        raise CommandError(str(exc)) from None
    return 0
