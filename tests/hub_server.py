"""A real Hub-compatible read server on 127.0.0.1 (olah, offline) serving local git repositories."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def olah_server(mirrors: Path, workdir: Path, probe_repo: str):
    """Serve ``mirrors/datasets/ORG/NAME`` git repositories; yields the endpoint URL."""
    port = free_port()
    config = workdir / "olah.toml"
    config.write_text(
        "[basic]\n"
        f'host = "127.0.0.1"\nport = {port}\n'
        f'repos-path = "{workdir / "olah-repos"}"\nmirrors-path = ["{mirrors}"]\n'
        f'mirror-netloc = "127.0.0.1:{port}"\nmirror-lfs-netloc = "127.0.0.1:{port}"\n'
        "[accessibility]\noffline = true\n"
    )
    cli = Path(sys.executable).with_name("olah-cli")
    cli = cli if cli.exists() else Path(shutil.which("olah-cli") or cli)  # a worktree's venv borrows main's tools
    log = open(workdir / "olah.log", "w")
    proc = subprocess.Popen([str(cli), "-c", str(config)], cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/api/datasets/{probe_repo}/revision/main", timeout=2)
                break
            except urllib.error.HTTPError:  # it answers: it is up
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"olah did not start: {(workdir / 'olah.log').read_text()[-2000:]}")
                time.sleep(0.3)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
