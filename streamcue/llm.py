"""The one LLM client every builder and judge uses: any OpenAI-compatible chat endpoint.

* Settings come from options, then the environment (``STREAMCUE_LLM_BASE_URL`` or
  ``OPENAI_BASE_URL``, ``STREAMCUE_LLM_MODEL``, ``STREAMCUE_LLM_API_KEY`` or
  ``OPENAI_API_KEY``), then defaults. The key is never logged, cached or written anywhere.
* Structured output is requested per endpoint: ``json_schema`` (OpenAI, vLLM),
  ``json_object`` with the schema beside it (llama.cpp's server), or ``none`` (the prompt alone
  asks for JSON, or, for a request with a ``plain`` reader, the answer is plain text read by it).
  Every answer is parsed and validated against the JSON Schema on receipt (JSON's NaN and
  Infinity are refused); an invalid answer is asked again (``invalid_retries``) with the invalid
  answer and what was wrong with it appended to the conversation. :meth:`LLMClient.reply` then
  returns it as an unparseable :class:`Reply` (raw text kept, problem named with the endpoint);
  :meth:`LLMClient.complete` raises a :class:`ServiceError`. Never dropped, never cached.
* Transport: the ``openai`` package sends every request and retries it (``max_retries``; HTTP
  408/409/429/5xx and connection failures, its exponential backoff with jitter or the server's
  ``Retry-After``); streamcue counts its retries through an httpx request hook (:attr:`Usage.retries`,
  :attr:`Reply.retries`). Answers are asked streamed (``stream=True``, with ``stream_options``'
  ``include_usage`` for the token counts): :attr:`Reply.ttft_s` is the time from the start of the call to the
  first piece of answer text; a server that answers with one JSON body instead still works (``ttft_s`` None).
  One call, retries included, has a total deadline of ``timeout_s`` seconds
  (each attempt gets what is left, a ``Retry-After`` past it ends the call; only the package's own
  backoff wait before an attempt can overrun it, by at most its 8 s); it then fails as "timed out", never
  as "cannot reach". A response body over ``max_response_bytes``
  is refused (a stream counted whole), and every field of a response streamcue reads is validated before use
  (:data:`COMPLETION_SCHEMA`, each streamed event :data:`CHUNK_SCHEMA`): an HTML page, a token count
  that is a string, a ``content`` that is a
  number are one :class:`ServiceError` line naming the endpoint and the field.
* Bounded concurrency (:meth:`LLMClient.complete_many`), a persistent response cache keyed by
  everything that can change an answer (model, the optional ``model_revision``, the server's
  own entry for the model (``models.retrieve``, fetched once per client: :meth:`LLMClient.model_card`),
  structured mode, temperature, max tokens, prompt version, messages, schema and extra request fields;
  never the key, nor the endpoint: the same entry served elsewhere answers alike) (a re-run makes no new calls; a
  killed run resumes from what was cached, on any endpoint that serves the entry). Only validated
  answers are written. :attr:`Usage.cache_hits` counts the answers read from the cache,
  :attr:`Usage.earlier_run_hits` those of them written by another run (another ``LLMSettings.session``).
  Token/cost accounting: :attr:`LLMClient.usage`.
* Several endpoints serving one model (``LLMSettings.base_urls``) are one client: :mod:`streamcue.llm_pool`.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import jsonschema

from streamcue.cache import Cache, cache_key
from streamcue.concurrency import in_order
from streamcue.redact import register
from streamcue.errors import ConfigError, ServiceError
from streamcue.extras import require

__all__ = ["LLMSettings", "LLMClient", "Request", "Reply", "Usage", "STRUCTURED_MODES", "image_content",
           "parse_json"]

STRUCTURED_MODES = ("json_schema", "json_object", "none")


#: The longest deadline of one call, in seconds (a day): a longer one is no deadline, and past about 1e9 s the
#: socket's clock overflows (the probe's ``--llm-timeout 1e308`` ended in a traceback).
MAX_TIMEOUT_S = 86_400.0
#: The most retries of one call: more only wait longer on an endpoint that does not answer.
MAX_RETRIES = 100


@dataclass(frozen=True)
class LLMSettings:
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    structured: str = "json_schema"
    max_concurrency: int = 4
    #: Retries of one request by the openai package (HTTP 408/409/429/5xx, no connection, timeouts).
    max_retries: int = 4
    invalid_retries: int = 2
    #: Total deadline of one call in seconds, all its retries included.
    timeout_s: float = 300.0
    temperature: float = 0.0
    max_tokens: int | None = 1024
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    #: What the user says the checkpoint is (a commit, a date, a hash): part of every cache key, beside the
    #: server's own model entry, for servers whose entry does not change with the weights.
    model_revision: str | None = None
    #: A response body larger than this is refused (a chat answer is a few kilobytes).
    max_response_bytes: int = 1 << 20
    #: The run's name in the cache (None: one id per process), not part of any key: a cached answer written
    #: under another session is from an earlier run (:attr:`Usage.earlier_run_hits`); a resumed run that
    #: passes its own name again counts its own answers as its own.
    session: str | None = None
    #: Every base URL of an endpoint pool (``base_url`` first; :mod:`streamcue.llm_pool`), each serving the same
    #: model entry; empty: ``base_url`` alone. Never part of a key: the pool's answers are the model's.
    base_urls: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        register(self.api_key)  # a key given in code is redacted like one from the environment
        if self.structured not in STRUCTURED_MODES:
            raise ConfigError(f"structured output mode must be one of {STRUCTURED_MODES}, got {self.structured!r}")
        if self.max_concurrency < 1:
            raise ConfigError("max_concurrency must be at least 1")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) \
                or not 0 <= self.max_retries <= MAX_RETRIES:
            raise ConfigError(f"the number of retries (--llm-retries) must be a whole number >= 0 and at most "
                              f"{MAX_RETRIES}, got {self.max_retries!r}")
        if not (isinstance(self.timeout_s, (int, float)) and math.isfinite(self.timeout_s)
                and 0 < self.timeout_s <= MAX_TIMEOUT_S):
            raise ConfigError(f"the LLM timeout (--llm-timeout) must be a finite number of seconds > 0 and at most "
                              f"{MAX_TIMEOUT_S:g} (a day), got {self.timeout_s!r}")
        if isinstance(self.max_response_bytes, bool) or not isinstance(self.max_response_bytes, int) \
                or self.max_response_bytes < 1024:
            raise ConfigError(f"max_response_bytes must be a whole number >= 1024, got {self.max_response_bytes!r}")
        if self.model_revision is not None and not (isinstance(self.model_revision, str)
                                                    and self.model_revision.strip()):
            raise ConfigError(f"the model revision must be a non-empty text, got {self.model_revision!r}")
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature)
                and 0 <= self.temperature <= 2):
            raise ConfigError(f"temperature must be a number in 0-2, got {self.temperature!r}")
        if self.max_tokens is not None and (isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int)
                                            or self.max_tokens < 1):
            raise ConfigError(f"max tokens must be a whole number >= 1, got {self.max_tokens!r}")
        for base_url in (self.base_url, *self.base_urls):
            _check_url(base_url)
        if len({masked_endpoint(u) for u in self.base_urls}) < len(self.base_urls):
            raise ConfigError("an LLM base URL is given twice: each endpoint of a pool once")

    @classmethod
    def resolve(cls, **options: Any) -> LLMSettings:
        """Options (None = unset) over environment over defaults; base URL and model are required."""
        env = os.environ
        values = {k: v for k, v in options.items() if v is not None}
        urls = values.pop("base_url", None)
        if isinstance(urls, (list, tuple)):  # an endpoint pool: every URL, the first the base URL
            values.update({"base_url": urls[0], "base_urls": tuple(urls) if len(urls) > 1 else ()} if urls else {})
        elif urls is not None:
            values["base_url"] = urls
        values.setdefault("base_url", env.get("STREAMCUE_LLM_BASE_URL") or env.get("OPENAI_BASE_URL"))
        values.setdefault("model", env.get("STREAMCUE_LLM_MODEL"))
        values.setdefault("api_key", env.get("STREAMCUE_LLM_API_KEY") or env.get("OPENAI_API_KEY"))
        if env.get("STREAMCUE_LLM_STRUCTURED"):
            values.setdefault("structured", env["STREAMCUE_LLM_STRUCTURED"])
        missing = [name for name in ("base_url", "model") if not values.get(name)]
        if missing:
            raise ConfigError(f"no LLM {' or '.join(missing)}: pass --llm-base-url/--llm-model or set "
                              "STREAMCUE_LLM_BASE_URL and STREAMCUE_LLM_MODEL (key: STREAMCUE_LLM_API_KEY)")
        return cls(**values)

    @property
    def endpoint(self) -> str:
        """The base URL without credentials (``user:password@``) or fragment: what messages, logs and samples
        show (:func:`masked_endpoint`)."""
        return masked_endpoint(self.base_url)

    @property
    def endpoints(self) -> tuple[str, ...]:
        """Every endpoint of the pool (one without a pool), as :attr:`endpoint` shows them."""
        return tuple(masked_endpoint(u) for u in self.base_urls or (self.base_url,))

    def answer_identity(self) -> dict[str, Any]:
        """Everything in the settings that can change an answer: model, its revision when given,
        structured-output mode and sampling parameters. Part of every cache key beside the server's entry for the
        model (:meth:`LLMClient.model_card`); never the API key, nor the endpoint: the same model entry served
        elsewhere (another endpoint of a pool, another node) gives the same answers, so a run resumes there."""
        return {"model": self.model, "structured": self.structured,
                "temperature": self.temperature, "max_tokens": self.max_tokens,
                **({"model_revision": self.model_revision} if self.model_revision is not None else {})}


def masked_endpoint(base_url: str) -> str:
    """A base URL without credentials (``user:password@``) or fragment."""
    from urllib.parse import urlsplit, urlunsplit

    url = urlsplit(base_url.strip())
    host = url.hostname or ""
    try:
        port = url.port
    except ValueError:  # a port that is not a number: show the host alone
        port = None
    netloc = host + (f":{port}" if port else "")
    return urlunsplit((url.scheme.lower(), netloc.lower(), url.path.rstrip("/"), url.query, ""))


def _check_url(base_url: str) -> None:
    """An http(s)://host[:port]/path URL with a port in 0-65535; else one :class:`ConfigError` line."""
    from urllib.parse import urlsplit

    url = urlsplit(base_url.strip())
    try:
        url.port  # noqa: B018 - raises on a port that is not a number in 0-65535
    except ValueError:
        raise ConfigError(f"LLM base URL {masked_endpoint(base_url)}: the port is not a number in 0-65535") from None
    if url.scheme.lower() not in ("http", "https") or not url.hostname:
        raise ConfigError(f"LLM base URL {masked_endpoint(base_url)!r} is not an http(s)://host[:port]/path URL")


@dataclass(frozen=True)
class Request:
    """One structured completion: chat messages and the JSON Schema the answer must follow."""

    messages: tuple[dict[str, Any], ...]
    schema: dict[str, Any]
    prompt_version: str
    name: str = "answer"
    #: With ``structured="none"``: reads a plain-text answer into a value of the schema (None: unreadable);
    #: a request without it still asks for JSON in its prompt.
    plain: Callable[[str], Any] | None = field(default=None, compare=False)
    #: Extra request fields (e.g. vLLM's ``media_io_kwargs``); part of the cache key.
    extra: dict[str, Any] | None = None
    #: A plain-text request whatever the structured mode (a benchmark's official prompt): no response format,
    #: the answer read by ``plain`` alone (never as JSON), no re-asks.
    raw: bool = False


@dataclass
class Reply:
    """One answer as it came: the raw text, the validated value (None when unparseable, with ``problem``),
    whether it came from the cache (and from another run's entry there), how many transport retries it took,
    and its wall-clock latency (an answer from the server: from its first request to its answer read, every
    attempt included; from the cache: the look-up)."""

    text: str
    parsed: Any = None
    problem: str | None = None
    cached: bool = False
    retries: int = 0
    latency_s: float = 0.0
    attempts: int = 1
    earlier_run: bool = False
    #: Seconds from the start of the call to the first streamed piece of answer text (None: from the cache, or a
    #: server that answered with one JSON body instead of a stream).
    ttft_s: float | None = None
    #: The server's token counts over the call's attempts (None: not reported, or from the cache).
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    #: The server's own latency for this answer (request to last token): ``latency_s`` when the server answered,
    #: the one the cache kept with the answer on a hit (None: an entry written before latencies were kept). What a
    #: ``live`` clock (:mod:`streamcue.loaders.clock`) reads, so a cache hit replays the latency it cost.
    served_s: float | None = None
    #: The endpoint that answered (:attr:`LLMSettings.endpoint`, no credentials); None for an answer from the cache.
    endpoint: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass
class Usage:
    """What a client did: ``calls`` answered by the server, ``cache_hits`` answered by the cache, of which
    ``earlier_run_hits`` were written by another run (another ``session``: e.g. an older run folder)."""

    calls: int = 0
    cache_hits: int = 0
    earlier_run_hits: int = 0
    invalid_answers: int = 0
    unparseable: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def image_content(jpeg: bytes) -> dict[str, Any]:
    """A chat message part carrying one JPEG image as a data URL (what vision endpoints accept)."""
    url = "data:image/jpeg;base64," + base64.b64encode(bytes(jpeg)).decode("ascii")
    return {"type": "image_url", "image_url": {"url": url}}


def retry_request(request: Request, answer: str, problem: str) -> Request:
    """The request again, with the invalid answer and what was wrong with it (not an identical resend)."""
    feedback = (f"Your previous answer was invalid: {problem}. Answer again with only a JSON value that "
                f"follows this JSON Schema:\n{json.dumps(request.schema, ensure_ascii=False)}")
    return replace(request, messages=(*request.messages, {"role": "assistant", "content": answer},
                                      {"role": "user", "content": feedback}))


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_json(text: str) -> Any:
    """Parse a JSON answer, tolerating a Markdown code fence around it; NaN and Infinity are refused
    (``ValueError``), so that no non-finite number reaches a cache or a score."""
    match = _FENCE.match(text or "")
    return json.loads(match.group(1) if match else text, parse_constant=_no_constant)


#: A token count beyond this is not a count.
_MAX_TOKENS = 10 ** 12
_COUNT = {"type": ["integer", "null"], "minimum": 0, "maximum": _MAX_TOKENS}
#: The fields of a chat completion that streamcue reads, as they must be (the rest of the body is ignored).
COMPLETION_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["choices"],
    "properties": {
        "choices": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["message"],
            "properties": {"message": {"type": "object",
                                       "properties": {"content": {"type": ["string", "null"]}}}}}},
        "usage": {"type": ["object", "null"],
                  "properties": {"prompt_tokens": _COUNT, "completion_tokens": _COUNT}}}}
#: One event of a streamed chat completion (``stream=True``), the fields streamcue reads; the last event may hold
#: ``usage`` alone (``stream_options={"include_usage": True}``).
CHUNK_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["choices"],
    "properties": {
        "choices": {"type": "array", "items": {
            "type": "object", "required": ["delta"],
            "properties": {"delta": {"type": "object",
                                     "properties": {"content": {"type": ["string", "null"]}}}}}},
        "usage": COMPLETION_SCHEMA["properties"]["usage"]}}
_ENTRY_SCHEMA = {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}
_LIST_SCHEMA = {"type": "object", "required": ["data"], "properties": {"data": {"type": "array",
                                                                               "items": {"type": "object"}}}}

#: Model-entry fields that are not the model: vLLM makes its entry anew for each request.
_VOLATILE = ("permission", "object")
#: A ``created`` this close to the time of the request is the request's time (vLLM), not the model's.
_STAMP_S = 300


def _served(hit: dict[str, Any]) -> float | None:
    """The server latency a cache entry kept (None when it kept none, or not a finite number >= 0)."""
    value = hit.get("latency_s")
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    return float(value) if ok else None


@functools.cache
def _process_session() -> str:
    """This process's id in the cache: an answer written under another id comes from an earlier run."""
    return uuid.uuid4().hex


class _Budget(threading.local):
    """The request under way in this thread: its deadline (``time.monotonic``) and its HTTP attempts."""

    deadline = math.inf
    attempts = 0


class LLMClient:
    """Structured chat completions through the ``openai`` package, cached and accounted."""

    def __init__(self, settings: LLMSettings, cache: Cache | None = None, *, use_cache: bool = True) -> None:
        openai = require("openai", "llm")
        self.settings = settings
        self.session = settings.session or _process_session()
        self._openai = openai
        self._budget = _Budget()
        http = openai.DefaultHttpxClient(event_hooks={"request": [self._attempt], "response": [self._answered]})
        self._client = openai.OpenAI(base_url=settings.base_url, api_key=settings.api_key or "not-needed",
                                     max_retries=settings.max_retries, timeout=settings.timeout_s, http_client=http)
        self.cache = (cache or Cache(table="llm_responses")) if use_cache else None
        self.usage = Usage()
        self._lock = threading.Lock()
        self._card: dict[str, Any] | None = None

    def _attempt(self, request: Any) -> None:
        """The httpx request hook, before each attempt the openai package makes: counts it and gives it what
        is left of the call's deadline; past the deadline it raises an ``openai.APITimeoutError``, which the
        package passes on without retrying."""
        budget = self._budget
        budget.attempts += 1
        left = budget.deadline - time.monotonic()
        if left <= 0:
            raise self._openai.APITimeoutError(request=request)
        given = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {name: left if given.get(name) is None else min(given[name], left)
                                         for name in ("connect", "read", "write", "pool")}

    def _answered(self, response: Any) -> None:
        """The httpx response hook: a server that asks to be retried (HTTP 408/409/429/5xx) later than the
        deadline (``Retry-After`` in seconds) ends the call now, as timed out, instead of the openai package
        waiting past it."""
        status, retrying = response.status_code, self._budget.attempts <= self.settings.max_retries
        if not (retrying and (status in (408, 409, 429) or status >= 500)):
            return
        try:
            wait = float(response.headers.get("retry-after", ""))
        except ValueError:
            return
        if wait > self._budget.deadline - time.monotonic():
            raise self._openai.APITimeoutError(request=response.request)

    def _fetch(self, call: Callable[[], Any], schema: dict[str, Any], what: str, *,
               statuses: bool = False) -> tuple[dict[str, Any], int]:
        """The validated JSON body of one request of the openai package (:meth:`_receive`) and its retries."""
        chunks, kind, retries = self._receive(call, statuses=statuses)
        body = b"".join(data for _, data in chunks)
        return _validated(body, kind, schema, f"LLM server {self.settings.endpoint} sent {what}"), retries

    def _receive(self, call: Callable[[], Any], *,
                 statuses: bool = False) -> tuple[list[tuple[float, bytes]], str, int]:
        """The body of one request of the openai package (``call``: a ``with_streaming_response`` method with its
        arguments) as it arrived (``time.perf_counter()``, bytes), within the deadline and the size cap, its
        Content-Type and how many retries it took; every failure is one :class:`ServiceError` line (``statuses``:
        an HTTP error other than 401 is raised as the package's)."""
        openai, s, budget = self._openai, self.settings, self._budget
        where = f"LLM server {s.endpoint}"
        budget.deadline, budget.attempts = time.monotonic() + s.timeout_s, 0
        try:
            with call() as response:
                chunks = self._body(response, where)
                kind = response.headers.get("content-type") or "no Content-Type"
        except openai.AuthenticationError:
            raise ServiceError(f"{where} refused the API key (HTTP 401); check STREAMCUE_LLM_API_KEY") from None
        except openai.APIStatusError as exc:
            if statuses:
                raise
            raise ServiceError(f"{where} answered HTTP {exc.status_code} for model {s.model}"
                               f" ({self._after_retries()})") from None
        except (openai.APITimeoutError, _httpx().TimeoutException):
            raise ServiceError(f"{where} timed out: no answer for model {s.model} within {s.timeout_s:g} s "
                               f"(--llm-timeout; {self._after_retries()})") from None
        except (openai.APIConnectionError, _httpx().TransportError):
            raise ServiceError(f"cannot reach the {where} ({self._after_retries()})") from None
        finally:
            retries = self._retries()
            budget.deadline, budget.attempts = math.inf, 0
            with self._lock:
                self.usage.retries += retries
        return chunks, kind, retries

    def _retries(self) -> int:
        """The retries so far of this thread's request."""
        return max(0, self._budget.attempts - 1)

    def _after_retries(self) -> str:
        """``after N retries`` of this thread's request, for its error message (``after 1 retry``)."""
        retries = self._retries()
        return f"after {retries} {'retry' if retries == 1 else 'retries'}"

    def _body(self, response: Any, where: str) -> list[tuple[float, bytes]]:
        """The response body as it arrived (when, bytes), refused past ``max_response_bytes`` or the deadline."""
        cap = self.settings.max_response_bytes
        declared = response.headers.get("content-length", "")
        size = int(declared) if declared.isdigit() else 0
        chunks: list[tuple[float, bytes]] = []
        if size <= cap:
            size = 0
            for chunk in response.iter_bytes():
                if time.monotonic() > self._budget.deadline:
                    raise self._openai.APITimeoutError(request=response.http_request)
                size += len(chunk)
                if size > cap:
                    break
                chunks.append((time.perf_counter(), chunk))
        if size > cap:
            raise ServiceError(f"{where} sent a response over the {cap:,}-byte cap for model "
                               f"{self.settings.model} (max_response_bytes): refused")
        return chunks

    def model_card(self) -> dict[str, Any]:
        """The server's entry for the model (``models.retrieve``, or its line in ``models.list`` where the server
        has no route for one model, as vLLM and llama.cpp do), fetched once, without the fields that change with
        every request: part of every cache key, so another model behind the same URL and name is asked again.
        ``{"listed": false}`` when the server knows no such model; a server that cannot be reached or times out
        is a :class:`ServiceError`, as the call would be."""
        with self._lock:
            if self._card is not None:
                return self._card
        card = self._entry()
        with self._lock:
            self._card = card
        return card

    def _entry(self) -> dict[str, Any]:
        openai, model = self._openai, self.settings.model
        models = self._client.models.with_streaming_response
        try:
            try:
                entry = self._fetch(lambda: models.retrieve(model), _ENTRY_SCHEMA, "a model entry", statuses=True)[0]
            except openai.NotFoundError:
                listing = self._fetch(models.list, _LIST_SCHEMA, "a model list", statuses=True)[0]
                found = [e for e in listing["data"] if e.get("id") == model]
                if not found:
                    return {"id": model, "listed": False}
                entry = found[0]
        except openai.APIStatusError as exc:
            return {"id": model, "listed": False, "status": exc.status_code}
        stamp = entry.get("created")
        volatile = _VOLATILE + (("created",) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool)
                                and abs(stamp - time.time()) <= _STAMP_S else ())
        return {k: v for k, v in entry.items() if k not in volatile}

    def identity(self) -> dict[str, Any]:
        """Who answers: :meth:`LLMSettings.answer_identity` and the server's entry for the model
        (:meth:`model_card`); what a cache of verdicts built on this client's answers is keyed by."""
        return {**self.settings.answer_identity(), "model_card": self.model_card()}

    def key(self, request: Request) -> str:
        """The cache key: model, its revision and its server entry (not the endpoint), sampling parameters, prompt
        version, messages, schema, plain-text mode and extra request fields."""
        plain = (self.settings.structured == "none" or request.raw) and request.plain is not None
        return cache_key("llm/4", self.settings.answer_identity(), self.model_card(), request.prompt_version,
                         request.messages, request.schema, {"plain": plain, "extra": request.extra})

    def cached(self, request: Request) -> Any | None:
        hit = self.cache.get(self.key(request)) if self.cache is not None else None
        return hit["answer"] if isinstance(hit, dict) and "answer" in hit else None

    def complete(self, request: Request) -> Any:
        """The validated JSON answer to one request (from the cache when it is there); an answer that stays
        invalid after ``invalid_retries`` is a :class:`ServiceError` naming the model and endpoint."""
        reply = self.reply(request)
        if not reply.ok:
            raise ServiceError(reply.problem or "invalid answer")
        return reply.parsed

    def reply(self, request: Request) -> Reply:
        """One answer as a :class:`Reply`: validated (from the cache when it is there), or unparseable with the
        raw text and the problem; transport failures that outlast the retries are a :class:`ServiceError`."""
        started = time.perf_counter()
        key = self.key(request)
        if self.cache is not None:
            hit = self.cache.get(key)
            if isinstance(hit, dict) and "answer" in hit and self._valid(request, hit["answer"]) is None:
                earlier = hit.get("session") != self.session
                with self._lock:
                    self.usage.cache_hits += 1
                    self.usage.earlier_run_hits += earlier
                return Reply(text=hit.get("text", json.dumps(hit["answer"], ensure_ascii=False)), parsed=hit["answer"],
                             cached=True, latency_s=time.perf_counter() - started, attempts=0, earlier_run=earlier,
                             served_s=_served(hit))
        plain = (self.settings.structured == "none" or request.raw) and request.plain is not None
        problem = ""
        asked = request
        call = _Call(time.perf_counter())  # the server's time: the model entry fetched for the key is not counted
        text = ""
        attempts = 1 if plain else 1 + self.settings.invalid_retries
        for attempt in range(attempts):
            sent = self._send(asked)
            call.add(sent)
            text = sent.text
            answer, problem = self._read(request, text, plain)
            if problem is None:
                fields = call.fields()
                self._keep(key, answer, text, fields["latency_s"])
                return Reply(text=text, parsed=answer, attempts=attempt + 1, served_s=fields["latency_s"],
                             endpoint=self.settings.endpoint, **fields)
            with self._lock:
                self.usage.invalid_answers += 1
            asked = retry_request(request, text, problem)
        with self._lock:
            self.usage.unparseable += 1
        where = (f"{self.settings.model} at {self.settings.endpoint}: {problem}"
                 + (f" after {attempts} attempts" if attempts > 1 else "")
                 + f" ({request.name}, prompt {request.prompt_version})")
        fields = call.fields()
        return Reply(text=text, problem=where, attempts=attempts, served_s=fields["latency_s"],
                     endpoint=self.settings.endpoint, **fields)

    def _keep(self, key: str, answer: Any, text: str, latency_s: float | None = None) -> None:
        """Cache a validated answer with the server's latency for it (one that is not finite never is: validation
        should have said so)."""
        if self.cache is not None:
            try:
                self.cache.put(key, {"answer": answer, "text": text, "session": self.session, "latency_s": latency_s})
            except ValueError:
                pass

    @staticmethod
    def _valid(request: Request, answer: Any) -> str | None:
        """What is wrong with ``answer`` (None when it follows the schema and every number in it is finite)."""
        try:
            json.dumps(answer, allow_nan=False)
        except ValueError:
            return "answer holds a number that is not finite (NaN or Infinity)"
        validator = jsonschema.Draft202012Validator(request.schema)
        errors = sorted(validator.iter_errors(answer), key=lambda e: list(map(str, e.path)))
        if errors:
            where = "/".join(map(str, errors[0].absolute_path)) or "the top level"
            return f"answer violates the schema at {where}: {errors[0].message}"
        return None

    def _read(self, request: Request, text: str, plain: bool) -> tuple[Any, str | None]:
        if request.raw and request.plain is not None:
            answer = request.plain(text)
            if answer is not None and self._valid(request, answer) is None:
                return answer, None
            return None, f"plain-text answer not readable as {request.name}: {text.strip()[:80]!r}"
        try:
            answer = parse_json(text)
        except json.JSONDecodeError as exc:
            problem = f"answer is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        except ValueError as exc:
            problem = f"answer is not valid JSON ({exc})"
        else:
            problem = self._valid(request, answer)
            if problem is None:
                return answer, None
        if plain and request.plain is not None:
            answer = request.plain(text)
            if answer is not None and self._valid(request, answer) is None:
                return answer, None
            problem = f"plain-text answer not readable as {request.name}: {text.strip()[:80]!r}"
        return None, problem

    def complete_many(self, requests: Sequence[Request]) -> list[Any]:
        """Answers in order, at most ``max_concurrency`` requests in flight; the first failure ends the rest
        (:func:`streamcue.concurrency.in_order`)."""
        return in_order(self.complete, requests, self.settings.max_concurrency)

    def response_format(self, request: Request) -> dict[str, Any] | None:
        """The ``response_format`` sent with ``request`` (None: none is sent, the prompt alone asks for JSON or the
        answer is plain text)."""
        mode = "none" if request.raw else self.settings.structured
        if mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": request.name, "schema": request.schema}}
        if mode == "json_object":
            return {"type": "json_object", "schema": request.schema}
        return None

    def _call(self, request: Request) -> str:
        """The answer text of one request (transport retries done; subclasses that read text use this)."""
        return self._send(request).text

    def request_body(self, request: Request) -> dict[str, Any]:
        """The fields of the chat request sent for ``request`` (``messages``, ``response_format`` only when one is
        asked, ``stream``...), as the openai package's ``create`` takes them."""
        kwargs: dict[str, Any] = {"model": self.settings.model, "messages": list(request.messages),
                                  "temperature": self.settings.temperature, "stream": True,
                                  "stream_options": {"include_usage": True}}
        if self.settings.max_tokens:
            kwargs["max_tokens"] = self.settings.max_tokens
        fmt = self.response_format(request)
        if fmt is not None:
            kwargs["response_format"] = fmt
        if request.extra:
            kwargs["extra_body"] = dict(request.extra)
        return kwargs

    def _send(self, request: Request) -> _Sent:
        """One answer as the server sent it: streamed (Server-Sent Events, the time its first text arrived) or,
        from a server that does not stream, one JSON body (no such time)."""
        kwargs = self.request_body(request)
        create = self._client.chat.completions.with_streaming_response.create
        chunks, kind, retries = self._receive(lambda: create(**kwargs))
        what = f"LLM server {self.settings.endpoint} sent a chat completion"
        if kind.split(";")[0].strip().lower() == "text/event-stream":
            body, first = _streamed(chunks, what)
        else:
            body, first = _validated(b"".join(data for _, data in chunks), kind, COMPLETION_SCHEMA, what), None
        usage = body.get("usage") or {}
        self._account(usage)
        choices = body["choices"]
        text = (choices[0]["message"].get("content") or "") if choices else ""
        return _Sent(text, retries, first, usage.get("prompt_tokens"), usage.get("completion_tokens"))

    def _account(self, usage: dict[str, Any]) -> None:
        """Count one answered call, its tokens and their cost."""
        s = self.settings
        with self._lock:
            self.usage.calls += 1
            self.usage.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.usage.completion_tokens += int(usage.get("completion_tokens") or 0)
            if s.price_input_per_mtok is not None and s.price_output_per_mtok is not None:
                self.usage.cost_usd = (self.usage.prompt_tokens * s.price_input_per_mtok
                                       + self.usage.completion_tokens * s.price_output_per_mtok) / 1e6


@dataclass
class _Sent:
    """One attempt's answer: its text, transport retries, when its first text arrived (``time.perf_counter()``;
    None: not streamed) and the server's token counts."""

    text: str
    retries: int = 0
    first_at: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class _Call:
    """What the attempts of one call add up to (a re-asked invalid answer is a second attempt)."""

    started: float
    retries: int = 0
    first_at: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def add(self, sent: _Sent) -> None:
        self.retries += sent.retries
        self.first_at = self.first_at if self.first_at is not None else sent.first_at
        if sent.prompt_tokens is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + sent.prompt_tokens
        if sent.completion_tokens is not None:
            self.completion_tokens = (self.completion_tokens or 0) + sent.completion_tokens

    def fields(self) -> dict[str, Any]:
        """:class:`Reply`'s timing, retry and token fields: ``latency_s`` from the start of the call to now,
        ``ttft_s`` from the start to the first streamed text of its first attempt that sent any."""
        return {"retries": self.retries, "latency_s": time.perf_counter() - self.started,
                "ttft_s": None if self.first_at is None else self.first_at - self.started,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


def _events(chunks: Sequence[tuple[float, bytes]]) -> Iterator[tuple[float, bytes]]:
    """The ``data:`` payloads of a Server-Sent Events body (one JSON per line, as OpenAI-compatible servers send),
    each with the time of the piece of the body that completed it; ``[DONE]`` ends it."""
    pending: list[bytes] = []
    for at, data in [*chunks, (chunks[-1][0] if chunks else 0.0, b"\n")]:
        if b"\n" not in data:
            pending.append(data)
            continue
        *lines, rest = b"".join([*pending, data]).split(b"\n")
        pending = [rest]
        for line in lines:
            line = line.strip()
            if line.startswith(b"data:"):
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    return
                yield at, payload


def _streamed(chunks: Sequence[tuple[float, bytes]], what: str) -> tuple[dict[str, Any], float | None]:
    """A streamed chat completion as the body a plain one would have been (the text of choice 0, the last
    ``usage``), and when its first text arrived; every event is validated (:data:`CHUNK_SCHEMA`)."""
    pieces: list[str] = []
    first, usage = None, None
    for at, payload in _events(chunks):
        event = _validated(payload, "text/event-stream", CHUNK_SCHEMA, what.replace("completion", "completion event"))
        text = "".join(c["delta"].get("content") or "" for c in event["choices"] if c.get("index", 0) == 0)
        if text and first is None:
            first = at
        pieces.append(text)
        usage = event.get("usage") or usage
    return {"choices": [{"message": {"content": "".join(pieces)}}], "usage": usage}, first


def _httpx() -> Any:
    """The HTTP library under the openai package (its exceptions escape while a body is read)."""
    return require("httpx2", "llm")


#: The validators of the response schemas (module constants), made once: a streamed answer validates every event.
_VALIDATORS: dict[int, Any] = {}


def _validated(body: bytes, kind: str, schema: dict[str, Any], what: str) -> dict[str, Any]:
    """``body`` as JSON that follows ``schema``; otherwise one :class:`ServiceError` line saying what is wrong."""
    try:
        value = json.loads(body.decode("utf-8"), parse_constant=_no_constant)
    except ValueError:  # also UnicodeDecodeError
        raise ServiceError(f"{what} that is not JSON ({kind}, {len(body):,} bytes)") from None
    validator = _VALIDATORS.get(id(schema))
    if validator is None or validator.schema is not schema:
        validator = _VALIDATORS[id(schema)] = jsonschema.Draft202012Validator(schema)
    if validator.is_valid(value):
        return value
    errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.path)))
    if errors:
        where = "/".join(map(str, errors[0].absolute_path)) or "the top level"
        message = errors[0].message
        raise ServiceError(f"{what} that is malformed at {where}: "
                           + (message if len(message) <= 120 else message[:120] + "..."))
    return value
