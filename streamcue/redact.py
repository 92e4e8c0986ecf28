"""The one redaction of known secrets, applied to every string that leaves the process.

Every file streamcue writes through :mod:`streamcue.io` (``atomic_write``, ``write_json``,
``write_jsonl``: results, reports, samples, predictions, pages) or fills in a
:func:`streamcue.staging.staged_folder` (release cards), every message on the console
(:mod:`streamcue.console`) and every error (:class:`streamcue.errors.StreamcueError`) passes
:func:`redact`, so no command needs code of its own. It replaces with ``***``:

* the value of every environment variable streamcue reads a key or password from
  (:data:`SECRET_VARIABLES`), and any value handed to :func:`register` (a key given in code),
  also in its JSON-escaped, HTML-escaped, URL-encoded and Base64 spellings, in any letter case: a server that
  echoes the key back in its answer, as it is or encoded, does not get it into predictions, samples or the page;
* the credentials of a URL: ``scheme://user:password@host`` becomes ``scheme://***@host``;
* a secret query parameter (:data:`QUERY_SECRETS`, after ``?``, ``&`` or an HTML ``&amp;``):
  ``?api_key=SECRET`` becomes ``?api_key=***``;
* a value shaped like a key streamcue is given (``sk-`` and 16 or more letters, digits, ``-`` or ``_``; ``hf_`` and
  30 or more letters or digits), wherever it appears;
* the value of an ``Authorization``, ``X-Api-Key`` or ``Api-Key`` header (``Basic`` credentials included) and a
  ``Bearer`` token that holds a digit (a plain word after "bearer" or "basic", as in "a really basic version.", is
  text, not a credential).

A value shorter than :data:`MIN_SECRET_CHARS` is not searched for (it would blank common words).
Binary files (videos, Parquet) are not rewritten. Redaction cannot undo a secret split over two
lines; none of the patterns spans a line.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import os
import re
import threading
import urllib.parse

__all__ = ["SECRET_VARIABLES", "QUERY_SECRETS", "MIN_SECRET_CHARS", "MASK", "redact", "register", "shareable",
           "known_secrets", "key_shaped", "url_without_credentials"]

MASK = "***"

#: The environment variables streamcue reads a key, token or password from.
SECRET_VARIABLES = ("STREAMCUE_LLM_API_KEY", "OPENAI_API_KEY", "LABEL_STUDIO_API_KEY", "LABEL_STUDIO_PASSWORD",
                    "HF_TOKEN")

#: Query parameters whose value is a credential.
QUERY_SECRETS = ("api_key", "api-key", "apikey", "x-api-key", "key", "token", "api_token", "api-token", "access_token",
                 "access-token", "refresh_token", "id_token", "private_token", "private-token", "subscription-key",
                 "auth", "password", "passwd", "pwd", "secret", "client_secret", "sig", "signature", "jsessionid")

#: The shortest value searched for as a known secret.
MIN_SECRET_CHARS = 6

_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"'<>]+@")
_QUERY = re.compile(r"(?i)((?:[?&;]|&amp;)(?:" + "|".join(map(re.escape, QUERY_SECRETS)) + r")=)[^&\s\"'<>#]+")
_AUTHORIZATION = re.compile(r"(?i)(authorization\\?[\"']?\s*[:=]\s*\\?[\"']?)(?:(?:bearer|basic|token)\s+)?"
                            r"[^\s\"'\\,}<]+")
#: An ``X-Api-Key`` or ``Api-Key`` header, or such a JSON key (``name: value``; ``?api-key=`` is a query secret).
_KEY_HEADER = re.compile(r"(?i)(\b(?:x-)?api-key\\?[\"']?\s*:\s*\\?[\"']?)[^\s\"'\\,}<]+")
#: The shapes of the keys streamcue is given: an OpenAI-style ``sk-...`` key and a Hugging Face ``hf_...`` token.
_KEY_SHAPE = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{30,})")
_BEARER = re.compile(r"(?i)\b(bearer\s+)(?=[A-Za-z._~+/-]*\d)[A-Za-z0-9._~+/-]{8,}=*")

_registered: set[str] = set()
_shareable: set[str] = set()
_lock = threading.Lock()


def register(value: str | None) -> None:
    """Treat ``value`` (a key given in code, not in the environment) as a known secret from now on."""
    if value and len(value) >= MIN_SECRET_CHARS:
        with _lock:
            _registered.add(value)


def shareable(value: str) -> None:
    """Leave ``value`` as it is wherever it appears: a link made to be handed to others (an invite link with
    its ``?token=``), shown on purpose. It must hold no known secret and no URL credentials."""
    with _lock:
        _shareable.add(value)


def known_secrets() -> list[str]:
    """Every known secret value, in each spelling it can take in a file, longest first."""
    values = {os.environ.get(name) or "" for name in SECRET_VARIABLES} | _registered
    spellings = set()
    for value in values:
        if len(value) >= MIN_SECRET_CHARS:
            raw = value.encode()
            spellings |= {value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1],
                          html.escape(value), urllib.parse.quote(value, safe=""), urllib.parse.quote(value),
                          urllib.parse.quote_plus(value), base64.b64encode(raw).decode().rstrip("="),
                          base64.urlsafe_b64encode(raw).decode().rstrip("=")}
    return sorted(spellings, key=len, reverse=True)


@functools.lru_cache(maxsize=16)
def _known(spellings: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for every spelling of the known secrets, in any letter case."""
    return re.compile("|".join(map(re.escape, spellings)), re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with every known secret, URL credential, secret query value and Authorization value as ``***``
    (a :func:`shareable` value left as it is)."""
    for keep in _shareable:
        if keep in text:
            return keep.join(_redact(part) for part in text.split(keep))
    return _redact(text)


def _redact(text: str) -> str:
    """What :func:`redact` does, without the :func:`shareable` exceptions."""
    secrets = known_secrets()
    if secrets:
        text = _known(tuple(secrets)).sub(MASK, text)
    if "://" in text:
        text = _URL_USERINFO.sub(r"\1" + MASK + "@", text)
    if "=" in text:
        text = _QUERY.sub(r"\1" + MASK, text)
    text = _AUTHORIZATION.sub(r"\1" + MASK, text)
    text = _KEY_HEADER.sub(r"\1" + MASK, text)
    text = _KEY_SHAPE.sub(MASK, text)
    return _BEARER.sub(r"\1" + MASK, text)


def key_shaped(text: str) -> bool:
    """Whether ``text`` holds a token shaped like a key (``sk-...``, ``sk-proj-...``, ``hf_...``, a bearer token)."""
    return bool(_KEY_SHAPE.search(text) or _BEARER.search(text))


def url_without_credentials(url: str) -> str:
    """``url`` with its ``user:password@`` removed (not masked): a link meant for other people."""
    return _URL_USERINFO.sub(r"\1", url)
