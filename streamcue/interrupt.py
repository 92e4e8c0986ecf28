"""Ctrl-C and SIGTERM end the whole process tree cleanly: exit 130 or 143, nothing left behind.

:func:`install` turns SIGTERM into :class:`Terminated` (SIGINT already raises
``KeyboardInterrupt``), so the ``except``/``finally`` blocks that remove temporary files run
as the exception unwinds. Code that starts child processes registers a hook with
:func:`on_interrupt` (kill the ffmpeg children, stop the worker processes); :func:`finish`
runs the hooks and leaves at once with ``os._exit``, so that native threads (onnxruntime,
ffmpeg readers) are not torn down by the interpreter's shutdown, which can abort.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Terminated", "install", "on_interrupt", "finish", "held", "held_back", "EXIT_SIGINT", "EXIT_SIGTERM"]

EXIT_SIGINT = 130
EXIT_SIGTERM = 143
_HOOKS: list[Callable[[], Any]] = []
_HELD = [0]  # depth of :func:`held` blocks in the main thread
_PENDING: list[int] = []  # signals that arrived inside one


class Terminated(BaseException):
    """SIGTERM arrived (a BaseException, like KeyboardInterrupt: ``except Exception`` lets it through)."""


def _raise_terminated(signum: int, frame: Any) -> None:
    if not held_back(signum):
        raise Terminated()


def _raise_interrupt(signum: int, frame: Any) -> None:
    if not held_back(signum):
        raise KeyboardInterrupt()


def held_back(signum: int) -> bool:
    """For a signal handler: True (and the signal kept for later) while a :func:`held` block runs."""
    if _HELD[0]:
        _PENDING.append(signum)
        return True
    return False


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A few lines that a signal must not cut (a temporary file made but not yet known to the cleanup).

    A SIGINT or SIGTERM that arrives inside takes effect when the block ends. A signal mask cannot do
    this: the kernel hands a process's signal to any thread that does not block it. Outside the main
    thread (where Python runs handlers) the block holds nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _HELD[0] += 1
    try:
        yield
    finally:
        _HELD[0] -= 1
        if not _HELD[0] and _PENDING:
            signum = _PENDING[0]
            _PENDING.clear()
            signal.raise_signal(signum)  # its handler runs now, outside the block


def install() -> Callable[[], None]:
    """SIGTERM raises :class:`Terminated` in the main thread; SIGINT keeps raising KeyboardInterrupt.

    Returns a function that puts the previous handlers back (for a caller that goes on running).
    """
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGTERM, _raise_terminated)
    signal.signal(signal.SIGINT, _raise_interrupt)

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)

    return restore


def on_interrupt(hook: Callable[[], Any]) -> None:
    """Run ``hook`` (once, errors ignored) before the process exits on a signal."""
    if hook not in _HOOKS:
        _HOOKS.append(hook)


def finish(code: int, message: str = "interrupted") -> None:
    """Run the hooks, say ``message`` on stderr and exit with ``code`` now."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for hook in reversed(_HOOKS):
        try:
            hook()
        except BaseException:  # noqa: BLE001 - a failing hook must not stop the others or the exit
            pass
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)
