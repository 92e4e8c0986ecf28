"""CaptainCook4D guidance -> LiveCook "mistake summaries" (``mistake_summary`` records).

Seed: LiveCook, Sec. 2 and App. C. For each instruction (plan step) of a validation or test
guidance record, the training split's instructions that carry a counted mistake are ranked by
cosine similarity of sentence embeddings of the instruction text (the packaged
all-MiniLM-L6-v2 by default; never by step id), the ``k`` nearest are kept, and an LLM
summarises the mistakes annotated on them in a few lines. The summary goes into the mistake
prompt of a turn-based model ("has a mistake been made? typical mistakes: ...").

Split hygiene: the retrieval index is built from training recordings only, and the prompt
holds only the query instruction and the neighbours' texts; no text of another validation or
test recording can reach a summary (``tests/dataset_builders/test_livecook_summaries.py`` checks it on the
real annotations).

Retrieval figures (:func:`retrieval_figures`), measured over the test-split actions that carry
a counted mistake, beside the ceiling that the annotations allow (86 % have a same-step training
action with a counted mistake, 69 % share a category with those; issue 17):

* ``same_step``: share whose instruction's neighbours contain the same step id (ceiling 86 %);
* ``same_step_category``: share with a same-step neighbour that shares a category (ceiling 69 %);
* ``category_overlap``: share whose neighbours (of any step) have a category in common with the
  action's: no ceiling, neighbours of other steps add categories; with only five categories a
  blind baseline of k random neighbours scores high too (``perf/bench_livecook_retrieval.py``);
* ``category_recall``: mean share of the action's categories found among the neighbours'.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional

import numpy as np
import typer

from streamcue import console
from streamcue.dataset_builders import captaincook4d
from streamcue.dataset_builders.captaincook4d_text import clean_description
from streamcue.errors import ConfigError, InputError
from streamcue.prologue import input_path
from streamcue.io import read_json
from streamcue.llm import LLMClient, LLMSettings, Request
from streamcue.progress import track
from streamcue.prompts import load_prompt
from streamcue.schemas import SCHEMA_VERSION
from streamcue.schemas.taxonomy import COUNTED_MISTAKES
from streamcue.shared_options import (EmbeddingModel, LLMBaseURL, LLMConcurrency, LLMModel, LLMRetries, LLMStructured,
                                      LLMTimeout, NoCache)

__all__ = [
    "Config",
    "SummaryFigures",
    "TrainExample",
    "Query",
    "build",
    "train_index",
    "queries",
    "retrieve",
    "retrieval_figures",
    "guidance_and_splits",
    "PROMPT",
]

#: What ``streamcue build`` makes of this source and says of it (dataset_builders/registry.py reads these).
MAKES = ("mistake_summary",)
SUMMARY = ("mistake_summary records (LiveCook) for CaptainCook4D instructions, from the "
           "training split")
#: The report it fills instead of the BuildReport: its ``to_dict()`` becomes the build report's details.
FIGURES = "SummaryFigures"

BUILDER = "livecook-summaries"
BUILDER_VERSION = "1.0"
PROMPT = ("streamcue.dataset_builders", "mistake_summary.v1")
SUMMARY_SPLITS = ("validation", "test")
ANSWER_SCHEMA = {
    "type": "object",
    "required": ["possible_mistakes"],
    "properties": {
        "possible_mistakes": {
            "type": "array",
            "minItems": 1,
            "maxItems": 5,
            "items": {"type": "string", "minLength": 1},
        }
    },
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Config:
    """Options of the mistake-summary builder.

    ``annotations``: the CaptainCook4D annotation repository. ``splits``: the splits whose
    instructions get a summary (validation and/or test; train is the retrieval index).
    ``k``: neighbours per instruction. ``embedding_model``: a sentence-transformers folder
    (None: the packaged all-MiniLM-L6-v2).
    """

    annotations: Path = input_path("--annotations", folder=True)
    llm: LLMSettings
    splits: tuple[str, ...] = SUMMARY_SPLITS
    k: int = 5
    use_cache: bool = True
    embedding_model: str | None = input_path("--embedding-model", folder=True, default=None)
    counted_mistakes: tuple[str, ...] = COUNTED_MISTAKES
    recordings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        wrong = [s for s in self.splits if s not in SUMMARY_SPLITS]
        if wrong or not self.splits:
            raise ConfigError(
                f"summaries are made for the validation and test splits, not {wrong or 'none'}: "
                "the training split is the retrieval index"
            )
        if self.k < 1:
            raise ConfigError(f"k must be at least 1, got {self.k}")


@dataclass(frozen=True)
class TrainExample:
    """One performed training-split action with at least one counted mistake."""

    video_id: str
    step_id: int | str
    instruction: str
    mistakes: tuple[tuple[str, str], ...]  # (category, description)


@dataclass(frozen=True)
class Query:
    """One instruction (plan step) to summarise, with its counted mistakes for the figures."""

    video_id: str
    plan_index: int
    split: str
    activity: str
    instruction: str
    step_ids: tuple
    #: (step_id, categories) of every action of the step that has a counted mistake
    mistaken_actions: tuple[tuple[Any, frozenset[str]], ...] = ()


@dataclass
class SummaryFigures:
    recordings: int = 0
    index_size: int = 0
    summaries: dict[str, int] = field(default_factory=dict)
    retrieval: dict[str, Any] = field(default_factory=dict)
    llm: dict | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "recordings": self.recordings,
            "index_size": self.index_size,
            "summaries": self.summaries,
            "retrieval": self.retrieval,
            "llm": self.llm,
        }


def guidance_and_splits(
    annotations: Path, counted: Sequence[str] = COUNTED_MISTAKES
) -> tuple[list[dict], dict[str, str]]:
    """Every CaptainCook4D guidance record (the captaincook4d builder's) and the split of each recording."""
    cc = captaincook4d.Config(annotations=Path(annotations), counted_mistakes=tuple(counted))
    guidance, splits = [], {}
    for kind, record in captaincook4d.build(cc):
        if kind == "video":
            splits[record["video_id"]] = record["split"]
        else:
            guidance.append(record)
    return guidance, splits


def train_index(
    annotations: Path,
    splits: dict[str, str],
    counted: Sequence[str] = COUNTED_MISTAKES,
    index_splits: Sequence[str] = ("train",),
) -> list[TrainExample]:
    """Every performed action of the ``index_splits`` recordings with a counted mistake, in file order.

    ``index_splits`` is ``("train",)`` in every build; the split-hygiene test widens it once to
    show that its check catches a leak.
    """
    file = Path(annotations) / captaincook4d.Config.errors_file
    data = read_json(file)
    if not isinstance(data, list):
        raise InputError("expected a list of recordings", file=file)
    examples = []
    for i, rec in enumerate(data):
        rid = str(rec.get("recording_id")) if isinstance(rec, dict) else f"[{i}]"
        if splits.get(rid) not in index_splits:
            continue
        for step in rec.get("step_annotations") or []:
            if step.get("start_time") == -1:
                continue  # not performed: its mistakes are "missing step"
            mistakes = tuple(
                (captaincook4d.TAG_CATEGORIES[e["tag"]], (e.get("description") or "").strip())
                for e in step.get("errors") or []
                if captaincook4d.TAG_CATEGORIES.get(e.get("tag")) in counted
            )
            if mistakes:
                examples.append(TrainExample(rid, step["step_id"], clean_description(step["description"]), mistakes))
    return examples


def queries(guidance: Sequence[dict], splits: dict[str, str], wanted: Sequence[str]) -> list[Query]:
    """Every instruction of the guidance records in ``wanted`` splits."""
    out = []
    for record in guidance:
        split = splits[record["video_id"]]
        if split not in wanted:
            continue
        by_step: dict[int, dict[Any, set[str]]] = defaultdict(lambda: defaultdict(set))
        for event in record["events"]:
            if event["type"] == "mistake":
                for sid in event["step_ids"]:
                    by_step[event["plan_index"]][sid].add(event["mistake_category"])
        for step in record["plan"]:
            mistaken = tuple((sid, frozenset(cats)) for sid, cats in by_step[step["index"]].items())
            out.append(
                Query(
                    record["video_id"],
                    step["index"],
                    split,
                    record["activity"],
                    step["text"],
                    tuple(step["step_ids"]),
                    mistaken,
                )
            )
    return out


def retrieve(
    embedder: Any, index: Sequence[TrainExample], texts: Sequence[str], k: int
) -> list[list[tuple[int, float]]]:
    """The ``k`` most similar index entries of each text: ``(position, cosine)``, ties by position."""
    if not index:
        raise InputError(
            "no training-split action with a counted mistake: nothing to retrieve from",
            file=captaincook4d.Config.errors_file,
        )
    unique = list(dict.fromkeys(e.instruction for e in index))
    vectors = embedder.encode(unique + list(dict.fromkeys(texts)))
    row = {t: i for i, t in enumerate(unique)}
    qrow = {t: len(unique) + i for i, t in enumerate(dict.fromkeys(texts))}
    sims_unique = vectors[[qrow[t] for t in texts]] @ vectors[: len(unique)].T
    sims = sims_unique[:, [row[e.instruction] for e in index]]
    k = min(k, len(index))
    result = []
    for row_sims in sims:
        order = np.lexsort((np.arange(len(index)), -np.round(row_sims, 6)))[:k]
        result.append([(int(j), float(np.clip(round(float(row_sims[j]), 4), -1.0, 1.0))) for j in order])
    return result


def retrieval_figures(
    qs: Sequence[Query], neighbours: Sequence[Sequence[tuple[int, float]]], index: Sequence[TrainExample]
) -> dict[str, Any]:
    """Retrieval quality over the actions with a counted mistake (module docstring), beside the ceiling."""
    by_step: dict[Any, set[str]] = defaultdict(set)
    for e in index:
        by_step[e.step_id].update(c for c, _ in e.mistakes)
    n = same = same_cat = overlap = recall = ceil_same = ceil_cat = 0.0
    for q, hits in zip(qs, neighbours):
        found_steps = {index[j].step_id for j, _ in hits}
        found_cats = {c for j, _ in hits for c, _ in index[j].mistakes}
        for step_id, cats in q.mistaken_actions:
            n += 1
            same += step_id in found_steps
            same_cat += any(index[j].step_id == step_id and cats & {c for c, _ in index[j].mistakes} for j, _ in hits)
            overlap += bool(cats & found_cats)
            recall += len(cats & found_cats) / len(cats)
            ceil_same += step_id in by_step
            ceil_cat += bool(cats & by_step.get(step_id, set()))
    share = (lambda x: round(x / n, 4)) if n else (lambda x: None)
    return {
        "actions_with_counted_mistake": int(n),
        "same_step": share(same),
        "same_step_category": share(same_cat),
        "category_overlap": share(overlap),
        "category_recall": share(recall),
        "ceiling_same_step": share(ceil_same),
        "ceiling_category": share(ceil_cat),
    }


def _mistake_lines(hits: Sequence[tuple[int, float]], index: Sequence[TrainExample]) -> str:
    lines = dict.fromkeys(
        f"- {index[j].instruction} -> [{c}] {d or '(no description)'}" for j, _ in hits for c, d in index[j].mistakes
    )
    return "\n".join(lines)


def _record(
    q: Query,
    hits: Sequence[tuple[int, float]],
    index: Sequence[TrainExample],
    answer: dict,
    config: Config,
    model_name: str,
    prompt_hash: str,
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "summary_id": f"{q.video_id}:{q.plan_index}",
        "video_id": q.video_id,
        "plan_index": q.plan_index,
        "split": q.split,
        "instruction": q.instruction,
        "step_ids": list(q.step_ids),
        "summary": "\n".join(" ".join(line.split()) for line in answer["possible_mistakes"]),
        "neighbours": [
            {
                "video_id": index[j].video_id,
                "step_id": index[j].step_id,
                "instruction": index[j].instruction,
                "similarity": sim,
                "mistakes": [{"category": c, "description": d} for c, d in index[j].mistakes],
            }
            for j, sim in hits
        ],
        "retrieval": {"index_split": "train", "embedding_model": model_name, "k": config.k, "index_size": len(index)},
        "provenance": {
            "builder": BUILDER,
            "version": BUILDER_VERSION,
            "source": "CaptainCook4D complete_step_annotations.json + error_annotations.json (train split)",
            "stage": "mistake_summary",
            "model": config.llm.model,
            "prompt_hash": prompt_hash,
            "notes": [],
        },
        "verification": {"status": "unverified", "annotators": [], "checks": 0},
    }


def build(
    config: Config, report: SummaryFigures | None = None, *, _index_splits: Sequence[str] = ("train",)
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``("mistake_summary", record)`` for every instruction of the chosen splits; fill ``report``."""
    from streamcue.embedding import Embedder, model_name

    report = report if report is not None else SummaryFigures()
    guidance, splits = guidance_and_splits(config.annotations, config.counted_mistakes)
    if config.recordings:
        unknown = set(config.recordings) - splits.keys()
        if unknown:
            raise ConfigError(f"recording ids not in the annotations: {sorted(unknown)}")
        guidance = [g for g in guidance if g["video_id"] in config.recordings]
    qs = queries(guidance, splits, config.splits)
    index = train_index(config.annotations, splits, config.counted_mistakes, _index_splits)
    report.recordings, report.index_size = len({q.video_id for q in qs}), len(index)
    embedder = Embedder(config.embedding_model)
    neighbours = retrieve(embedder, index, [q.instruction for q in qs], config.k)
    measured = "test" if "test" in config.splits else "validation"
    pairs = [(q, h) for q, h in zip(qs, neighbours) if q.split == measured]
    report.retrieval = {
        "k": config.k,
        "embedding_model": model_name(config.embedding_model),
        "measured_on": measured,
        **retrieval_figures([q for q, _ in pairs], [h for _, h in pairs], index),
    }
    prompt = load_prompt(*PROMPT)
    llm = LLMClient(config.llm, use_cache=config.use_cache)
    requests = [
        Request(
            (
                {
                    "role": "user",
                    "content": prompt.render(
                        activity=q.activity, instruction=q.instruction, mistakes=_mistake_lines(hits, index)
                    ),
                },
            ),
            ANSWER_SCHEMA,
            prompt.version,
            "mistake_summary",
        )
        for q, hits in zip(qs, neighbours)
    ]
    batch = max(1, 8 * config.llm.max_concurrency)
    name = model_name(config.embedding_model)
    for start in track(range(0, len(qs), batch), "mistake summaries", total=-(-len(qs) // batch)):
        answers = llm.complete_many(requests[start : start + batch])
        for q, hits, answer in zip(qs[start : start + batch], neighbours[start : start + batch], answers):
            report.summaries[q.split] = report.summaries.get(q.split, 0) + 1
            yield "mistake_summary", _record(q, hits, index, answer, config, name, prompt.sha256[:16])
    report.llm = {"model": llm.settings.model, **llm.usage.to_dict()}


def command(
    out: Annotated[Path, typer.Option(help="Output folder: mistake_summaries.jsonl and build_report.json.")],
    annotations: Annotated[
        Optional[Path],
        typer.Option(
            help="CaptainCook4D annotation folder (default: ../shared/data/captaincook4d or $STREAMCUE_CAPTAINCOOK4D)."
        ),
    ] = None,
    split: Annotated[
        Optional[list[str]],
        typer.Option(help="Split whose instructions get a summary: validation or test (repeatable; default both)."),
    ] = None,
    k: Annotated[int, typer.Option(help="Training-split neighbours retrieved per instruction.")] = 5,
    embedding_model: EmbeddingModel = None,
    recording: Annotated[Optional[list[str]], typer.Option(help="Only these recording ids (repeatable).")] = None,
    llm_base_url: LLMBaseURL = None,
    llm_model: LLMModel = None,
    llm_structured: LLMStructured = "json_schema",
    llm_concurrency: LLMConcurrency = 4,
    llm_timeout: LLMTimeout = None,
    llm_retries: LLMRetries = None,
    no_cache: NoCache = False,
) -> None:
    """LiveCook mistake summaries: for each validation/test instruction, the mistakes people made on similar
    training-split instructions, summarised by an LLM (for the mistake prompt of a turn-based model).

    Retrieval uses sentence embeddings of the instruction text over the training split only. The
    build report holds the retrieval figures (same step id and category among the neighbours of
    the test actions with a counted mistake, beside the ceiling). Answers are cached: a re-run
    makes no new call and a killed build resumes.

    Example:

        streamcue build livecook-summaries --split test --out out/livecook-summaries \\
            --llm-base-url http://127.0.0.1:8000/v1 --llm-model Qwen2.5-7B-Instruct
    """
    from streamcue.dataset_builders.output import run_builder
    from streamcue.dataset_builders.registry import get_builder
    from streamcue.dataset_builders.summaries import print_llm_usage
    from streamcue.paths import default_captaincook4d

    settings = LLMSettings.resolve(
        base_url=llm_base_url, model=llm_model, structured=llm_structured, max_concurrency=llm_concurrency,
        timeout_s=llm_timeout, max_retries=llm_retries,
    )
    splits = tuple({"val": "validation"}.get(s, s) for s in split) if split else SUMMARY_SPLITS
    config = Config(
        annotations=annotations or default_captaincook4d(),
        llm=settings,
        splits=splits,
        k=k,
        use_cache=not no_cache,
        embedding_model=str(embedding_model) if embedding_model else None,
        recordings=tuple(recording or ()),
    )
    result, report = run_builder(get_builder(BUILDER), config, out)
    figures = report.details
    r = figures["retrieval"]
    console.out.print(
        f"{result.counts.get('mistake_summary', 0)} mistake summaries "
        f"({', '.join(f'{split} {n}' for split, n in figures['summaries'].items())}) from "
        f"{figures['index_size']} training actions with a counted mistake -> {out}",
        markup=False,
    )
    if r.get("actions_with_counted_mistake"):
        console.out.print(
            f"retrieval, k={r['k']}, over {r['actions_with_counted_mistake']} {r['measured_on']} actions "
            f"with a counted mistake: same step {r['same_step']:.1%} (ceiling {r['ceiling_same_step']:.1%}), "
            f"same step and category {r['same_step_category']:.1%} (ceiling {r['ceiling_category']:.1%}), "
            f"category recall {r['category_recall']:.1%}",
            markup=False,
        )
    print_llm_usage(report.llm)
