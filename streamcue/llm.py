"""The one LLM client every builder and judge uses: any OpenAI-compatible chat endpoint.

* Settings come from options, then the environment (``STREAMCUE_LLM_BASE_URL`` or
  ``OPENAI_BASE_URL``, ``STREAMCUE_LLM_MODEL``, ``STREAMCUE_LLM_API_KEY`` or
  ``OPENAI_API_KEY``), then defaults. The key is never logged, cached or written anywhere.
* Structured output is requested per endpoint: ``json_schema`` (OpenAI, vLLM),
  ``json_object`` with the schema beside it (llama.cpp's server), or ``none`` (the prompt alone
  asks for JSON). Every answer is parsed and validated against the JSON Schema on receipt; an
  invalid answer is asked again (``invalid_retries``) with the invalid answer and what was
  wrong with it appended to the conversation, then reported as a :class:`ServiceError`, never dropped.
* Transport retries with exponential backoff on 408/409/429/5xx and connection errors are the
  ``openai`` package's own (``max_retries``).
* Bounded concurrency (:meth:`LLMClient.complete_many`), a persistent response cache keyed by
  everything that can change an answer (endpoint, model, structured mode, temperature, max
  tokens, prompt version, messages and schema; never the key) (a re-run makes no new calls; a killed run resumes
  from what was cached), and token/cost accounting (:attr:`LLMClient.usage`).
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import jsonschema

from streamcue.cache import Cache, cache_key
from streamcue.errors import ConfigError, ServiceError
from streamcue.extras import require

__all__ = ["LLMSettings", "LLMClient", "Request", "Usage", "STRUCTURED_MODES", "image_content"]

STRUCTURED_MODES = ("json_schema", "json_object", "none")


@dataclass(frozen=True)
class LLMSettings:
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    structured: str = "json_schema"
    max_concurrency: int = 4
    max_retries: int = 4
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


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    invalid_answers: int = 0
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


def parse_json(text: str) -> Any:
    """Parse a JSON answer, tolerating a Markdown code fence around it."""
    match = _FENCE.match(text or "")
    return json.loads(match.group(1) if match else text)


class LLMClient:
    """Structured chat completions through the ``openai`` package, cached and accounted."""

    def __init__(self, settings: LLMSettings, cache: Cache | None = None, *, use_cache: bool = True) -> None:
        openai = require("openai", "llm")
        self.settings = settings
        self._openai = openai
        self._client = openai.OpenAI(base_url=settings.base_url, api_key=settings.api_key or "not-needed",
                                     max_retries=settings.max_retries, timeout=settings.timeout_s)
        self.cache = (cache or Cache(table="llm_responses")) if use_cache else None
        self.usage = Usage()
        self._lock = threading.Lock()

    def key(self, request: Request) -> str:
        """The cache key: endpoint, model, sampling parameters, prompt version, messages and schema."""
        return cache_key("llm/2", self.settings.answer_identity(), request.prompt_version, request.messages,
                         request.schema)

    def cached(self, request: Request) -> Any | None:
        return self.cache.get(self.key(request)) if self.cache is not None else None

    def complete(self, request: Request) -> Any:
        """The validated JSON answer to one request (from the cache when it is there)."""
        key = self.key(request)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                with self._lock:
                    self.usage.cache_hits += 1
                return hit["answer"]
        validator = jsonschema.Draft202012Validator(request.schema)
        problem = ""
        asked = request
        for attempt in range(1 + self.settings.invalid_retries):
            text = self._call(asked)
            try:
                answer = parse_json(text)
                errors = sorted(validator.iter_errors(answer), key=lambda e: list(map(str, e.path)))
                if not errors:
                    if self.cache is not None:
                        self.cache.put(key, {"answer": answer})
                    return answer
                where = "/".join(map(str, errors[0].absolute_path)) or "the top level"
                problem = f"answer violates the schema at {where}: {errors[0].message}"
            except json.JSONDecodeError as exc:
                problem = f"answer is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            with self._lock:
                self.usage.invalid_answers += 1
            asked = retry_request(request, text, problem)
        raise ServiceError(f"{self.settings.model} at {self.settings.endpoint}: {problem} "
                           f"after {1 + self.settings.invalid_retries} attempts ({request.name}, "
                           f"prompt {request.prompt_version})")

    def complete_many(self, requests: Sequence[Request]) -> list[Any]:
        """Answers in order, at most ``max_concurrency`` requests in flight."""
        if len(requests) <= 1 or self.settings.max_concurrency == 1:
            return [self.complete(r) for r in requests]
        with ThreadPoolExecutor(max_workers=self.settings.max_concurrency) as pool:
            return list(pool.map(self.complete, requests))

    def _response_format(self, request: Request) -> dict[str, Any] | None:
        mode = self.settings.structured
        if mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": request.name, "schema": request.schema}}
        if mode == "json_object":
            return {"type": "json_object", "schema": request.schema}
        return None

    def _call(self, request: Request) -> str:
        openai = self._openai
        kwargs: dict[str, Any] = {"model": self.settings.model, "messages": list(request.messages),
                                  "temperature": self.settings.temperature}
        if self.settings.max_tokens:
            kwargs["max_tokens"] = self.settings.max_tokens
        fmt = self._response_format(request)
        if fmt is not None:
            kwargs["response_format"] = fmt
        where = f"LLM server {self.settings.endpoint}"
        try:
            response = self._client.chat.completions.create(**kwargs)
        except openai.AuthenticationError:
            raise ServiceError(f"{where} refused the API key (HTTP 401); check STREAMCUE_LLM_API_KEY") from None
        except openai.APIConnectionError:
            raise ServiceError(f"cannot reach the {where} (after {self.settings.max_retries} retries)") from None
        except openai.APIStatusError as exc:
            raise ServiceError(f"{where} answered HTTP {exc.status_code} for model {self.settings.model}"
                               f" (after {self.settings.max_retries} retries)") from None
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
            return ""
        return response.choices[0].message.content or ""
