"""Rollouts across the nodes of a Ray cluster (docs/training.md, "Across nodes with Ray"): an actor per node owns
that node's slots (one unit of the custom resource `browser` each) and opens the benchmark there; a router on the
head sends each request to an actor with a free slot and writes rollouts.jsonl. Screenshots stay on the node that
took them: a record names its node and the folder there (`node`, `node_root`) and each image by path and sha256.
An actor or node that dies masks its rollouts in flight `node_lost` (reward null), and resubmits them once if asked.

Needs Ray (`pip install 'pytest-webeval[ray]'`); nothing else in webeval imports it."""

from webeval.rollouts.ray.cluster import (BROWSER, CONNECT_TIMEOUT_S, BrowserNode, RayUnreachable, browser_nodes,
                                          connect)
from webeval.rollouts.ray.node_actor import BenchmarkOpener, ChosenPolicies, NodeRollouts, PoliciesFactory
from webeval.rollouts.ray.on_ray import RayRollouts, collect_on_ray, known_tasks
from webeval.rollouts.ray.router import LOST_ATTEMPTS, Member, RayRouter

__all__ = ["BROWSER", "CONNECT_TIMEOUT_S", "BenchmarkOpener", "BrowserNode", "ChosenPolicies", "LOST_ATTEMPTS",
           "Member", "NodeRollouts", "PoliciesFactory", "RayRollouts", "RayRouter", "RayUnreachable", "browser_nodes",
           "collect_on_ray", "connect", "known_tasks"]
