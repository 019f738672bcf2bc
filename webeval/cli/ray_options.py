"""The Ray options of the commands that run rollouts (`webeval rollouts collect`, `webeval serve`): declared once, with
what each command runs there, and the one check of how they go together."""

from __future__ import annotations

from typing import Any

from webeval.cli import CommandError
from webeval.flags import Flag


def ray_flags(runs: str, lost: str, after: str = "") -> tuple[Flag, ...]:
    """`--ray ADDRESS` and `--resubmit-lost`, for a command that runs `runs` on the cluster (a lost one is `lost`)."""
    return (
        Flag("--ray", metavar="ADDRESS",
             help=f"run {runs} on the Ray cluster whose head is at ADDRESS (HOST:PORT, or auto): an actor on each "
                  f"node runs as many slots as the node's `browser` resource{after} (docs/training.md)"),
        Flag("--resubmit-lost", action="store_true",
             help=f"with --ray: run {lost} lost with its node (masked node_lost) once more on another node"),
    )


def check_ray_values(values: dict[str, Any]) -> None:
    if values["ray"] and values["slots"] is not None:
        raise CommandError("--slots does not go with --ray: each node runs as many slots as its `browser` resource "
                           "(ray start --resources '{\"browser\": N}')")
    if values["resubmit_lost"] and not values["ray"]:
        raise CommandError("--resubmit-lost goes with --ray: only a Ray node can be lost")
