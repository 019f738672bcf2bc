"""Where a task's site lives: its host, and the registered domain that a website-level split keeps on one side.

The registered domain is the host's public suffix plus one label (`www.bbc.co.uk` -> `bbc.co.uk`), from the Public
Suffix List snapshot that the `publicsuffixlist` package ships (ICANN and private sections, so `alice.github.io` and
`bob.github.io` are two domains); nothing is ever fetched. A host with no registrar behind it (an IP address, a name
with no dot, or one under a special-use name: .test, .localhost, .invalid, .example, .local, .internal) has no
registered domain: its host, port and first path segment stand for it, since offline sites share such a host
(`offline.webeval.test/shop`, `/news`).
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from urllib.parse import urlsplit

SPECIAL_USE = frozenset({"test", "localhost", "invalid", "example", "local", "internal"})


def _special(host: str) -> bool:
    if "." not in host or host.rsplit(".", 1)[1] in SPECIAL_USE:
        return True
    if not (host.replace(".", "").isdigit() or ":" in host):
        return False  # a name; only what looks like an address is parsed as one
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def host_key(url: str) -> str:
    """The host of a URL (lower case, `www.` kept), or for a special-use host `host[:port]/first-segment`."""
    scheme, sep, rest = url.partition("://")
    netloc = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rpartition("@")[2]
    host = netloc[1:netloc.find("]")] if netloc.startswith("[") else netloc.rsplit(":", 1)[0] if ":" in netloc \
        else netloc
    host = host.lower().rstrip(".")
    if not sep or not host or not _special(host):
        return host
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{host}{port}/{parts.path.strip('/').split('/')[0]}"


@lru_cache(maxsize=1)
def _suffixes():
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()  # its bundled snapshot


@lru_cache(maxsize=1 << 18)
def registered_domain(key: str) -> str:
    """The registered domain of a host_key (itself for a special-use host, or a host that is a public suffix)."""
    if not key or "/" in key:
        return key
    return _suffixes().privatesuffix(key) or key


def registered_domain_of(url: str) -> str:
    return registered_domain(host_key(url))
