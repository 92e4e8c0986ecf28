"""Kill a build with SIGKILL while it waits on an LLM call: the scaffolding of the resume tests."""

import json
import signal
import subprocess
import threading
import time


class HangAtCall:
    """Wraps a stub responder: call number ``n`` hangs until :meth:`release` (after the build was killed)."""

    def __init__(self, responder, n=3):
        self.responder, self.n = responder, n
        self.seen = []
        self._released = threading.Event()

    def __call__(self, body):
        self.seen.append(body)
        if len(self.seen) == self.n and not self._released.is_set():
            self._released.wait(60)
            raise RuntimeError("client gone")
        return self.responder(body)

    def release(self):
        self._released.set()


def kill_at_hanging_call(cmd, env, hang, timeout_s=120):
    """Start ``cmd``, wait until it is blocked on the hanging call, SIGKILL it, then release the call."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + timeout_s
    while len(hang.seen) < hang.n and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert len(hang.seen) == hang.n, proc.stderr.read() if proc.poll() is not None else "build never reached the call"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    hang.release()


def resume_without_repeats(cmd, env, server):
    """Run the killed build again: it must succeed and no call may have been answered twice. The answered calls."""
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    answered = [json.dumps(b["messages"]) for b in server.requests if b.get("_answered")]
    assert len(answered) == len(set(answered))
    return answered
