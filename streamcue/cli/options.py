"""Command-line options that several commands share, declared once (typer reads the parameter name as the flag)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

__all__ = ["LLMBaseURL", "LLMModel", "LLMStructured", "LLMConcurrency", "NoCache", "VisionBaseURL", "VisionModel",
           "VisionStructured"]

#: The LLM options of the text-model commands (build ego4d, livecook-summaries, livecook-augment).
LLMBaseURL = Annotated[Optional[str], typer.Option(help="OpenAI-compatible base URL (or $STREAMCUE_LLM_BASE_URL).")]
LLMModel = Annotated[
    Optional[str], typer.Option(help="Model name (or $STREAMCUE_LLM_MODEL). The key comes from $STREAMCUE_LLM_API_KEY.")
]
LLMStructured = Annotated[
    str, typer.Option(help="Structured output: json_schema (OpenAI, vLLM), json_object (llama.cpp server) or none.")
]
LLMConcurrency = Annotated[int, typer.Option(help="Requests in flight at most.")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")]

#: ``--llm-base-url`` of a command that talks to a vision model.
VisionBaseURL = Annotated[Optional[str], typer.Option(help="OpenAI-compatible base URL of a vision model (or "
                                                          "$STREAMCUE_LLM_BASE_URL).")]
#: ``--llm-model`` of a command that talks to a vision model.
VisionModel = Annotated[Optional[str], typer.Option(help="Vision model name (or $STREAMCUE_LLM_MODEL). The key "
                                                        "comes from $STREAMCUE_LLM_API_KEY.")]
#: ``--llm-structured`` of a command that talks to a vision model.
VisionStructured = Annotated[str, typer.Option(help="Structured output: json_schema, json_object or none.")]
