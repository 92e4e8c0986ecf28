"""Speed of the metric computation on benchmark-sized synthetic inputs.

ESTP-F1: 2,264 questions (ESTP-Bench's size) with about 20 responses each.
VSAS: 92 tasks (VSAS-Bench's size) x 300 seconds with captions of ~100 characters.
BERTScore: 2,000 pairs of 12-word sentences with the packaged all-MiniLM-L6-v2 (needs [embed]).

The judge is ``exact`` and answered from memory on the timed run, so the figures are the
metric itself; the first (cold) run shows the cost with judging included.

    python perf/bench_metrics.py [--json FILE]

``--json`` also writes each figure (seconds) and its ratio to a reference: the best of three runs, in the same
process, of a fixed pure-Python workload (sorting and counting seeded random words), so that a ratio moves with the
code more than with the machine's load (lower is better). Each ratio is the median of three, each a warm run of the
metric over a run of the reference just before it: a figure run once over a reference run at the start moved by 30
to 70 % between runs on an idle machine with no change to the code, as the machine's speed changed within seconds.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import tempfile
import time
import os
from collections import Counter
from pathlib import Path

from streamcue.metrics.configs import load_config
from streamcue.metrics.judges import ExactJudge, JudgeRunner
from streamcue.metrics.estp import evaluate_estp
from streamcue.metrics.vsas import evaluate_vsas
from streamcue.schemas.taxonomy import TASK_TYPES

WORDS = ("the person picks up a red cup from the table and walks to the sink while holding a knife "
         "near the stove with an onion on the cutting board then opens the fridge door").split()


def sentence(rng: random.Random, n: int = 18) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def estp_data(rng: random.Random, questions: int = 2264, responses: int = 20):
    gt, preds = {}, {}
    for q in range(questions):
        answers, t = [], rng.uniform(0, 30)
        for _ in range(rng.randint(1, 7)):  # ESTP-Bench: 3.96 intervals per question on average
            length = rng.uniform(0, 15)
            answers.append({"start_s": t, "end_s": t + length, "text": sentence(rng, 6)})
            t += length + rng.uniform(5, 60)
        qa_id = f"q{q}"
        gt[qa_id] = {"qa_id": qa_id, "task_type": rng.choice(TASK_TYPES), "question": "what?", "answers": answers}
        preds[qa_id] = {"qa_id": qa_id, "responses": [{"t_s": rng.uniform(0, t), "text": rng.choice(answers)["text"]
                                                       if rng.random() < 0.5 else sentence(rng, 6)}
                                       for _ in range(responses)]}
    return gt, preds


def vsas_data(rng: random.Random, tasks: int = 92, seconds: int = 300):
    gt, preds = {}, {}
    for k in range(tasks):
        captions, text = [], sentence(rng)
        for i in range(seconds):
            if rng.random() < 0.2:
                text = sentence(rng)
            captions.append({"t_s": i, "text": text})
        task_id = f"t{k}"
        gt[task_id] = {"task_id": task_id, "task_type": rng.choice(["present", "cumulative", "future"]),
                       "category": rng.choice(["cooking", "street", "ui"]), "captions": captions}
        responses = [{"t_s": i + rng.random(), "text": captions[i]["text"] if rng.random() < 0.6 else sentence(rng)}
                     for i in range(0, seconds, 3)]
        preds[task_id] = {"task_id": task_id, "responses": responses}
    return gt, preds


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def reference_work() -> None:
    """A fixed pure-Python workload: what the metric figures are divided by in ``--json``."""
    rng = random.Random(1)
    words = [sentence(rng, 3) for _ in range(60_000)]
    Counter(sorted(words))


def paired(fn, *args, runs: int = 3, before=None) -> tuple[float, float]:
    """``fn(*args)`` timed ``runs`` times, each right after :func:`reference_work` (``before()`` called ahead of it:
    a cache to clear): the least of its times, and the median of its time over the reference's."""
    times, ratios = [], []
    for _ in range(runs):
        reference = timed(reference_work)[0]
        if before is not None:
            before()
        times.append(timed(fn, *args)[0])
        ratios.append(times[-1] / reference)
    return min(times), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures and their ratios to this JSON file")
    args = parser.parse_args()
    os.environ.setdefault("STREAMCUE_CACHE_DIR", tempfile.mkdtemp())
    rng = random.Random(0)
    load = os.getloadavg()[0]
    reference = min(timed(reference_work)[0] for _ in range(3))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; reference workload {reference:.3f} s")
    figures, ratios = {}, {}
    gt, preds = estp_data(rng)
    runner = JudgeRunner(ExactJudge(), use_cache=False)
    cold, report = timed(evaluate_estp, gt, preds, runner, load_config("estp_f1"))
    warm, ratios["estp_f1"] = paired(evaluate_estp, gt, preds, runner, load_config("estp_f1"))
    n_resp = sum(len(p["responses"]) for p in preds.values())
    figures["estp_f1_s"] = warm
    print(f"ESTP-F1  {len(gt)} questions, {n_resp} responses, {report['judge']['distinct']} distinct judged pairs: "
          f"{cold:.3f} s with judging, {warm:.3f} s judge cached (best of 3)")
    gt, preds = vsas_data(rng)
    for common in ("substring", "subsequence"):
        from streamcue.metrics.vsas import longest_common_substring

        longest_common_substring.cache_clear()
        runner = JudgeRunner(ExactJudge(), use_cache=False)
        config = load_config("vsas", common=common)
        cold, report = timed(evaluate_vsas, gt, preds, runner, config)
        warm, ratios[f"vsas_{common}"] = paired(evaluate_vsas, gt, preds, runner, config,
                                                before=longest_common_substring.cache_clear)
        figures[f"vsas_{common}_s"] = warm
        print(f"VSAS ({common:11s}) {len(gt)} tasks x 300 s, {report['judge']['requested']} judged timesteps, "
              f"{report['judge']['distinct']} distinct pairs: {cold:.3f} s with judging, {warm:.3f} s judge cached")
    measured = bertscore(rng)
    if measured is not None:
        figures["bertscore_s"], ratios["bertscore"] = measured
    if args.json:
        args.json.write_text(json.dumps({
            "load_before": load, "load_after": os.getloadavg()[0], "reference_s": reference, "seconds": figures,
            "vs_reference": ratios}, indent=1) + "\n")


def bertscore(rng: random.Random, pairs: int = 2000) -> tuple[float, float] | None:
    """BERTScore F1 of ``pairs`` feedback-like sentence pairs with the packaged MiniLM at layer 4 (the default)."""
    import importlib.util

    if importlib.util.find_spec("bert_score") is None:
        print("BERTScore skipped: install the [embed] extra")
        return None
    from streamcue.metrics.bertscore import bertscore_f1

    refs = [sentence(rng, 12) for _ in range(pairs)]
    cands = [sentence(rng, 12) for _ in range(pairs)]
    first, _ = timed(bertscore_f1, refs, cands)
    second, ratio = paired(bertscore_f1, refs, cands)
    print(f"BERTScore F1, packaged all-MiniLM-L6-v2 layer 4, {pairs} pairs of 12 words: {first:.2f} s first call "
          f"(model load included), {second:.2f} s the best of three calls after")
    return second, ratio


if __name__ == "__main__":
    main()
