"""A real Label Studio server on 127.0.0.1, run from its own virtualenv (it pins pyarrow<25 and
Django, which clash with ``datasets``): ``./dev.sh test`` installs it in ``.venv-label-studio``;
``$STREAMCUE_LABEL_STUDIO`` may point to another ``label-studio`` executable.

The first start of a server runs the database migrations (about a minute): :func:`migrated` runs them once,
without making any account, and keeps that data folder in ``.venv-label-studio/migrated-database``; every
server (the session's, and the one docs/annotation.md's setup starts) begins from a copy of it (seconds).
``./dev.sh test`` calls it when it installs the server, as part of the install; a test calls it when it is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from hub_server import free_port

REPO = Path(__file__).resolve().parents[1]
VENV = REPO / ".venv-label-studio"
MIGRATED = VENV / "migrated-database"
TOKEN = "streamcue-test-token-0123456789abcdef"
ADMIN = "admin@streamcue.test"


def executable() -> Path | None:
    path = Path(os.environ.get("STREAMCUE_LABEL_STUDIO") or VENV / "bin" / "label-studio")
    return path if path.is_file() else None


@dataclass
class LabelStudio:
    url: str
    token: str
    document_root: Path


def migrated() -> Path | None:
    """A data folder holding Label Studio's database with every migration run and no account (what its first
    start makes before the admin): made once by ``label-studio version``, then copied; None without a server."""
    exe = executable()
    if exe is None:
        return None
    if not MIGRATED.is_dir():
        work = Path(tempfile.mkdtemp(prefix="migrating-", dir=MIGRATED.parent))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "LANG": "C.UTF-8",
               "LABEL_STUDIO_BASE_DATA_DIR": str(work / "data")}
        done = subprocess.run([str(exe), "version"], env=env, cwd=work, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"Label Studio's migrations failed:\n{(done.stdout + done.stderr)[-3000:]}")
        try:
            (work / "data").rename(MIGRATED)  # atomic: another process may have made it meanwhile
        except OSError:
            pass
        shutil.rmtree(work, ignore_errors=True)
    return MIGRATED


@contextmanager
def label_studio(workdir: Path):
    """Start a server with a clean, migrated database; yields its URL, token and file root."""
    with _serve(workdir, migrated()) as server:
        yield server


@contextmanager
def _serve(workdir: Path, template: Path | None = None):
    exe = executable()
    data, root = workdir / "data", workdir / "files"
    root.mkdir(parents=True)
    if template is not None:
        shutil.copytree(template, data)
    port = free_port()
    env = {  # a clean environment: it also reads bare USERNAME, PASSWORD, PORT, HOST, DEBUG, CI
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workdir), "LANG": "C.UTF-8",
        "LABEL_STUDIO_BASE_DATA_DIR": str(data), "LABEL_STUDIO_USERNAME": ADMIN,
        "LABEL_STUDIO_PASSWORD": "streamcue-test-password", "LABEL_STUDIO_USER_TOKEN": TOKEN,
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true", "LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED": "true",
        "LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT": str(root), "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
        # no telemetry, as docs/annotation.md's setup: Sentry (server and page), usage analytics, PyPI version check
        "LABEL_STUDIO_SENTRY_DSN": "", "LABEL_STUDIO_FRONTEND_SENTRY_DSN": "",
        "LABEL_STUDIO_COLLECT_ANALYTICS": "false", "LABEL_STUDIO_LATEST_VERSION_CHECK": "false",
    }
    log = open(workdir / "label-studio.log", "w")
    proc = subprocess.Popen([str(exe), "start", "--no-browser", "--internal-host", "127.0.0.1", "-p", str(port)],
                            env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                request = urllib.request.Request(f"{url}/api/current-user/whoami",
                                                 headers={"Authorization": f"Token {TOKEN}"})
                urllib.request.urlopen(request, timeout=5)
                break
            except (OSError, urllib.error.HTTPError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("Label Studio did not "
                                       "start:\n" + (workdir / "label-studio.log").read_text()[-3000:])
                time.sleep(1)
        yield LabelStudio(url, TOKEN, root)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """One Label Studio server for the session (tests/conftest.py registers this module's fixtures): each test makes
    its own projects, and people through :func:`make_users`, which finds those another module made."""
    with label_studio(tmp_path_factory.mktemp("label-studio")) as running:
        yield running


@pytest.fixture
def connected(server, monkeypatch):
    """``$LABEL_STUDIO_URL``, ``$LABEL_STUDIO_API_KEY`` and the local-files document root set for the
    session's server (as in the shell of docs/annotation.md)."""
    monkeypatch.setenv("LABEL_STUDIO_URL", server.url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", server.token)
    monkeypatch.setenv("LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT", str(server.document_root))
    return server


def command_env(server: LabelStudio) -> dict[str, str]:
    """The variables a ``streamcue annotate`` command reads when it runs, set for ``server`` (for ``cli_run``)."""
    return {"LABEL_STUDIO_URL": server.url, "LABEL_STUDIO_API_KEY": server.token, "COLUMNS": "200",
            "STREAMCUE_NO_PROGRESS": "1", "LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT": str(server.document_root)}


def serve_videos(videos: Path, folder: str = "videos") -> Path:
    """A file for every video of ``videos`` (a videos.jsonl) under the connected server's local-files root,
    where ``push --video-root`` (the folder returned) finds them; files already there are kept."""
    from streamcue.io import iter_jsonl

    root = Path(os.environ["LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT"]) / folder
    for _, video in iter_jsonl(videos):
        path = root / video["uri"]
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"a video file (these tests never play it)")
    return root


def push_served(kind: str, records: Path, project: str, **options):
    """``annotate push`` with the records' videos served through local files (push refuses videos the
    page could not load); ``videos_root`` given in ``options`` is used as it is."""
    from streamcue.annotation.roundtrip import push

    if "videos_root" not in options:
        options["videos_root"] = serve_videos(options.get("videos") or records.with_name("videos.jsonl"))
    return push(kind, records, project, **options)


def make_users(server, names: tuple[str, ...], domain: str = "e2e.test", username: str = "e2e-{}") -> dict[str, int]:
    """People of the Label Studio ``server`` (``NAME@domain``, username ``username.format(NAME)``), their ids by
    name. The server is the session's: people another module made already are found, not made again."""
    import httpx

    headers = {"Authorization": f"Token {server.token}"}
    known = {u["email"]: u["id"] for u in httpx.get(f"{server.url}/api/users/", headers=headers).json()}
    users = {}
    for name in names:
        email = f"{name}@{domain}"
        if email not in known:
            r = httpx.post(f"{server.url}/api/users/", headers=headers,
                           json={"email": email, "username": username.format(name)})
            r.raise_for_status()
            known[email] = r.json()["id"]
        users[name] = known[email]
    return users
