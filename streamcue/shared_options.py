"""Command-line options that several commands share, declared once, and the one name per idea.

The CLI's commands and the builders' own commands (``command`` in ``dataset_builders/<module>.py``) use them,
so they sit in the core, below both.

One idea, one option name, in every command:

==========================  =====================================================================
``--video-root DIR``        the folder video ``uri`` s (or a tasks file's ``video`` names) are relative to
``--videos FILE``           a ``videos.jsonl`` (video records), never a folder
``--llm-base-url URL``      an OpenAI-compatible endpoint (generators, vision models and LLM judges alike)
``--llm-model NAME``        the model name at that endpoint
``--llm-structured MODE``   structured output of that endpoint
``--llm-timeout S``         the total deadline of one call to that endpoint, retries included
``--llm-retries N``         retries of one call (HTTP 408/409/429/5xx, no connection), by the openai package
``--embedding-model DIR``   a sentence-transformers model folder
``--pred-model NAME``       the model whose answers a predictions file stores (``evaluate``)
``--out DIR``               an output folder; ``--output FILE``: an output file
==========================  =====================================================================
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

__all__ = ["LLMBaseURL", "LLMModel", "LLMStructured", "LLMConcurrency", "LLMTimeout", "LLMRetries", "NoCache",
           "VisionBaseURL", "VisionModel", "VisionStructured", "EmbeddingModel"]

#: The LLM options of the text-model commands (build ego4d, livecook-summaries, livecook-augment).
LLMBaseURL = Annotated[Optional[str], typer.Option(help="OpenAI-compatible base URL (or $STREAMCUE_LLM_BASE_URL).")]
LLMModel = Annotated[
    Optional[str], typer.Option(help="Model name (or $STREAMCUE_LLM_MODEL). The key comes from $STREAMCUE_LLM_API_KEY.")
]
LLMStructured = Annotated[
    str, typer.Option(help="Structured output: json_schema (OpenAI, vLLM), json_object (llama.cpp server) or none.")
]
LLMConcurrency = Annotated[int, typer.Option(help="Requests in flight at most.")]
#: ``--llm-timeout``: :attr:`streamcue.llm.LLMSettings.timeout_s` (None: its default).
LLMTimeout = Annotated[Optional[float], typer.Option(
    help="Seconds one model call may take in all, retries included; then it fails as timed out (default 300, at "
         "most 86400).")]
#: ``--llm-retries``: :attr:`streamcue.llm.LLMSettings.max_retries` (None: its default).
LLMRetries = Annotated[Optional[int], typer.Option(
    help="Retries of a call answered HTTP 408/409/429/5xx or not answered, with the openai package's backoff "
         "(default 4, at most 100).")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")]

#: ``--llm-base-url`` of a command that talks to a vision model.
VisionBaseURL = Annotated[Optional[str], typer.Option(help="OpenAI-compatible base URL of a vision model (or "
                                                          "$STREAMCUE_LLM_BASE_URL).")]
#: ``--llm-model`` of a command that talks to a vision model.
VisionModel = Annotated[Optional[str], typer.Option(help="Vision model name (or $STREAMCUE_LLM_MODEL). The key "
                                                        "comes from $STREAMCUE_LLM_API_KEY.")]
#: ``--llm-structured`` of a command that talks to a vision model.
VisionStructured = Annotated[str, typer.Option(help="Structured output: json_schema, json_object or none.")]

#: ``--embedding-model``: a sentence-transformers folder.
EmbeddingModel = Annotated[Optional[Path], typer.Option(
    "--embedding-model", help="sentence-transformers model folder (default: the packaged all-MiniLM-L6-v2).")]
