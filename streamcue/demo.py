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

    console.out.rule("2. Score a trivial baseline with the LiveCook metrics")
    _score_baseline(result.files["guidance"], out)

    console.out.rule("3. Ego4D GoalStep val -> proactive questions (interval_qa, template stage)")
    _ego4d(out)


def _ego4d(out: Path) -> None:
    from streamcue.cli import print_ego4d_summary
    from streamcue.dataset_builders import ego4d
    from streamcue.dataset_builders.output import write_outputs
    from streamcue.io import write_json
    from streamcue.paths import default_goalstep

    goalstep = default_goalstep()
    if not goalstep.is_file():
        console.out.print(f"skipped: no GoalStep file at {goalstep}")
        return
    report = ego4d.BuildReport()
    result = write_outputs(ego4d.build(ego4d.Config(goalstep=goalstep), report), out / "ego4d")
    write_json(out / "ego4d" / "build_report.json", report.to_dict())
    print_ego4d_summary(report, result.counts)
    console.out.print("The LLM stages need captions and an OpenAI-compatible endpoint: see streamcue build ego4d --help")


def _score_baseline(guidance: Path, out: Path) -> None:
    import importlib.util

    from streamcue.io import read_jsonl, write_json, write_jsonl
    from streamcue.loaders.baselines import periodic_guidance
    from streamcue.metrics import evaluate
    from streamcue.metrics.report import print_report

    predictions = out / "captaincook4d" / "baseline_predictions.jsonl"
    write_jsonl(predictions, periodic_guidance(read_jsonl(guidance)))
    bertscore = importlib.util.find_spec("bert_score") is not None
    if not bertscore:
        console.out.print("(BERTScore skipped: install the [embed] extra for it)")
    report = evaluate("livecook", guidance, predictions, bertscore=bertscore)
    print_report(report)
    write_json(out / "captaincook4d" / "baseline_livecook_report.json", report)
    console.out.print(f"baseline: a success every 30 s and a generic mistake every 120 s; report in {out / 'captaincook4d'}")
