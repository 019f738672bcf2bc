"""Joining a Ray cluster within a bound, and where its browsers are.

`ray.init(address=...)` against an address where no Ray head answers retries for as long as it is left to (measured:
more than five minutes, logging a warning every few seconds), so a wrong `--ray ADDRESS` would hang the command.
Before it is called the address is checked: a TCP connection within the bound, then the HTTP/2 greeting that the
head's GCS (a gRPC server) answers at once and nothing else on the port does; `ray.init` itself is bounded too.
"""

from __future__ import annotations

import logging
import socket
import threading
from dataclasses import dataclass

NAMESPACE = "webeval"
BROWSER = "browser"  # the custom resource: one unit per slot (`ray start --resources '{"browser": N}'`)
CONNECT_TIMEOUT_S = 10.0
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # and an empty SETTINGS
_SETTINGS = 4


class RayUnreachable(Exception):
    """No Ray cluster could be joined at the address given: one line that says what to do."""


@dataclass(frozen=True)
class BrowserNode:
    node_id: str
    address: str
    browsers: int  # units of the `browser` resource: the slots this node may run


def connect(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Join the cluster whose head is at `address` (HOST:PORT, or `auto` for the one started on this machine) as a
    driver; RayUnreachable with one line when it cannot be joined within `timeout_s`. Joined already: nothing."""
    import ray

    if ray.is_initialized():
        return
    if address != "auto":
        host, port = _split(address)
        _probe(address, host, port, timeout_s)
    failure: list[BaseException] = []

    def join() -> None:
        try:
            ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, logging_level=logging.ERROR)
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    joiner = threading.Thread(target=join, name="ray-connect", daemon=True)
    joiner.start()
    joiner.join(timeout_s)
    if joiner.is_alive():
        raise RayUnreachable(f"the Ray cluster at {address} did not accept this driver within {timeout_s:g} s: "
                             "run the collection on a node of that cluster, with the Ray version it runs")
    if failure:
        said = str(failure[0]).strip().splitlines()
        raise RayUnreachable(f"cannot join the Ray cluster at {address}: {said[0] if said else type(failure[0])}")


def _split(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RayUnreachable(f"--ray {address!r} is not HOST:PORT of a Ray head (or `auto`)")
    return host.strip("[]"), int(port)


def _probe(address: str, host: str, port: int, timeout_s: float) -> None:
    start = f"start one with `ray start --head --resources '{{\"{BROWSER}\": N}}'`"
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as connection:
            connection.settimeout(timeout_s)
            connection.sendall(_HTTP2_PREFACE)
            frame = connection.recv(9)
    except OSError as exc:
        why = f"no answer within {timeout_s:g} s" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise RayUnreachable(f"no Ray cluster answers at {address} ({why.lower()}): {start}") from None
    if len(frame) < 4 or frame[3] != _SETTINGS:
        raise RayUnreachable(f"{address} answers, but not as a Ray head (its GCS port speaks gRPC): give the address "
                             f"that `ray start --head` printed, or {start}")


def browser_nodes() -> list[BrowserNode]:
    """The cluster's live nodes that offer the `browser` resource, with how many units each."""
    import ray

    found = []
    for node in ray.nodes():
        units = int(node.get("Resources", {}).get(BROWSER, 0))
        if node.get("Alive") and units > 0:
            found.append(BrowserNode(node["NodeID"], node.get("NodeManagerAddress", ""), units))
    return found


def actors_for(nodes: list[BrowserNode], slots_per_actor: int | None) -> list[tuple[BrowserNode, int]]:
    """(node, slots) for each actor to place: one per node owning all its browsers, or as many of
    `slots_per_actor` slots as each node's browsers allow."""
    if slots_per_actor is None:
        return [(node, node.browsers) for node in nodes]
    if slots_per_actor < 1:
        raise ValueError(f"slots per actor must be at least 1, not {slots_per_actor}")
    return [(node, slots_per_actor) for node in nodes for _ in range(node.browsers // slots_per_actor)]
