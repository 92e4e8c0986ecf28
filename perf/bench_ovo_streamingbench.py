"""Converting and scoring the whole of OVO-Bench and StreamingBench.

OVO-Bench: build all 1,640 items (records validated and written), then score the three shipped
official result folders (``--pred-format ovo-results``) and a streamcue prediction file of every item.
StreamingBench: build every questions_*.json (8,796 questions), then score a streamcue prediction
file for all of them, and an answered copy of questions_real.json (``--pred-format streamingbench``).

Run on one core, as the README figure is:

    taskset -c 0 python perf/bench_ovo_streamingbench.py [--shared ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import tempfile
import time
from pathlib import Path

from streamcue.dataset_builders import ovo_bench, streamingbench
from streamcue.dataset_builders.output import write_outputs
from streamcue.io import read_jsonl, write_jsonl
from streamcue.metrics import evaluate


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def ovo(shared: Path, work: Path) -> dict[str, float]:
    out = work / "ovo"
    build_s, result = timed(lambda: write_outputs(ovo_bench.build(ovo_bench.Config(shared / "ovo_bench" /
                                                                                    "ovo_bench_new.json")), out))
    rng = random.Random(0)
    preds = [{"question_id": r["question_id"], "response": rng.choice("ABCD")}
             for r in read_jsonl(out / "mc_question.jsonl")]
    preds += [{"item_id": r["item_id"],
               "responses": [{"t_s": p["t_s"], "probe": i, "text": rng.choice(["Yes", "No", "1"])}
                             for i, p in enumerate(r["probes"])]}
              for r in read_jsonl(out / "active_item.jsonl")]
    write_jsonl(work / "ovo_pred.jsonl", preds)
    score_s, _ = timed(lambda: evaluate("ovo-bench", out, work / "ovo_pred.jsonl"))
    results = shared / "ovo_bench" / "results"
    folders_s, _ = timed(lambda: [evaluate("ovo-bench", out, results / m, pred_format="ovo-results")
                                  for m in ("GPT", "InternVL2", "LLaVA_OneVision")])
    return {"items": sum(result.counts.get(k, 0) for k in ("mc_question", "active_item")), "build_s": build_s,
            "score_streamcue_s": score_s, "score_3_result_folders_s": folders_s}


def sb(shared: Path, work: Path) -> dict[str, float]:
    out = work / "sb"
    folder = shared / "streamingbench"
    config = streamingbench.Config(folder, all_files=True)  # all eight files, as docs/benchmarks/streamingbench.md
    build_s, result = timed(lambda: write_outputs(streamingbench.build(config), out))
    rng = random.Random(0)
    preds = [{"question_id": r["question_id"], "response": rng.choice("ABCD")}
             for r in read_jsonl(out / "mc_question.jsonl")]
    preds += [{"item_id": r["item_id"], "responses": [{"t_s": r["target"]["t_s"], "text": r["target"]["text"]}]}
              for r in read_jsonl(out / "active_item.jsonl")]
    write_jsonl(work / "sb_pred.jsonl", preds)
    score_s, _ = timed(lambda: evaluate("streamingbench", out, work / "sb_pred.jsonl"))
    data = json.loads((folder / "questions_real.json").read_text())
    for *_, q in streamingbench.iter_questions(data, "real", folder / "questions_real.json"):
        q["M"] = rng.choice("ABCD")
    (work / "real_answered.json").write_text(json.dumps(data))
    real_s, _ = timed(lambda: evaluate("streamingbench", out, work / "real_answered.json", pred_format="streamingbench",
                                       model="M"))
    return {"questions": sum(result.counts.get(k, 0) for k in ("mc_question", "active_item")), "build_s": build_s,
            "score_streamcue_all_s": score_s, "score_answered_real_file_s": real_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    args = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, run in (("OVO-Bench", ovo), ("StreamingBench", sb)):
            figures = run(args.shared, Path(tmp))
            print(name + ": " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                          for k, v in figures.items()))


if __name__ == "__main__":
    main()
