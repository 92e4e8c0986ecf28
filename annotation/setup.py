"""``annotate setup``: from a freshly started Label Studio to a token and the annotators' accounts.

What Label Studio 1.23 does by default, tried against the real 1.23.2 server
(``tests/annotation/test_annotation_setup.py``): an organisation created by ``label-studio start --username
... --password ...`` has *personal access tokens* enabled and *legacy tokens* disabled
(``/api/jwt/settings``: ``api_tokens_enabled: true, legacy_api_tokens_enabled: false``). A personal
access token is a JWT refresh token: the SDK streamcue uses trades it for short-lived access tokens by
itself, so it works as ``$LABEL_STUDIO_API_KEY`` as it is; a legacy token (``Authorization: Token``)
is refused with HTTP 401 unless the server was first started with ``--enable-legacy-api-token``.
A user holds one personal access token at a time, shown once: running setup again keeps the token
in ``$LABEL_STUDIO_API_KEY`` when it still works; without it, an existing token must be revoked first.

Accounts are made the way people make them: through the organisation's invite link (sign-up with an
email and a password), so each annotator can log in at once; the first password is generated here
and written, with the email, to a file only its owner can read, for the maintainer to hand over.
Label Studio's community edition has no reviewer role: a reviewer is an account like the others,
named to ``annotate pull --reviewer``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError, ServiceError
from streamcue.extras import require
from streamcue.redact import shareable, url_without_credentials

__all__ = ["Account", "SetupResult", "setup", "check_accounts_file", "write_accounts"]


@dataclass
class Account:
    email: str
    role: str                  # annotator | reviewer
    password: str | None       # None: the account existed already


@dataclass
class SetupResult:
    token: str
    invite_url: str
    accounts: list[Account] = field(default_factory=list)


def _client(url: str) -> Any:
    httpx = require("httpx", "annotation")
    return httpx.Client(base_url=url, timeout=60, follow_redirects=False)


def _request(client: Any, url: str, what: str, method: str, path: str, **kwargs: Any) -> Any:
    httpx = require("httpx", "annotation")
    try:
        return client.request(method, path, **kwargs)
    except httpx.HTTPError as exc:
        raise ServiceError(f"cannot reach Label Studio at {url} while {what} ({type(exc).__name__}); "
                           "is it running?") from None


def _form(client: Any, url: str, path: str, data: dict[str, str], what: str) -> Any:
    """GET a Django form page (for its CSRF cookie), then POST it."""
    _request(client, url, what, "GET", path)
    return _request(client, url, what, "POST", path, data={**data, "csrfmiddlewaretoken":
                                                           client.cookies.get("csrftoken", "")},
                    headers={"Referer": url + path})


def _login(url: str, email: str, password: str) -> Any:
    client = _client(url)
    done = _form(client, url, "/user/login/", {"email": email, "password": password}, "logging in")
    if done.status_code != 302:
        raise ConfigError(f"Label Studio at {url} refused the login of {email} (wrong email or "
                          "$LABEL_STUDIO_PASSWORD?)")
    return client


def _api(client: Any, url: str, what: str, method: str, path: str) -> Any:
    done = _request(client, url, what, method, path,
                    headers={"X-CSRFToken": client.cookies.get("csrftoken", ""), "Referer": url})
    return done


def personal_token(client: Any, url: str, current: str | None) -> str:
    """The logged-in user's personal access token: ``current`` when it still works, else a new one.

    Label Studio keeps one token per user and hands it out only once: when one exists and ``current``
    is not it, the maintainer must give it (``$LABEL_STUDIO_API_KEY``) or revoke it in the page.
    """
    if current:
        sdk = require("label_studio_sdk", "annotation", "label-studio-sdk")
        try:
            sdk.LabelStudio(base_url=url, api_key=current).users.whoami()
            return current
        except Exception:  # noqa: BLE001 - any refusal: make a new token below
            pass
    done = _api(client, url, "creating a personal access token", "POST", "/api/token/")
    if done.status_code == 409:
        raise ConfigError(f"the admin already has a personal access token at {url}: set LABEL_STUDIO_API_KEY to it, "
                          "or revoke it (Account & Settings > Personal Access Token) and run setup again")
    if done.status_code not in (200, 201) or "token" not in (done.json() or {}):
        raise ServiceError(f"Label Studio at {url} gave no personal access token (HTTP {done.status_code}); "
                           "are personal access tokens enabled (Organization > API Tokens Settings)?")
    return done.json()["token"]


def setup(url: str, admin: str, password: str, annotators: list[str], reviewers: list[str],
          token: str | None = None) -> SetupResult:
    """Log in as ``admin``, make a personal access token (or keep ``token`` when it works), and an account
    for each annotator and reviewer."""
    url = url.rstrip("/")
    people = [(e, "annotator") for e in annotators] + [(e, "reviewer") for e in reviewers]
    emails = [e for e, _ in people]
    if len(set(emails)) != len(emails) or admin in emails:
        raise ConfigError("each annotator and reviewer needs their own email, distinct from the admin's")
    client = _login(url, admin, password)
    token = personal_token(client, url, token)
    invite = _api(client, url, "reading the invite link", "GET", "/api/invite").json()["invite_url"]
    existing = {u["email"] for u in _api(client, url, "listing users", "GET", "/api/users/").json()}
    result = SetupResult(token, url_without_credentials(url) + invite)  # a link for others: no credentials in it
    shareable(result.invite_url)  # its ?token= is what it is for: shown as it is
    for email, role in people:
        if email in existing:
            result.accounts.append(Account(email, role, None))
            continue
        secret = secrets.token_urlsafe(12)
        done = _form(_client(url), url, invite, {"email": email, "password": secret}, f"signing up {email}")
        if done.status_code != 302:
            raise ConfigError(f"Label Studio at {url} refused the sign-up of {email} (HTTP {done.status_code}); "
                              "is it a valid email address?")
        result.accounts.append(Account(email, role, secret))
    return result


def check_accounts_file(path: Path, option: str = "--accounts") -> None:
    """Refuse, before any account is made, an accounts file that exists (it may hold first passwords shown once)
    or is a symlink (the passwords would land in the file it points to)."""
    if path.is_symlink():
        raise ConfigError(f"{option} {path} is a symlink: refusing to write passwords through it; name a new file")
    if path.exists():
        raise ConfigError(f"{option} {path} exists: it may hold first passwords shown only once; "
                          "move it away or name a new file")


def write_accounts(path: Path, accounts: list[Account]) -> None:
    """The new accounts' first passwords, readable by the owner only (``email<TAB>role<TAB>password``).

    Written whole to a private temporary beside ``path``, then linked to ``path``, which must not exist
    (a link never replaces a file nor follows a symlink): a file made since :func:`check_accounts_file` is refused.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for account in accounts:
                if account.password is not None:
                    fh.write(f"{account.email}\t{account.role}\t{account.password}\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise ConfigError(f"--accounts {path} appeared while the accounts were made: the new first passwords "
                              "are not written; reset them in Label Studio") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
