"""``streamcue demo``: the main job on embedded defaults, offline and without an API key."""

from __future__ import annotations

from pathlib import Path

from streamcue import console
from streamcue.errors import InputError
from streamcue.paths import default_captaincook4d

__all__ = ["run_demo"]


def run_demo(out: Path, annotations: Path | None = None) -> None:
    from streamcue.cli import _print_guidance_summary
    from streamcue.dataset_builders import captaincook4d
    from streamcue.dataset_builders.output import write_outputs
    from streamcue.schemas import validate_file

    annotations = annotations or default_captaincook4d()
    if not annotations.is_dir():
        raise InputError("CaptainCook4D annotations not found; pass --annotations DIR "
                         "(a clone of the public CaptainCook4D annotation repository)", file=annotations)
    console.out.rule("1. CaptainCook4D -> guidance records (LiveCook protocol)")
    result = write_outputs(captaincook4d.build(captaincook4d.Config(annotations=annotations)), out / "captaincook4d")
    report = validate_file(result.files["guidance"], "guidance", videos=result.files["video"])
    console.out.print(f"validated {report.records} guidance records in {result.files['guidance']}")
    _print_guidance_summary(result.files["guidance"], result.files["video"])
