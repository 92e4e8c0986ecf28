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
* Transport retries with exponential backoff (``retry_base_s`` doubling up to ``retry_max_s``, or
  the server's ``Retry-After``) on 408/409/429/5xx and connection errors, at most ``max_retries``,
  counted (:attr:`Usage.retries`, :attr:`Reply.retries`).
* Bounded concurrency (:meth:`LLMClient.complete_many`), a persistent response cache keyed by
  everything that can change an answer (endpoint, model, what the server's ``/v1/models`` says
  about that model (fetched once per client), structured mode, temperature, max tokens, prompt
  version, messages, schema and extra request fields; never the key) (a re-run makes no new
  calls; a killed run resumes from what was cached). Only validated answers are written.
  Token/cost accounting: :attr:`LLMClient.usage`.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import jsonschema

from streamcue.cache import Cache, cache_key
from streamcue.errors import ConfigError, ServiceError
from streamcue.extras import require

__all__ = ["LLMSettings", "LLMClient", "Request", "Reply", "Usage", "STRUCTURED_MODES", "image_content",
           "parse_json"]

STRUCTURED_MODES = ("json_schema", "json_object", "none")


@dataclass(frozen=True)
class LLMSettings:
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    structured: str = "json_schema"
    max_concurrency: int = 4
    max_retries: int = 4
    retry_base_s: float = 0.5
    retry_max_s: float = 30.0
    invalid_retries: int = 2
    timeout_s: float = 120.0
    temperature: float = 0.0
    max_tokens: int | None = 1024
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None

    def __post_init__(self) -> None:
        if self.structured not in STRUCTURED_MODES:
            raise ConfigError(f"structured output mode must be one of {STRUCTURED_MODES}, got {self.structured!r}")
        if self.max_concurrency < 1:
            raise ConfigError("max_concurrency must be at least 1")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ConfigError(f"the number of retries must be a whole number >= 0, got {self.max_retries!r}")
        for name in ("retry_base_s", "retry_max_s", "timeout_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature)
                and 0 <= self.temperature <= 2):
            raise ConfigError(f"temperature must be a number in 0-2, got {self.temperature!r}")
        if self.max_tokens is not None and (isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int)
                                            or self.max_tokens < 1):
            raise ConfigError(f"max tokens must be a whole number >= 1, got {self.max_tokens!r}")
        from urllib.parse import urlsplit

        url = urlsplit(self.base_url.strip())
        try:
            url.port  # noqa: B018 - raises on a port that is not a number in 0-65535
        except ValueError:
            raise ConfigError(f"LLM base URL {self.endpoint}: the port is not a number in 0-65535") from None
        if url.scheme.lower() not in ("http", "https") or not url.hostname:
            raise ConfigError(f"LLM base URL {self.endpoint!r} is not an http(s)://host[:port]/path URL")

    @classmethod
    def resolve(cls, **options: Any) -> LLMSettings:
        """Options (None = unset) over environment over defaults; base URL and model are required."""
        env = os.environ
        values = {k: v for k, v in options.items() if v is not None}
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
        """The base URL without credentials (``user:password@``) or fragment: what messages, logs and cache
        keys show."""
        from urllib.parse import urlsplit, urlunsplit

        url = urlsplit(self.base_url.strip())
        host = url.hostname or ""
        try:
            port = url.port
        except ValueError:  # a port that is not a number: show the host alone
            port = None
        netloc = host + (f":{port}" if port else "")
        return urlunsplit((url.scheme.lower(), netloc.lower(), url.path.rstrip("/"), url.query, ""))

    def answer_identity(self) -> dict[str, Any]:
        """Everything in the settings that can change an answer: endpoint (without credentials), model,
        structured-output mode and sampling parameters. Part of every cache key; never the API key."""
        return {"endpoint": self.endpoint, "model": self.model, "structured": self.structured,
                "temperature": self.temperature, "max_tokens": self.max_tokens}


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
    whether it came from the cache, how many transport retries it took, and its wall-clock latency."""

    text: str
    parsed: Any = None
    problem: str | None = None
    cached: bool = False
    retries: int = 0
    latency_s: float = 0.0
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
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


#: Model-list fields that change from one request to the next (vLLM stamps ``created`` with the time).
_VOLATILE = ("created", "permission", "object")
_RETRY_STATUS = (408, 409, 429)


class LLMClient:
    """Structured chat completions through the ``openai`` package, cached and accounted."""

    def __init__(self, settings: LLMSettings, cache: Cache | None = None, *, use_cache: bool = True) -> None:
        openai = require("openai", "llm")
        self.settings = settings
        self._openai = openai
        # retries are ours (counted, Retry-After honoured): the openai package does none
        self._client = openai.OpenAI(base_url=settings.base_url, api_key=settings.api_key or "not-needed",
                                     max_retries=0, timeout=settings.timeout_s)
        self.cache = (cache or Cache(table="llm_responses")) if use_cache else None
        self.usage = Usage()
        self._lock = threading.Lock()
        self._card: dict[str, Any] | None = None

    def model_card(self) -> dict[str, Any]:
        """What the server's ``GET /v1/models`` says about the model (fetched once; the fields that change with
        every request left out): part of every cache key, so another model behind the same URL and name is
        asked again. ``{"listed": false}`` when the server lists no such model, ``{"unreachable": true}`` when
        it does not answer (the call itself then fails with its own message)."""
        with self._lock:
            if self._card is not None:
                return self._card
        import urllib.error
        import urllib.request

        url = self.settings.base_url.rstrip("/") + "/models"
        headers = {"Authorization": f"Bearer {self.settings.api_key}"} if self.settings.api_key else {}
        card: dict[str, Any]
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                        timeout=min(self.settings.timeout_s, 30.0)) as response:
                listing = json.loads(response.read().decode("utf-8"), parse_constant=_no_constant)
            entries = listing.get("data") if isinstance(listing, dict) else None
            found = [e for e in entries or [] if isinstance(e, dict) and e.get("id") == self.settings.model]
            card = ({k: v for k, v in found[0].items() if k not in _VOLATILE} if found
                    else {"id": self.settings.model, "listed": False})
        except urllib.error.HTTPError as exc:
            card = {"id": self.settings.model, "listed": False, "status": exc.code}
        except (OSError, ValueError):
            card = {"id": self.settings.model, "unreachable": True}
        with self._lock:
            self._card = card
        return card

    def key(self, request: Request) -> str:
        """The cache key: endpoint, model and its server card, sampling parameters, prompt version, messages,
        schema, plain-text mode and extra request fields."""
        plain = (self.settings.structured == "none" or request.raw) and request.plain is not None
        return cache_key("llm/3", self.settings.answer_identity(), self.model_card(), request.prompt_version,
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
                with self._lock:
                    self.usage.cache_hits += 1
                return Reply(text=hit.get("text", json.dumps(hit["answer"], ensure_ascii=False)), parsed=hit["answer"],
                             cached=True, latency_s=time.perf_counter() - started, attempts=0)
        plain = (self.settings.structured == "none" or request.raw) and request.plain is not None
        problem = ""
        asked = request
        retries = 0
        text = ""
        attempts = 1 if plain else 1 + self.settings.invalid_retries
        for attempt in range(attempts):
            text, tried = self._send(asked)
            retries += tried
            answer, problem = self._read(request, text, plain)
            if problem is None:
                if self.cache is not None:
                    try:
                        self.cache.put(key, {"answer": answer, "text": text})
                    except ValueError:  # not finite: never cached (validation should have said so)
                        pass
                return Reply(text=text, parsed=answer, retries=retries, latency_s=time.perf_counter() - started,
                             attempts=attempt + 1)
            with self._lock:
                self.usage.invalid_answers += 1
            asked = retry_request(request, text, problem)
        with self._lock:
            self.usage.unparseable += 1
        where = (f"{self.settings.model} at {self.settings.endpoint}: {problem}"
                 + (f" after {attempts} attempts" if attempts > 1 else "")
                 + f" ({request.name}, prompt {request.prompt_version})")
        return Reply(text=text, problem=where, retries=retries, latency_s=time.perf_counter() - started,
                     attempts=attempts)

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
        """Answers in order, at most ``max_concurrency`` requests in flight."""
        if len(requests) <= 1 or self.settings.max_concurrency == 1:
            return [self.complete(r) for r in requests]
        with ThreadPoolExecutor(max_workers=self.settings.max_concurrency) as pool:
            return list(pool.map(self.complete, requests))

    def _response_format(self, request: Request) -> dict[str, Any] | None:
        mode = "none" if request.raw else self.settings.structured
        if mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": request.name, "schema": request.schema}}
        if mode == "json_object":
            return {"type": "json_object", "schema": request.schema}
        return None

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        s = self.settings
        wait = min(s.retry_max_s, s.retry_base_s * 2 ** attempt)
        if retry_after:
            try:
                wait = min(s.retry_max_s, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return wait

    def _call(self, request: Request) -> str:
        """The answer text of one request (transport retries done; subclasses that read text use this)."""
        return self._send(request)[0]

    def _send(self, request: Request) -> tuple[str, int]:
        """The answer text and how many transport retries it took."""
        openai = self._openai
        kwargs: dict[str, Any] = {"model": self.settings.model, "messages": list(request.messages),
                                  "temperature": self.settings.temperature}
        if self.settings.max_tokens:
            kwargs["max_tokens"] = self.settings.max_tokens
        fmt = self._response_format(request)
        if fmt is not None:
            kwargs["response_format"] = fmt
        if request.extra:
            kwargs["extra_body"] = dict(request.extra)
        where = f"LLM server {self.settings.endpoint}"
        tries = self.settings.max_retries
        for attempt in range(tries + 1):
            try:
                response = self._client.chat.completions.create(**kwargs)
                break
            except openai.AuthenticationError:
                raise ServiceError(f"{where} refused the API key (HTTP 401); check STREAMCUE_LLM_API_KEY") from None
            except openai.APIConnectionError:  # includes timeouts
                if attempt == tries:
                    raise ServiceError(f"cannot reach the {where} (after {tries} retries)") from None
                wait = self._backoff(attempt, None)
            except openai.APIStatusError as exc:
                if exc.status_code not in _RETRY_STATUS and exc.status_code < 500 or attempt == tries:
                    raise ServiceError(f"{where} answered HTTP {exc.status_code} for model {self.settings.model}"
                                       f" (after {attempt} retries)") from None
                wait = self._backoff(attempt, exc.response.headers.get("retry-after") if exc.response else None)
            with self._lock:
                self.usage.retries += 1
            time.sleep(wait)
        with self._lock:
            self.usage.calls += 1
            if response.usage is not None:
                self.usage.prompt_tokens += response.usage.prompt_tokens or 0
                self.usage.completion_tokens += response.usage.completion_tokens or 0
            s = self.settings
            if s.price_input_per_mtok is not None and s.price_output_per_mtok is not None:
                self.usage.cost_usd = (self.usage.prompt_tokens * s.price_input_per_mtok
                                       + self.usage.completion_tokens * s.price_output_per_mtok) / 1e6
        if not response.choices:
            return "", attempt
        return response.choices[0].message.content or "", attempt
