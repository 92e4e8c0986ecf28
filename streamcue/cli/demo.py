"""``streamcue demo``: the whole pipeline offline on the bundled defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


__all__ = ["demo"]


def demo(
    out: Annotated[Path, typer.Option(help="Folder for the demo's outputs.")] = Path("streamcue-demo"),
    annotations: Annotated[Optional[Path], typer.Option(help="CaptainCook4D annotations (default: "
                                                             "../shared/data/captaincook4d beside the repository, "
                                                             "or $STREAMCUE_CAPTAINCOOK4D).")] = None,
) -> None:
    """Run the main job offline on the embedded defaults: no network, no API key.

    Builds the CaptainCook4D guidance set and validates it; publishes it as a local versioned
    release, loads it back and scores a blind baseline on it (a run folder with its page);
    builds Ego4D GoalStep proactive questions (template stage); anonymizes a generated sample
    clip and prints its report. Each step says where its files are.

    Example:

        streamcue demo --out streamcue-demo
    """
    from streamcue.demo import run_demo

    run_demo(out, annotations)

