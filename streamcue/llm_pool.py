"""An endpoint pool: one model served at several OpenAI-compatible endpoints (GPUs, nodes), called as one client.

* :func:`make_client` gives an :class:`LLMPool` for settings with several base URLs (``LLMSettings.base_urls``),
  else a plain :class:`~streamcue.llm.LLMClient`; every strategy and LLM judge makes its client here.
* Each call goes to the endpoint with the fewest calls in flight (ties: the one that has answered fewest).
* Every endpoint must serve the same model entry (``GET /v1/models``, :meth:`~streamcue.llm.LLMClient.model_card`):
  all are asked before the first call, and an endpoint that differs is refused in one line naming the two entries
  (:class:`~streamcue.errors.ConfigError`); one that cannot be reached then is asked again before it serves a call.
* An endpoint whose call fails (no answer, HTTP errors past its retries, a malformed response: a
  :class:`~streamcue.errors.ServiceError`) is drained: the call goes to another endpoint, and the failed one gets
  no call for :data:`DRAIN_S` seconds, doubled at each failure in a row up to :data:`MAX_DRAIN_S`, then is tried
  again. Only when every endpoint has failed the call does it fail.
* The cache is shared and keyed by the model entry, not the URL (:meth:`~streamcue.llm.LLMClient.key`): a run
  resumes on other endpoints. :attr:`~streamcue.llm.Reply.endpoint` names the endpoint of each answer, without
  credentials; :meth:`LLMPool.endpoints_report` gives each endpoint's calls, failures and drains.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from streamcue.cache import Cache
from streamcue.errors import ConfigError, ServiceError
from streamcue.llm import LLMClient, LLMSettings, Reply, Request, Usage

__all__ = ["LLMPool", "make_client", "DRAIN_S", "MAX_DRAIN_S"]

#: Seconds a failed endpoint gets no call, at its first failure in a row (doubled at each next one).
DRAIN_S = 30.0
#: The longest drain, in seconds.
MAX_DRAIN_S = 600.0


def make_client(settings: LLMSettings, cache: Cache | None = None, *, use_cache: bool = True) -> LLMClient:
    """The client of ``settings``: a pool when they give several base URLs, else one endpoint's client."""
    if len(settings.base_urls) > 1:
        return LLMPool(settings, cache, use_cache=use_cache)
    return LLMClient(settings, cache, use_cache=use_cache)


@dataclass
class _Member:
    """One endpoint of the pool and what it did."""

    client: LLMClient
    in_flight: int = 0
    answered: int = 0
    failures: int = 0
    drains: int = 0
    in_a_row: int = 0
    down_until: float = 0.0
    checked: bool = False

    @property
    def endpoint(self) -> str:
        return self.client.settings.endpoint


class LLMPool(LLMClient):
    """Several endpoints of one model as one :class:`~streamcue.llm.LLMClient` (same methods, a shared cache)."""

    def __init__(self, settings: LLMSettings, cache: Cache | None = None, *, use_cache: bool = True) -> None:
        self.settings = settings
        self.cache = (cache or Cache(table="llm_responses")) if use_cache else None
        self.members = [_Member(LLMClient(replace(settings, base_url=url, base_urls=()), self.cache,
                                          use_cache=use_cache)) for url in settings.base_urls]
        self.session = self.members[0].client.session
        self._lock = threading.Lock()
        self._card: dict[str, Any] | None = None  # every endpoint's entry, once all reachable ones agreed
        self._reference: dict[str, Any] | None = None  # the first entry read, and where
        self._first = ""
        self._refused: ConfigError | None = None

    @property  # type: ignore[override]
    def usage(self) -> Usage:
        """The endpoints' usage added up."""
        total = Usage()
        for member in self.members:
            for name, value in member.client.usage.to_dict().items():
                if value is not None:
                    setattr(total, name, (getattr(total, name) or 0) + value)
        return total

    def model_card(self) -> dict[str, Any]:
        """The model entry every endpoint serves, all asked once, before the first call: one that serves another
        is refused (:class:`ConfigError`, then and at every later call); one that cannot be reached is drained and
        asked before it serves."""
        with self._lock:
            if self._refused is not None:
                raise self._refused
            if self._card is None:
                failed: ServiceError | None = None
                for member in self.members:
                    try:
                        self._check(member)
                    except ServiceError as error:
                        failed = failed or error
                        self._drain(member)
                if self._reference is None:
                    raise failed or ServiceError("no endpoint of the pool answered")
                self._card = self._reference
            return self._card

    def _check(self, member: _Member) -> None:
        """``member``'s model entry is the pool's (the first one read); else one line naming both (lock held)."""
        if member.checked:
            return
        card = member.client.model_card()
        if self._reference is None:
            self._reference, self._first = card, member.endpoint
        elif card != self._reference:
            self._refused = ConfigError(
                f"the endpoints of the pool serve different model entries: {self._first} serves "
                f"{_entry(self._reference)}, {member.endpoint} serves {_entry(card)}; a pool serves one model "
                "(--llm-base-url)")
            raise self._refused
        member.checked = True

    def reply(self, request: Request) -> Reply:
        """One answer (:meth:`LLMClient.reply`) from the endpoint with the fewest calls in flight; an endpoint
        that fails is drained and the call goes to the next, until every endpoint has failed it."""
        self.model_card()
        tried: list[_Member] = []
        failed: ServiceError | None = None
        while (member := self._take(tried)) is not None:
            try:
                with self._lock:
                    self._check(member)
                reply = member.client.reply(request)
            except ServiceError as error:
                failed = failed or error
                self._release(member, ok=False)
                tried.append(member)
                continue
            except BaseException:
                self._release(member, ok=None)  # not the endpoint's failure (a refusal, an interrupt): no drain
                raise
            self._release(member, ok=True)
            return reply
        raise failed or ServiceError("every endpoint of the pool is drained after failing; resume the run later")

    def _take(self, tried: list[_Member]) -> _Member | None:
        """The endpoint for the next call (one more in flight there): the fewest in flight among those not
        drained and not yet tried for it; a drained one only when no other is left."""
        now = time.monotonic()
        with self._lock:
            left = [m for m in self.members if all(m is not t for t in tried)]
            up = [m for m in left if m.down_until <= now] or sorted(left, key=lambda m: m.down_until)[:1]
            if not up:
                return None
            member = min(up, key=lambda m: (m.in_flight, m.answered))
            member.in_flight += 1
            return member

    def _release(self, member: _Member, *, ok: bool | None) -> None:
        """One call fewer in flight at ``member``: answered (``ok``), failed (drained) or neither (None)."""
        with self._lock:
            member.in_flight -= 1
            if ok:
                member.answered += 1
                member.in_a_row = 0
            elif ok is False:
                self._drain(member)

    def _drain(self, member: _Member) -> None:
        """No call to ``member`` for a while (lock held)."""
        member.failures += 1
        member.in_a_row += 1
        member.drains += member.down_until <= time.monotonic()
        member.down_until = time.monotonic() + min(MAX_DRAIN_S, DRAIN_S * 2 ** (member.in_a_row - 1))

    def endpoints_report(self) -> dict[str, dict[str, int]]:
        """Each endpoint's calls answered by it, failed calls and times drained."""
        with self._lock:
            return {m.endpoint: {"calls": m.client.usage.calls, "failures": m.failures, "drains": m.drains}
                    for m in self.members}


def _entry(card: dict[str, Any]) -> str:
    """A model entry in one line."""
    return json.dumps(card, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
