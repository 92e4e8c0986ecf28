"""streamcue.interrupt: a signal that arrives inside a held block takes effect when the block ends.

Each case signals a child Python process of its own, never the test's: a signal that escaped its handler there
ends the child and fails the test, where in the test's process it would end the pytest worker (one timing run lost
a worker at about the place these tests run, cause unknown) and every test queued on it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PRELUDE = """\
import os, signal, threading
from streamcue.interrupt import Terminated, held, install

restore = install()
reached = []
"""


def outcome(body: str) -> list[str]:
    """Run ``body`` after :data:`PRELUDE` in a child process; the lines it printed (the child must end cleanly)."""
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr)
    return done.stdout.split()


@pytest.mark.parametrize("sig, raised", [("SIGTERM", "Terminated"), ("SIGINT", "KeyboardInterrupt")])
def test_a_signal_inside_a_held_block_is_raised_when_it_ends(sig, raised):
    printed = outcome(f"""
        try:
            with held():
                os.kill(os.getpid(), signal.{sig})
                for _ in range(1000):  # bytecodes run: an unheld handler would have raised by now
                    pass
                reached.append("end-of-block")
        except BaseException as exc:
            print(type(exc).__name__)
        print(*reached)
    """)
    assert printed == [raised, "end-of-block"]


def test_a_signal_delivered_through_another_thread_is_held_too():
    """A signal mask would not do: the kernel may hand the signal to a thread that does not block it."""
    printed = outcome("""
        try:
            with held():
                sender = threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGTERM))
                sender.start()
                sender.join()
                for _ in range(1000):
                    pass
                reached.append("end-of-block")
        except Terminated:
            print("Terminated")
        print(*reached)
    """)
    assert printed == ["Terminated", "end-of-block"]


def test_outside_a_held_block_the_signal_raises_at_once():
    printed = outcome("""
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10**6):
                pass
            print("not-raised")
        except Terminated:
            print("Terminated")
    """)
    assert printed == ["Terminated"]
