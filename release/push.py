"""``streamcue release push``: publish a built release as one commit, tagged ``vX.Y.Z``.

Two targets, committed and tagged the same way:

* the Hugging Face Hub (or any server speaking its API, via ``--endpoint``/``HF_ENDPOINT``):
  one atomic ``upload_folder`` commit, then ``create_tag`` on exactly that commit. The token
  comes from the environment (``HF_TOKEN``) or the Hub client's own login, and is never
  written to a file or log by streamcue.
* a local git repository at ``GIT_ROOT/datasets/ORG/NAME``, laid out the way Hub-compatible
  read servers expect mirrors (e.g. ``olah`` with ``mirrors-path = GIT_ROOT``), so a pinned
  ``load_dataset(..., revision="vX.Y.Z")`` can be tested without network.

A version that is already tagged in the target is refused: a published version is never
overwritten.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from streamcue.release.manifest import check_repo_id, verify_files
from streamcue.errors import ConfigError, ServiceError, StreamcueError
from streamcue.extras import require

__all__ = ["ReleasePushResult", "push", "check_endpoint"]


@dataclass
class ReleasePushResult:
    target: str
    commit: str
    tag: str


def push(dist: str | Path, repo: str, *, git_root: str | Path | None = None, endpoint: str | None = None,
         private: bool = False) -> ReleasePushResult:
    """Publish ``dist`` (checked first: every file against its manifest, every verified record's signature against
    the release's key, as a reader will) to the Hub or a local git repository."""
    from streamcue.release.diff import read_release

    org, name = check_repo_id(repo)
    if endpoint is not None:
        check_endpoint(endpoint)
    manifest = verify_files(dist)
    read_release(dist)
    tag = f"v{manifest['version']}"
    message = f"Release {tag}: {manifest['title']}"
    if git_root is not None:
        return _push_git(Path(dist), Path(git_root) / "datasets" / org / name, tag, message)
    return _push_hub(Path(dist), repo, tag, message, endpoint, private)


def check_endpoint(endpoint: str) -> None:
    """Refuse an ``--endpoint`` that is not an http(s) URL with a host (a bad option, exit 2, before any request)."""
    from urllib.parse import urlsplit

    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--endpoint {endpoint!r} is not an http(s) URL of a Hub-compatible server "
                          "(e.g. https://huggingface.co)")


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "streamcue", "GIT_AUTHOR_EMAIL": "streamcue@localhost",
           "GIT_COMMITTER_NAME": "streamcue", "GIT_COMMITTER_EMAIL": "streamcue@localhost"}
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
    except FileNotFoundError:
        raise ServiceError("git is not installed; it is needed for a --git-root target") from None
    except subprocess.CalledProcessError as exc:
        raise ServiceError(f"git {args[0]} failed in {repo}: "
                           f"{(exc.stderr or exc.stdout).strip().splitlines()[-1]}") from None
    return done.stdout.strip()


def _push_git(dist: Path, repo: Path, tag: str, message: str) -> ReleasePushResult:
    if not (repo / ".git").is_dir():
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "-q", "-b", "main")
    if _git(repo, "tag", "--list", tag):
        raise ConfigError(f"{tag} is already published in {repo}; a published version is never overwritten")
    for child in repo.iterdir():  # the commit holds exactly the release: files of older versions go
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    shutil.copytree(dist, repo, dirs_exist_ok=True)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", message)
    _git(repo, "tag", "-a", tag, "-m", message)
    return ReleasePushResult(str(repo), _git(repo, "rev-parse", "HEAD"), tag)


def _push_hub(dist: Path, repo: str, tag: str, message: str, endpoint: str | None, private: bool) -> ReleasePushResult:
    hub = require("huggingface_hub", "release")
    api = hub.HfApi(endpoint=endpoint)
    where = endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    try:
        api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
        tags = {ref.name for ref in api.list_repo_refs(repo, repo_type="dataset").tags}
        if tag in tags:
            raise ConfigError(f"{tag} is already published in {repo}; a published version is never overwritten")
        commit = api.upload_folder(folder_path=str(dist), repo_id=repo, repo_type="dataset",
                                   commit_message=message, delete_patterns=["data/**", "figures/**", "videos/**"])
        api.create_tag(repo, tag=tag, tag_message=message, revision=commit.oid, repo_type="dataset")
    except hub.errors.HfHubHTTPError as exc:
        status = getattr(exc.response, "status_code", None)
        hint = " (set HF_TOKEN to a token with write access)" if status in (401, 403) else ""
        raise ServiceError(f"{where}: pushing {repo} failed with HTTP {status}{hint}") from None
    except StreamcueError:
        raise
    except Exception as exc:  # noqa: BLE001 - refused, DNS, timeout, TLS: whatever HTTP stack the Hub client uses
        raise ServiceError(f"{where}: could not reach the Hub ({type(exc).__name__}: {exc})") from None
    return ReleasePushResult(f"{where}/datasets/{repo}", commit.oid, tag)
