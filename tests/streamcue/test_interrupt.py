"""streamcue.interrupt: a signal that arrives inside a held block takes effect when the block ends."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from streamcue.interrupt import Terminated, held, install


@pytest.fixture
def handlers():
    restore = install()
    yield
    restore()


@pytest.mark.parametrize("sig, raised", [(signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt)])
def test_a_signal_inside_a_held_block_is_raised_when_it_ends(handlers, sig, raised):
    reached = []
    with pytest.raises(raised):
        with held():
            os.kill(os.getpid(), sig)
            for _ in range(1000):  # bytecodes run: an unheld handler would have raised by now
                pass
            reached.append("end of block")
    assert reached == ["end of block"]


def test_a_signal_delivered_through_another_thread_is_held_too(handlers):
    """A signal mask would not do: the kernel may hand the signal to a thread that does not block it."""
    reached = []
    with pytest.raises(Terminated):
        with held():
            sender = threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGTERM))
            sender.start()
            sender.join()
            for _ in range(1000):
                pass
            reached.append("end of block")
    assert reached == ["end of block"]


def test_outside_a_held_block_the_signal_raises_at_once(handlers):
    with pytest.raises(Terminated):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10**6):
            pass
