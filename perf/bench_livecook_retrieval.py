"""Mistake-summary retrieval figures on the real CaptainCook4D annotations (issue 17).

    python perf/bench_livecook_retrieval.py [--k 3 5 10 20]

Over the test-split actions that carry a counted mistake: the share whose instruction's k
nearest training-split instructions (packaged all-MiniLM-L6-v2) contain the same step id, the
share that share a mistake category with them, the mean category recall, beside the ceiling
the annotations allow (any training action of the same step id). No LLM is involved.
"""

from __future__ import annotations

import argparse
import os
import random
import time

os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

from streamcue.dataset_builders import livecook_summaries as ls  # noqa: E402
from streamcue.embedding import Embedder  # noqa: E402
from streamcue.paths import default_captaincook4d  # noqa: E402


def row(k: int, fig: dict) -> str:
    return (f"{k:>4} {fig['same_step']:>10.1%} {fig['same_step_category']:>14.1%} "
            f"{fig['category_overlap']:>17.1%} {fig['category_recall']:>16.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 10, 20])
    args = parser.parse_args()
    root = default_captaincook4d()
    guidance, splits = ls.guidance_and_splits(root)
    queries = ls.queries(guidance, splits, ("test",))
    index = ls.train_index(root, splits)
    started = time.perf_counter()
    embedder = Embedder()
    neighbours = ls.retrieve(embedder, index, [q.instruction for q in queries], max(args.k))
    elapsed = time.perf_counter() - started
    print(
        f"{len(queries)} test instructions, index of {len(index)} training actions with a counted mistake; "
        f"model load + embedding + ranking {elapsed:.1f} s"
    )
    print(f"{'k':>4} {'same step':>10} {'same step+cat':>14} {'category overlap':>17} {'category recall':>16}")
    for k in args.k:
        fig = ls.retrieval_figures(queries, [hits[:k] for hits in neighbours], index)
        print(row(k, fig))
    rng = random.Random(0)
    for k in args.k:
        blind = [[(j, 0.0) for j in rng.sample(range(len(index)), k)] for _ in queries]
        fig_b = ls.retrieval_figures(queries, blind, index)
        print(
            row(k, fig_b) + "   blind baseline: k random training actions"
        )
    print(
        f"ceiling (every training action of the same step id): same step {fig['ceiling_same_step']:.1%}, "
        f"category {fig['ceiling_category']:.1%} over {fig['actions_with_counted_mistake']} actions"
    )


if __name__ == "__main__":
    main()
