"""Command-line options that several commands share, declared once (typer reads the parameter name as the flag)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

__all__ = ["VisionBaseURL", "VisionModel", "Structured"]

#: ``--llm-base-url`` of a command that talks to a vision model.
VisionBaseURL = Annotated[Optional[str], typer.Option(help="OpenAI-compatible base URL of a vision model (or "
                                                          "$STREAMCUE_LLM_BASE_URL).")]
#: ``--llm-model`` of a command that talks to a vision model.
VisionModel = Annotated[Optional[str], typer.Option(help="Vision model name (or $STREAMCUE_LLM_MODEL). The key "
                                                        "comes from $STREAMCUE_LLM_API_KEY.")]
#: ``--llm-structured``: how the server is asked for JSON.
Structured = Annotated[str, typer.Option(help="Structured output: json_schema, json_object or none.")]
