"""Command-line options that several commands share, declared once, and the one name per idea.

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

An older spelling stays accepted, hidden from ``--help``: it is listed after the canonical name in
the same ``typer.Option`` and in :data:`OLD_SPELLINGS`, and :func:`hide_old_spellings` (run by
``streamcue.cli.main`` on the command tree) takes it out of the help while the parser still reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

__all__ = ["LLMBaseURL", "LLMModel", "LLMStructured", "LLMConcurrency", "LLMTimeout", "LLMRetries", "NoCache",
           "VisionBaseURL", "VisionModel", "VisionStructured", "EmbeddingModel", "OLD_SPELLINGS", "hide_old_spellings"]

#: (canonical name, old spelling): the old spelling still works where an option lists both, hidden from help.
OLD_SPELLINGS = frozenset({
    ("--video-root", "--videos-root"),   # annotate push
    ("--video-root", "--videos"),        # build recorded: its --videos was the folder of recordings
    ("--embedding-model", "--model"),    # stats agreement
    ("--pred-model", "--model"),         # evaluate --pred-format streamingbench
})

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
    help="Seconds one model call may take in all, retries included; then it fails as timed out (default 300).")]
#: ``--llm-retries``: :attr:`streamcue.llm.LLMSettings.max_retries` (None: its default).
LLMRetries = Annotated[Optional[int], typer.Option(
    help="Retries of a call answered HTTP 408/409/429/5xx or not answered, with the openai package's backoff "
         "(default 4).")]
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


def _commands(command: Any) -> Iterator[Any]:
    yield command
    for sub in getattr(command, "commands", {}).values():
        yield from _commands(sub)


def hide_old_spellings(command: Any) -> Any:
    """Hide the old spellings (:data:`OLD_SPELLINGS`) of every option of the click ``command`` tree from
    ``--help`` and from usage errors, while the parser keeps accepting them; returns ``command``."""
    for cmd in _commands(command):
        for param in getattr(cmd, "params", []):
            opts = list(getattr(param, "opts", []))
            old = [o for o in opts[1:] if (opts[0], o) in OLD_SPELLINGS]
            if not old or getattr(param, "is_flag", False):
                continue
            param.opts = [o for o in opts if o not in old]
            param.old_spellings = tuple(old)
            param.add_to_parser = _adding(param, old)
    return command


def _adding(param: Any, old: list[str]) -> Any:
    def add_to_parser(parser: Any, ctx: Any) -> None:
        type(param).add_to_parser(param, parser, ctx)
        parser.add_option(obj=param, opts=old, dest=param.name, action="append" if param.multiple else "store",
                          nargs=param.nargs)
    return add_to_parser
