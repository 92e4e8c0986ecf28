"""The dataset card of a release: YAML header for the Hub and ``datasets``, then statistics and figures."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from streamcue.extras import require
from streamcue.registry import SOURCES
from streamcue.schemas.taxonomy import SPLITS

__all__ = ["CONFIG_NAMES", "data_path", "card_header", "statistics", "FIGURES", "write_figures",
           "card_body"]


#: Dataset config name of each record kind.
CONFIG_NAMES = {"video": "videos", "interval_qa": "interval_qa", "dense_caption": "dense_caption",
                "guidance": "guidance", "mc_question": "mc_question", "active_item": "active_item",
                "open_question": "open_question"}


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "n>1M"


def data_path(kind: str, split: str) -> str:
    return f"data/{CONFIG_NAMES[kind]}/{split}-00000-of-00001.parquet"


def card_header(meta: dict[str, Any], files: dict[str, dict[str, str]]) -> str:
    """The YAML front matter: configs and data_files (no loading script), licence, tags, sizes."""
    configs = [
        {"config_name": CONFIG_NAMES[kind],
         "data_files": [{"split": split, "path": path} for split, path in splits.items()]}
        for kind, splits in files.items() if splits
    ]
    header = {
        "pretty_name": meta["title"],
        "license": meta["license"],
        "language": ["en"],
        "task_categories": ["video-text-to-text", "visual-question-answering"],
        "tags": ["streaming-video", "egocentric", "proactive-assistant", "benchmark", "streamcue"],
        "size_categories": [_size_category(meta["total_rows"])],
        "configs": configs,
    }
    return "---\n" + yaml.safe_dump(header, sort_keys=False, allow_unicode=True) + "---\n"


def _table(head: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _all(records: dict[str, dict[str, list[dict[str, Any]]]], kind: str) -> list[dict[str, Any]]:
    return [rec for split in records.get(kind, {}).values() for rec in split]


def statistics(records: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """Numbers behind the card's tables and figures (also written to the manifest)."""
    stats: dict[str, Any] = {}
    videos = _all(records, "video")
    stats["video_duration_s"] = [v["duration_s"] for v in videos if v["duration_s"] is not None]
    stats["video_sources"] = dict(Counter(v["source"] for v in videos))
    qa = _all(records, "interval_qa")
    if qa:
        stats["task_types"] = dict(sorted(Counter(r["task_type"] for r in qa).items()))
        stats["answers_per_question"] = [len(r["answers"]) for r in qa]
        stats["interval_length_s"] = [a["end_s"] - a["start_s"] for r in qa for a in r["answers"]]
    dense = _all(records, "dense_caption")
    if dense:
        stats["dense_categories"] = dict(sorted(Counter(r["category"] for r in dense).items()))
        stats["captions_per_task"] = [len(r["captions"]) for r in dense]
    guidance = _all(records, "guidance")
    if guidance:
        stats["event_types"] = dict(Counter(e["type"] for r in guidance for e in r["events"]))
        stats["events_per_recording"] = [len(r["events"]) for r in guidance]
    return stats


def _summary(values: list[float]) -> list[str]:
    arr = np.asarray(values, dtype=float)
    return [f"{arr.min():.1f}", f"{np.median(arr):.1f}", f"{arr.mean():.1f}", f"{arr.max():.1f}"]


FIGURES = {
    # file name: (stats key, title, x label, bar chart of counts instead of a histogram)
    "task_types.png": ("task_types", "Questions per task type", "task type", True),
    "answers_per_question.png": ("answers_per_question", "Answer intervals per question", "intervals", False),
    "interval_length.png": ("interval_length_s", "Answer interval length", "seconds", False),
    "video_duration.png": ("video_duration_s", "Video duration", "seconds", False),
    "events_per_recording.png": ("events_per_recording", "Guidance events per recording", "events", False),
    "captions_per_task.png": ("captions_per_task", "Captions per dense-caption task", "captions", False),
}


def write_figures(stats: dict[str, Any], folder: Path) -> list[str]:
    """Draw the card's figures as PNG files in ``folder``; returns their names."""
    matplotlib = require("matplotlib", "release")
    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot", "release", "matplotlib")
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (key, title, xlabel, bars) in FIGURES.items():
        data = stats.get(key)
        if not data:
            continue
        fig, ax = plt.subplots(figsize=(6, 3.2), dpi=100)
        if bars:
            ax.bar(list(data), list(data.values()), color="#3b6ea8")
            ax.tick_params(axis="x", labelrotation=45)
        else:
            ax.hist(data, bins=min(30, max(5, len(set(data)))), color="#3b6ea8")
        ax.set(title=title, xlabel=xlabel, ylabel="count")
        fig.tight_layout()
        fig.savefig(folder / name, metadata={"Software": None})
        plt.close(fig)
        written.append(name)
    return written


def card_body(meta: dict[str, Any], rows: dict[str, dict[str, int]], stats: dict[str, Any],
              figures: list[str]) -> str:
    """The human part of the card: how to load it, sizes, statistics, caveats, citation."""
    repo = meta.get("repo") or "ORG/NAME"
    first = next(iter(CONFIG_NAMES[k] for k in rows if k != "video"), "videos")
    parts = [f"# {meta['title']}\n", f"Version **{meta['version']}** (record schema {meta['schema_version']}), "
             f"built with streamcue {meta['streamcue_version']}.\n"]
    parts.append("## Load it\n\n```python\nfrom datasets import load_dataset\n\n"
                  f'ds = load_dataset("{repo}", "{first}", split="test", revision="v{meta["version"]}")\n'
                  "# or typed records (dataclasses generated from the schemas):\n"
                  "from streamcue.loaders import load\n"
                  f'records = load("{first}", "{repo}", revision="v{meta["version"]}", split="test")\n```\n')
    parts.append("Videos are not redistributed: the `videos` config gives each video's id and its path "
                 "relative to a video root you supply. Columns listed as JSON below hold JSON text "
                 "(open-ended objects); `streamcue.loaders.load` decodes them.\n")
    parts.append("## Rows\n\n" + _table(["config", "train", "validation", "test", "JSON columns"], [
        [CONFIG_NAMES[k], *(s.get(sp, 0) for sp in SPLITS),
         ", ".join(meta["json_columns"][k]) or "-"]
        for k, s in rows.items()]))
    parts.append("## Verification\n")
    if meta["unverified_in_benchmark"]:
        counts = ", ".join(f"{n} {k}" for k, n in meta["unverified_in_benchmark"].items())
        parts.append(f"**Released with `--allow-unverified`:** {counts} record(s) in the validation/test "
                     "splits are not yet human-verified (see each record's `verification`).\n")
    else:
        parts.append("Every record in the validation and test splits is human-verified.\n")
    if meta["rejected_left_out"]:
        parts.append("Records rejected by annotators are left out: "
                     + ", ".join(f"{n} {k}" for k, n in meta["rejected_left_out"].items()) + ".\n")
    parts.append("## Statistics\n")
    if "video_duration_s" in stats and stats["video_duration_s"]:
        parts.append(_table(["quantity", "min", "median", "mean", "max"], [
            ["video duration (s)", *_summary(stats["video_duration_s"])],
            *([["answer intervals per question", *_summary(stats["answers_per_question"])],
               ["answer interval length (s)", *_summary(stats["interval_length_s"])]] if "task_types" in stats else []),
            *([["events per recording", *_summary(stats["events_per_recording"])]] if "event_types" in stats else []),
            *([["captions per task", *_summary(stats["captions_per_task"])]] if "captions_per_task" in stats else []),
        ]))
    for key, label in (("task_types", "task type"), ("event_types", "guidance event type"),
                       ("dense_categories", "dense-caption category"), ("video_sources", "video source")):
        if stats.get(key):
            parts.append("\n" + _table([label, "count"], [[k, v] for k, v in stats[key].items()]))
    parts.append("\n" + "\n".join(f"![{name[:-4].replace('_', ' ')}](figures/{name})" for name in figures) + "\n")
    parts.append(_licences(meta["license"], list(stats.get("video_sources", {}))))
    citation = meta.get("citation") or (
        f"@misc{{streamcue_{meta['version'].replace('.', '_')},\n  title = {{{meta['title']}}},\n"
        f"  note = {{Version {meta['version']}, built with streamcue {meta['streamcue_version']}}}\n}}")
    cited = [SOURCES[name].citation.strip() for name in sorted(stats.get("video_sources", {}))
             if name in SOURCES and SOURCES[name].citation]
    parts.append("```bibtex\n" + "\n".join([citation.strip(), *cited]) + "\n```\n")
    return "\n".join(parts)


def _licences(licence: str, sources: list[str]) -> str:
    """The card's licence section: the release's licence, then each source's (from the registry)."""
    rows = [[SOURCES[name].title, f"`{name}`", SOURCES[name].licence, SOURCES[name].licence_note,
             SOURCES[name].homepage or "-"] for name in sorted(sources) if name in SOURCES]
    text = ("## Licence and citation\n\nAnnotations: " + licence + ". Videos keep their own licences "
            "(see the `license` column of `videos`).")
    if rows:
        text += (" The records come from these sources, each under its own licence; please cite them too "
                 "(BibTeX below):\n\n" + _table(["source", "name", "licence", "terms", "homepage"], rows))
    return text + "\n"
