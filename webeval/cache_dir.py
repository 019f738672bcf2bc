"""Where webeval keeps what it downloads or builds once for many runs: the one place the cache root is computed.

The root is the user's cache folder for webeval as platformdirs knows it (on Linux `$XDG_CACHE_HOME/webeval`, else
`~/.cache/webeval`). A part of the cache that a variable of its own may move elsewhere names it (`env=`): the
WebVoyager populations honour $WEBEVAL_CACHE, the judge protocols' prompt files $WEBEVAL_JUDGE_PROMPTS.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "webeval"


def cache_root() -> Path:
    return Path(platformdirs.user_cache_dir(APP, appauthor=False))


def cache_dir(*parts: str, env: str | None = None) -> Path:
    """The cache folder `parts` below the root, or the folder that `env` names when that variable is set; nothing
    is created."""
    if env and os.environ.get(env):
        return Path(os.environ[env])
    return cache_root().joinpath(*parts)
