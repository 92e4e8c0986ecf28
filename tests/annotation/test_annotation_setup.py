"""docs/annotation.md's setup block, run as written against a fresh Label Studio 1.23.2, then checked (the
minute its first start spends on database migrations is paid once per session: ``$LS_HOME/data`` starts as a
copy of the migrated database without any account, which is what that first start makes before the admin):
the default token kind works, legacy tokens do not, the annotators and the reviewer can log in, and the project
holds the three pushed records."""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CAPTAINCOOK4D
from hub_server import free_port
from label_studio_server import executable, migrated

httpx = pytest.importorskip("httpx")
pytest.importorskip("label_studio_sdk")

from streamcue.dataset_builders import captaincook4d  # noqa: E402
from streamcue.dataset_builders.output import run_builder  # noqa: E402
from streamcue.dataset_builders.registry import BUILDERS  # noqa: E402
from streamcue.io import iter_jsonl  # noqa: E402

#: The block run against a real server (a failing setup needs none: it fails before asking one).
needs_label_studio = pytest.mark.skipif(executable() is None, reason="no Label Studio server: ./dev.sh test installs "
                                        "it in .venv-label-studio (or set STREAMCUE_LABEL_STUDIO)")
DOC = Path(__file__).resolve().parents[2] / "docs" / "annotation.md"


def setup_block() -> str:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- setup:begin -->\n```bash\n(.*?)```\n<!-- setup:end -->", text, re.S)
    assert found, "docs/annotation.md lost its setup block"
    return found.group(1)


def setup_step() -> str:
    """The block's setup step, as written: setup's exports kept, then evaluated."""
    found = re.search(r"^LS_ENV=\$\(streamcue annotate setup .*?^eval .*?\n", setup_block(), re.S | re.M)
    assert found, "docs/annotation.md's setup block lost its setup step"
    return found.group(0)


@pytest.mark.parametrize("strict", [True, False], ids=["set -e", "plain shell"])
def test_a_failing_setup_stops_the_documented_block_with_its_error(tmp_path, strict):
    """``eval "$(streamcue annotate setup ...)"`` ran an empty string when setup failed and the next command went
    on without a token (issue 45). The documented step stops there, non-zero, under ``set -e`` or not, with
    setup's one-line error (here: an accounts file that exists, refused before any server is asked) above, and
    nothing after it runs."""
    (tmp_path / "accounts.tsv").write_text("ann1@example.org\tannotator\tshown-once\n")
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "LS_HOME": str(tmp_path), "LABEL_STUDIO_PASSWORD": "documented-admin-pass", "STREAMCUE_NO_PROGRESS": "1",
           "LABEL_STUDIO_URL": "http://127.0.0.1:9", "COLUMNS": "200"}
    script = ("set -euo pipefail\n" if strict else "") + setup_step() + "echo after-setup\n"
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "after-setup" not in done.stdout, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and str(tmp_path / "accounts.tsv") in errors[0] and "exists" in errors[0], done.stderr
    assert "Traceback" not in done.stderr and "LABEL_STUDIO_API_KEY" not in done.stdout
    if not strict:  # the eval is what stops it, saying so
        assert "LS_ENV: streamcue annotate setup failed: its error is above" in done.stderr, done.stderr
    assert (tmp_path / "accounts.tsv").read_text() == "ann1@example.org\tannotator\tshown-once\n"


@pytest.mark.label_studio
@pytest.mark.slow
@needs_label_studio
def test_the_documented_setup_runs_as_written(tmp_path):
    home = tmp_path / "ls"
    home.mkdir()
    (home / "venv").symlink_to(executable().parent.parent)  # installed already: the block skips pip
    shutil.copytree(migrated(), home / "data")  # migrated already: the block's first start makes only the admin
    work = tmp_path / "work"
    run_builder(BUILDERS["captaincook4d"], captaincook4d.Config(annotations=CAPTAINCOOK4D,
                                                                recordings=("1_25", "1_49", "1_43")), work / "out/cc4d")
    for _, video in iter_jsonl(work / "out/cc4d/videos.jsonl"):   # the recordings, where the block says
        (home / "files/cc4d" / video["uri"]).parent.mkdir(parents=True, exist_ok=True)
        (home / "files/cc4d" / video["uri"]).write_bytes(b"a recording (this test never plays it)")
    port = free_port()
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "LS_HOME": str(home), "LS_PORT": str(port), "LABEL_STUDIO_PASSWORD": "documented-admin-pass",
           "STREAMCUE_NO_PROGRESS": "1", "COLUMNS": "200"}
    script = "set -euo pipefail\n" + setup_block() + 'printf %s "$LABEL_STUDIO_API_KEY" > "$LS_HOME/token"\n'
    try:
        done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=900)
        log = (home / "label-studio.log").read_text()[-2000:] if (home / "label-studio.log").is_file() else ""
        assert done.returncode == 0, done.stdout + done.stderr + log
        assert "3 tasks imported into project 'cc4d check'" in done.stdout
        url, token = f"http://127.0.0.1:{port}", (home / "token").read_text()
        assert token.count(".") == 2  # a personal access token: a JWT
        assert token not in done.stdout + done.stderr

        # the token kind 1.23 issues by default works through the SDK; legacy tokens are off
        from label_studio_sdk import LabelStudio

        sdk = LabelStudio(base_url=url, api_key=token)
        assert sdk.users.whoami().email == "admin@example.org"
        assert httpx.get(f"{url}/api/current-user/whoami", headers={"Authorization": f"Token {token}"}
                         ).status_code == 401
        [project] = [p for p in sdk.projects.list() if p.title == "cc4d check"]
        assert project.maximum_annotations == 2
        records = sorted(t.data["record_id"] for t in sdk.tasks.list(project=project.id))
        assert records == ["1_25", "1_43", "1_49"]

        # every account can log in with the first password written for it, readable by its owner only
        accounts = home / "accounts.tsv"
        assert stat.S_IMODE(accounts.stat().st_mode) == 0o600
        rows = [line.split("\t") for line in accounts.read_text().splitlines()]
        assert [(e, r) for e, r, _ in rows] == [("ann1@example.org", "annotator"), ("ann2@example.org", "annotator"),
                                                ("rev@example.org", "reviewer")]
        for email, _, password in rows:
            client = httpx.Client(base_url=url, timeout=60)
            client.get("/user/login/")
            login = client.post("/user/login/", data={"email": email, "password": password,
                                                      "csrfmiddlewaretoken": client.cookies["csrftoken"]},
                                headers={"Referer": url})
            assert login.status_code == 302, email
        # no telemetry: the page the block's server serves has no Sentry DSN and analytics off
        page = client.get("/projects/").text
        assert "sentry_dsn: null" in page and "collect_analytics: false" in page and "sentry-cdn" not in page

        # running setup again keeps a working token and leaves the accounts alone; without it, it says why not
        again = subprocess.run([sys.executable, "-m", "streamcue", "annotate", "setup", "--admin", "admin@example.org",
                                "--annotator", "ann1@example.org", "--accounts", str(tmp_path / "again.tsv")],
                               env={**env, "LABEL_STUDIO_URL": url, "LABEL_STUDIO_API_KEY": token},
                               capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        assert "annotator ann1@example.org: exists already" in again.stderr
        assert again.stdout.splitlines()[1] == f"export LABEL_STUDIO_API_KEY={token}"
        assert (tmp_path / "again.tsv").read_text() == ""
        # an accounts file that exists is refused before any account is made
        kept = subprocess.run([sys.executable, "-m", "streamcue", "annotate", "setup", "--admin", "admin@example.org",
                               "--annotator", "late@example.org", "--accounts", str(accounts)],
                              env={**env, "LABEL_STUDIO_URL": url, "LABEL_STUDIO_API_KEY": token},
                              capture_output=True, text=True)
        assert kept.returncode == 2 and "exists" in kept.stderr and len(kept.stderr.splitlines()) == 1
        assert "late@example.org" not in {u.email for u in sdk.users.list()}
        lost = subprocess.run([sys.executable, "-m", "streamcue", "annotate", "setup", "--admin", "admin@example.org",
                               "--accounts", str(tmp_path / "x.tsv")], env={**env, "LABEL_STUDIO_URL": url},
                              capture_output=True, text=True)
        assert lost.returncode == 2 and "the admin already has a personal access token" in lost.stderr
        wrong = subprocess.run([sys.executable, "-m", "streamcue", "annotate", "setup", "--admin", "admin@example.org",
                                "--accounts", str(tmp_path / "x.tsv")],
                               env={**env, "LABEL_STUDIO_URL": url, "LABEL_STUDIO_PASSWORD": "wrong"},
                               capture_output=True, text=True)
        assert wrong.returncode == 2 and wrong.stderr.startswith("error: Label Studio at")
        assert "refused the login of admin@example.org" in wrong.stderr
    finally:
        pid_file = home / "label-studio.pid"
        if pid_file.is_file():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
            except ProcessLookupError:
                pass
