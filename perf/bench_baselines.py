"""Blind baselines on the CaptainCook4D guidance set: the floor of the LiveCook metrics, v1 vs v2.

Two models that see nothing, replayed at 1 fps through the replay harness
(:class:`streamcue.loaders.strategies.periodic.PeriodicBaseline`):

* ``success every 30 s``: says "success" every 30 s and nothing else;
* ``demo baseline``: the demo's model, "success" every 30 s and a generic mistake every 120 s.

Both are scored with every released livecook config (BERTScore off: these figures are about
detection). Builds the 384 recordings from the public annotations in ``../shared/data/captaincook4d``
(or ``$STREAMCUE_CAPTAINCOOK4D``); ``--split test`` scores the demo's test split only.

    python perf/bench_baselines.py [--split all|train|validation|test]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from streamcue.dataset_builders import captaincook4d
from streamcue.dataset_builders.output import write_outputs
from streamcue.io import iter_jsonl, write_jsonl
from streamcue.loaders.engine import play
from streamcue.loaders.strategies.periodic import PeriodicBaseline
from streamcue.metrics import evaluate

BASELINES = {
    "success every 30 s": PeriodicBaseline(every_s=30.0, mistake_every_s=None),
    "demo baseline (success 30 s, mistake 120 s)": PeriodicBaseline(every_s=30.0, mistake_every_s=120.0),
}
VERSIONS = (1, 2)


def annotations() -> Path:
    env = os.environ.get("STREAMCUE_CAPTAINCOOK4D")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data" / "captaincook4d"


def scores(split: str, folder: Path) -> dict[str, dict[int, dict]]:
    """``{baseline: {config version: overall scores}}`` on ``split`` of the CaptainCook4D set."""
    write_outputs(captaincook4d.build(captaincook4d.Config(annotations=annotations())), folder / "cc4d")
    videos = {r["video_id"]: r for _, r in iter_jsonl(folder / "cc4d" / "videos.jsonl")}
    guidance = [r for _, r in iter_jsonl(folder / "cc4d" / "guidance.jsonl")
                if split == "all" or videos[r["video_id"]]["split"] == split]
    gt = folder / "gt.jsonl"
    write_jsonl(gt, guidance)
    durations = {v: r["duration_s"] for v, r in videos.items()}
    out: dict[str, dict[int, dict]] = {}
    for name, model in BASELINES.items():
        predictions, _ = play(guidance, "guidance", strategy=model, durations=durations)
        pred = folder / "pred.jsonl"
        write_jsonl(pred, predictions)
        out[name] = {v: evaluate("livecook", gt, pred, config_version=v, bertscore=False)["overall"] for v in VERSIONS}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="all", choices=["all", "train", "validation", "test"])
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        results = scores(args.split, Path(tmp))
    print(f"CaptainCook4D guidance, split {args.split} ({time.perf_counter() - start:.0f} s)")
    print(f"{'baseline':46} {'config':11} {'IC-Acc':>7} {'mistake P':>9} {'R':>6} {'F1':>6}")
    for name, by_version in results.items():
        for version, o in by_version.items():
            print(f"{name:46} livecook.v{version:<2} {o['ic_acc']:7.3f} {o['precision']:9.3f} "
                  f"{o['recall']:6.3f} {o['f1']:6.3f}")


if __name__ == "__main__":
    main()
