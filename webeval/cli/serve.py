"""`webeval serve --suite local|miniwob|tasks:FILE --slots N`: the rollout service for trainers (docs/training.md).

Step sessions in NeMo Gym's resources-server shape (/seed_session, /computer, /navigate, /tabs, /terminate, /verify,
/close_session), whole episodes in its agent-server shape (/run), /aggregate_metrics, /health and /metrics. It
listens on 127.0.0.1 unless told otherwise; any other address needs --token-env.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

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
    parser.add_argument("--suite", required=True, metavar="SPEC", help="local, miniwob or tasks:FILE")
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
    group = parser.add_argument_group("the policy of whole episodes (/run)")
    group.add_argument("--policy", choices=("oracle", "openai"), default=None,
                       help="oracle (the tasks' own solutions; the default for local and miniwob) or openai")
    group.add_argument("--policy-profile", metavar="NAME|PATH", help="model profile (docs/models.md)")
    group.add_argument("--policy-base-url", metavar="URL", help="OpenAI-compatible endpoint (overrides the profile)")
    group.add_argument("--policy-model", metavar="NAME", help="the served model's name (overrides the profile)")
    group.add_argument("--policy-api-key-env", metavar="NAME", help="variable holding the endpoint's key")
    group.add_argument("--no-token-ids", action="store_true",
                       help="do not ask the endpoint for token ids and log-probabilities (one that refuses them)")
    group.add_argument("--history", choices=("append-only", "windowed"), default="append-only",
                       help="how the prompt is kept across turns (default append-only, what trainers assert)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from webeval.cli import CommandError
    from webeval.service.access import AccessError
    from webeval.service.rollout_service import ServiceSettings
    from webeval.service.serving import PolicyOptions, ServeError, run_serve
    from webeval.service.suite_sources import SuiteError

    out = args.out or Path("reports") / "service" / datetime.now().strftime("%Y%m%d-%H%M%S")
    model = args.policy == "openai"
    settings = ServiceSettings(suite=args.suite, slots=args.slots, session_ttl_s=args.session_ttl,
                               run_queue=args.run_queue, allow_request_endpoint=args.allow_request_endpoint,
                               screen=args.screen, browser_path=args.browser,
                               history=args.history if model else None)
    policy = PolicyOptions(args.policy, args.policy_profile, args.policy_base_url, args.policy_model,
                           args.policy_api_key_env, token_ids=not args.no_token_ids, history=args.history)
    try:
        run_serve(args.suite, settings, policy, host=args.host, port=args.port, out=out, token_env=args.token_env,
                  max_body=args.max_body)
    except (AccessError, ServeError, SuiteError) as exc:
        raise CommandError(str(exc)) from None
    return 0
