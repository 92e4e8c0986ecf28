"""Kill a build with SIGKILL while it waits on an LLM call: the scaffolding of the resume tests."""

import json
import signal
import subprocess
import sys
import threading
import time

#: The variables a build reads when it runs (not at import): what a resume in this process is given.
RUN_ENV = ("STREAMCUE_CACHE_DIR", "STREAMCUE_NO_PROGRESS")


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


def resume_in_process(cmd, env):
    """``cmd`` (``python -m streamcue ...``) run in this process with the variables of ``env`` it reads when it runs
    (the cache folder): only the kill needs a process of its own; the resume reads what the killed one left."""
    from conftest import cli_run

    assert cmd[:3] == [sys.executable, "-m", "streamcue"], cmd
    return cli_run(*cmd[3:], env={name: env[name] for name in RUN_ENV if name in env})


def resume_without_repeats(cmd, env, server):
    """Run the killed build again (in this process): it must succeed and no call may have been answered twice. The
    answered calls."""
    done = resume_in_process(cmd, env)
    assert done.returncode == 0, done.stderr
    answered = [json.dumps(b["messages"]) for b in server.requests if b.get("_answered")]
    assert len(answered) == len(set(answered))
    return answered
