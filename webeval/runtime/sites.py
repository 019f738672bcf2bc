"""Live websites: is a site reachable before its tasks start, the proxy a site is reached through, and pages that
are a CAPTCHA or an anti-bot wall rather than the site.

Proxy credentials come from the environment, and are declared secrets as they are read (webeval.outcomes.redact).
"""

from __future__ import annotations

import os
import re
import socket
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from webeval.outcomes.redact import declare, redact

_BLOCK_TITLES = re.compile(
    r"just a moment|attention required|are you a robot|robot check|verify you are (a )?human|captcha|"
    r"human verification|access denied|pardon our interruption|unusual traffic|security check|request blocked|"
    r"bot detection|you have been blocked",
    re.IGNORECASE,
)
_BLOCK_URLS = re.compile(
    r"google\.[a-z.]+/sorry/|/captcha|challenges\.cloudflare\.com|/cdn-cgi/challenge-platform|"
    r"/errors/validatecaptcha|captcha-delivery\.com|perfdrive\.com|/distil_r_captcha|/_incapsula_resource",
    re.IGNORECASE,
)


def blocked_page(title: str, url: str) -> str | None:
    """Why a page looks like a CAPTCHA or anti-bot wall (its title or URL), else None."""
    if _BLOCK_URLS.search(url or ""):
        return f"the page {url} is a bot check"
    match = _BLOCK_TITLES.search(title or "")
    if match:
        return f"the page titled {title!r} is a bot check"
    return None


@dataclass(frozen=True)
class SiteProxy:
    server: str  # scheme://host:port, no credentials
    username: str | None = None
    password: str | None = None
    credentials_env: str | None = None  # the variable that held "user:password"

    @classmethod
    def parse(cls, url: str, credentials_env: str | None = None, environ: dict[str, str] | None = None) -> "SiteProxy":
        environ = os.environ if environ is None else environ
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https", "socks5") or not parts.hostname:
            raise ValueError(f"proxy {url!r} is not a http://, https:// or socks5:// URL with a host")
        if parts.username or parts.password:
            raise ValueError("a proxy URL must not hold credentials: put 'user:password' in an environment "
                             "variable and name it with --site-proxy-auth")
        username = password = None
        if credentials_env:
            secret = environ.get(credentials_env)
            if not secret or ":" not in secret:
                raise ValueError(f"proxy credentials variable ${credentials_env} is not set to 'user:password'")
            username, password = secret.split(":", 1)
            declare(secret, username, password)
        port = f":{parts.port}" if parts.port else ""
        return cls(f"{parts.scheme}://{parts.hostname}{port}", username, password, credentials_env)

    def playwright(self) -> dict[str, str]:
        """Playwright's `proxy=` setting of a browser context."""
        proxy = {"server": self.server}
        if self.username is not None:
            proxy.update(username=self.username, password=self.password or "")
        return proxy

    def url_with_credentials(self) -> str:
        if self.username is None:
            return self.server
        scheme, rest = self.server.split("://", 1)
        return f"{scheme}://{quote(self.username, safe='')}:{quote(self.password or '', safe='')}@{rest}"

    def secrets(self) -> list[str]:
        found = [s for s in (self.password, self.username) if s]
        found += [quote(s, safe="") for s in found if quote(s, safe="") != s]
        return found

    def describe(self) -> str:
        return self.server + (f" (credentials from ${self.credentials_env})" if self.credentials_env else "")


def unreachable(url: str, timeout_s: float = 10.0, proxy: SiteProxy | None = None) -> str | None:
    """Why a site's start URL cannot be reached (DNS, refused, timeout, TLS, proxy), or None when it answers.

    Any HTTP answer counts as reachable, an error status or an anti-bot wall included: those are the episode's to
    meet, while this check only tells a site that is there from one that is not.
    """
    handlers: list[urllib.request.BaseHandler] = []
    if proxy is not None:
        if proxy.server.startswith("socks5"):
            return None  # urllib cannot speak SOCKS: the browser's first navigation is the check
        target = proxy.url_with_credentials()
        handlers.append(urllib.request.ProxyHandler({"http": target, "https": target}))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, headers={"User-Agent": "Mozilla/5.0 (webeval site check)"})
    try:
        with opener.open(request, timeout=timeout_s):
            return None
    except urllib.error.HTTPError as exc:
        if exc.code != 407:
            return None
        text = "the proxy refused its credentials (HTTP 407)"
    except urllib.error.URLError as exc:
        reason = exc.reason
        text = f"{type(reason).__name__}: {reason}" if isinstance(reason, BaseException) else str(reason)
    except (socket.timeout, TimeoutError):
        text = f"no answer within {timeout_s:g} s"
    except (ssl.SSLError, ConnectionError, OSError, ValueError) as exc:
        text = f"{type(exc).__name__}: {exc}"
    return redact(f"{url} is unreachable: {text}", *(proxy.secrets() if proxy else ()))
