"""Child processes that must not outlive the harness, even when it is killed."""

from __future__ import annotations

import ctypes
import signal
import subprocess

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # The kernel sends SIGKILL to the child when the harness dies, SIGKILL included.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(
    args: list[str], pass_fds: tuple[int, ...] = (), env: dict[str, str] | None = None, stdin_pipe: bool = False
) -> subprocess.Popen:
    """Start a helper process with its output detached, so a pipe reader never waits on it."""
    return subprocess.Popen(
        args,
        stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=pass_fds,
        env=env,
        preexec_fn=_die_with_parent,
    )


def stop(proc: subprocess.Popen, timeout: float = 3.0) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
