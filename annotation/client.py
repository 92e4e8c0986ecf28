"""Talking to a Label Studio server through ``label-studio-sdk``, with one-line errors.

The server URL comes from ``--url`` or ``$LABEL_STUDIO_URL``; the token from
``$LABEL_STUDIO_API_KEY`` only (never an option, so it stays out of shell history, logs and
files).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError, ServiceError
from streamcue.extras import require

__all__ = ["label_config", "config_kind", "Server", "server_url", "connect", "find_project", "project_for",
           "projects_of_kind", "records_project", "export_tasks", "user_names", "ensure_local_storage"]


_MARKER = re.compile(r"<!--\s*streamcue:(\w+):(v\d+)\s*-->")
_GUIDELINE_FILE = re.compile(r"(\w+)\.guideline\.v(\d+)\.md")
_GUIDELINE_MARK = re.compile(r"streamcue guideline (\w+\.v\d+)")


_CONFIG_FILE = re.compile(r"(\w+)\.v(\d+)\.xml")


@cache
def label_config(kind: str) -> str:
    """The newest labeling config of a record kind (``annotation/configs/<kind>.v<N>.xml``; a changed
    config is a new file, marked ``<!-- streamcue:<kind>:v<N> -->``)."""
    folder = resources.files("streamcue.annotation").joinpath("configs")
    versions = {int(m.group(2)): f for f in folder.iterdir() if (m := _CONFIG_FILE.fullmatch(f.name))
                and m.group(1) == kind}
    if not versions:
        raise ConfigError(f"no labeling config for {kind} records in the package")
    return versions[max(versions)].read_text(encoding="utf-8")


@cache
def guideline(kind: str) -> tuple[str, str]:
    """The newest guideline of a record kind: its version (``interval_qa.v1``) and its HTML.

    Guidelines are Markdown files beside the labeling configs (``<kind>.guideline.v<N>.md``); a
    changed guideline is a new file. Each ends with the line ``streamcue guideline <kind>.v<N>``,
    which the annotators see and :func:`guideline_version` finds again in the project.
    """
    markdown_it = require("markdown_it", "annotation", "markdown-it-py")
    folder = resources.files("streamcue.annotation").joinpath("configs")
    versions = {int(m.group(2)): f for f in folder.iterdir() if (m := _GUIDELINE_FILE.fullmatch(f.name))
                and m.group(1) == kind}
    if not versions:
        raise ConfigError(f"no guideline for {kind} records in the package")
    text = versions[max(versions)].read_text(encoding="utf-8")
    version = guideline_version(text)
    if version != f"{kind}.v{max(versions)}":
        raise ConfigError(f"guideline {kind}.v{max(versions)} does not end with its version line "
                          f"'streamcue guideline {kind}.v{max(versions)}'")
    return version, markdown_it.MarkdownIt("commonmark").render(text)


def guideline_version(text: str | None) -> str | None:
    """The guideline version named in a project's instructions (None when it has none)."""
    match = _GUIDELINE_MARK.search(text or "")
    return match.group(1) if match else None


def config_kind(config: str) -> str | None:
    match = _MARKER.search(config or "")
    return match.group(1) if match else None


@dataclass
class Server:
    url: str
    client: Any

    def call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run one SDK call; connection problems and HTTP errors become ServiceError lines."""
        return self._run(what, fn, args, kwargs, None)

    def submit(self, what: str, given: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Like :meth:`call` for a call that carries what the user gave (``given``, e.g. a project title):
        the server refusing it (HTTP 400 with validation errors) is a ConfigError (exit 2), not a server failure."""
        return self._run(what, fn, args, kwargs, given)

    def _run(self, what: str, fn: Any, args: Any, kwargs: Any, given: str | None) -> Any:
        sdk = require("label_studio_sdk", "annotation", "label-studio-sdk")
        httpx = require("httpx", "annotation")
        try:
            return fn(*args, **kwargs)
        except sdk.core.api_error.ApiError as exc:
            if exc.status_code in (401, 403):
                raise ServiceError(f"Label Studio at {self.url} refused the token (HTTP {exc.status_code}); "
                                   "check $LABEL_STUDIO_API_KEY") from None
            detail = exc.body.get("detail") if isinstance(exc.body, dict) else None
            invalid = exc.body.get("validation_errors") if isinstance(exc.body, dict) else None
            if isinstance(invalid, dict) and invalid:  # {'title': ['Ensure this field has at least 3 characters.']}
                field, why = next(iter(invalid.items()))
                detail = f"{field}: {why[0] if isinstance(why, list) and why else why}"
                if given is not None and exc.status_code == 400:
                    raise ConfigError(f"Label Studio at {self.url} refused {given} ({detail})") from None
            raise ServiceError(f"Label Studio at {self.url}: {what} failed with HTTP {exc.status_code}"
                               + (f" ({detail})" if detail else "")) from None
        except httpx.HTTPError as exc:
            raise ServiceError(f"cannot reach Label Studio at {self.url} ({type(exc).__name__}); is it "
                               f"running?") from None


def server_url(url: str | None = None) -> str:
    """The Label Studio URL: ``url`` (``--url``) or ``$LABEL_STUDIO_URL``, without a trailing slash."""
    url = (url or os.environ.get("LABEL_STUDIO_URL") or "").rstrip("/")
    if not url:
        raise ConfigError("no Label Studio URL: pass --url or set LABEL_STUDIO_URL")
    return url


def connect(url: str | None = None) -> Server:
    sdk = require("label_studio_sdk", "annotation", "label-studio-sdk")
    url = server_url(url)
    token = os.environ.get("LABEL_STUDIO_API_KEY")
    if not token:
        raise ConfigError("no Label Studio token: set LABEL_STUDIO_API_KEY (Account & Settings > Access Token)")
    server = Server(url, sdk.LabelStudio(base_url=url, api_key=token, timeout=120))
    server.call("checking the token", server.client.users.whoami)
    return server


def find_project(server: Server, title: str) -> Any | None:
    projects = server.call("listing projects", lambda: list(server.client.projects.list(title=title)))
    exact = [p for p in projects if p.title == title]
    return exact[0] if exact else None


def project_for(server: Server, title: str, kind: str | None = None, *, create: bool = False) -> tuple[Any, str]:
    """The project named ``title`` and its record kind; created when asked and missing."""
    project = find_project(server, title)
    if project is None:
        if not create:
            raise ConfigError(f"no Label Studio project named {title!r} at {server.url}")
        project = server.submit("creating the project", f"the project title {title!r}",
                                server.client.projects.create, title=title,
                              label_config=label_config(kind), description=f"streamcue {kind} records",
                                expert_instruction=guideline(kind)[1], show_instruction=True)
        return project, kind
    found = config_kind(project.label_config)
    if found is None:
        raise ConfigError(f"project {title!r} was not made by streamcue (its labeling config has no streamcue marker)")
    if kind is not None and found != kind:
        raise ConfigError(f"project {title!r} was built for {found} records, not {kind}")
    return project, found


def projects_of_kind(server: Server, kind: str) -> list[Any]:
    """Every project the token sees that streamcue made for ``kind``: its labeling config carries the marker
    ``<!-- streamcue:<kind>:v<N> -->`` (as :func:`project_for` tells a project's kind; titles and descriptions are
    anybody's to edit). One listing of the server's projects."""
    projects = server.call("listing projects", lambda: list(server.client.projects.list()))
    return [p for p in projects if config_kind(p.label_config or "") == kind]


def records_project(server: Server, title: str) -> tuple[Any, str]:
    """:func:`project_for` a project of records (pull, status, review); a contact-sheet check project (``annotate
    anonymization``) is one line saying how to pull it."""
    project, kind = project_for(server, title)
    if kind == "anonymization":
        raise ConfigError(f"project {title!r} is an anonymization check of contact sheets, not records: pull it with "
                          "streamcue annotate anonymization pull")
    return project, kind


def configure(server: Server, project: Any, kind: str, *, annotated: bool, checks: int | None,
              created: bool = False) -> tuple[str, int, int | None]:
    """Make the project show the kind's newest guideline before annotating, and hand each task to
    ``checks`` annotators (Label Studio's overlap, ``maximum_annotations``; None: keep the project's,
    2 for a new one). Returns the guideline version, the overlap, and the overlap it had before when
    this call changed it (None otherwise).

    A project's guideline never changes once someone annotated in it, so that every pulled record
    names the one version its annotators saw: a newer guideline then needs a new project. Its
    overlap does not change either (every task must have been handed to the same number of people):
    another ``--required`` is refused once anyone has annotated, and stated otherwise.
    """
    version, html = guideline(kind)
    current = guideline_version(project.expert_instruction)
    changes: dict[str, Any] = {}
    if current != version or not project.show_instruction:
        if annotated and current != version:
            raise ConfigError(f"project {project.title!r} was annotated under guideline {current or '(none)'}; "
                              f"push to a new project to use guideline {version}")
        changes.update(expert_instruction=html, show_instruction=True)
    before = None if created else project.maximum_annotations
    wanted = checks if checks is not None else (before or 2)
    if before is not None and wanted != before and annotated:
        raise ConfigError(f"project {project.title!r} hands each task to {before} annotator(s) and has annotations; "
                          f"--required {wanted} would change that for tasks already done: push with --required "
                          f"{before}, or to a new project")
    if project.maximum_annotations != wanted:
        changes.update(maximum_annotations=wanted)
    if changes:
        server.call("configuring the project", server.client.projects.update, project.id, **changes)
    return version, wanted, (before if before is not None and before != wanted else None)


def export_tasks(server: Server, project_id: int) -> list[dict[str, Any]]:
    """Every task with its annotations (JSON export, including tasks nobody annotated)."""
    chunks = server.call("exporting", lambda: b"".join(server.client.projects.exports.download_sync(
        project_id, export_type="JSON", download_all_tasks=True)))
    try:
        tasks = json.loads(chunks)
    except json.JSONDecodeError:
        raise ServiceError(f"Label Studio at {server.url} returned an export that is not JSON") from None
    return sorted(tasks, key=lambda t: t["id"])


def user_names(server: Server) -> dict[Any, str]:
    users = server.call("listing users", server.client.users.list)
    return {u.id: u.email or u.username or f"user:{u.id}" for u in users}


def ensure_local_storage(server: Server, project_id: int, folder: Path) -> None:
    """A local-files import storage on ``folder``, so the browser may load videos from it."""
    storages = server.call("listing storages", server.client.import_storage.local.list, project=project_id)
    if any(Path(s.path or "") == folder for s in storages):
        return
    server.call("adding local-files storage", server.client.import_storage.local.create, project=project_id,
                path=str(folder), title="streamcue videos", use_blob_urls=False)
