"""The dataset card of a release: YAML header for the Hub and ``datasets``, then what a Hub user expects.

Sections: summary, how to load and how to score it, configs and splits, fields with an example
instance, annotation process (annotators, guideline version, verified share per split, agreement),
personal information and anonymization, licences and citations of every source, limitations,
statistics and figures. The YAML validates as ``huggingface_hub.DatasetCardData``.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from streamcue.errors import ConfigError
from streamcue.extras import require
from streamcue.registry import BENCHMARKS, SOURCES, module_name
from streamcue.schemas._validate import load_schema
from streamcue.schemas.discovery import CONFIG_NAMES
from streamcue.schemas.discovery import KIND_OF_CONFIG as KIND_OF
from streamcue.schemas.features import typed
from streamcue.schemas.kinds import TABLE, names, ordered, view
from streamcue.schemas.taxonomy import SPLITS

__all__ = ["CONFIG_NAMES", "KIND_OF", "VIDEO_FILES", "DEFAULT_ORDER", "choose_default", "default_kind", "data_path",
           "video_files_path", "card_header", "statistics", "FIGURES", "write_figures", "card_body"]

#: The config of the published video files themselves (the Hub's video-dataset form: a ``datasets.Video`` column,
#: decoded lazily), one row per file of ``videos/`` with its ``video_id`` and ``uri``.
VIDEO_FILES = "video_files"
#: Which config ``load_dataset(repo)`` gives without a config name: the first present in this order (the kinds
#: ranked in the ``default`` order of :data:`streamcue.schemas.kinds.TABLE`).
DEFAULT_ORDER = names("DEFAULT_ORDER", lambda: ordered("default"))

#: What a record of each kind asks of a streaming-video assistant (the card's summary: each row's ``card``).
TASKS = view("TASKS", lambda: {k: TABLE[k].card for k in ordered("release") if TABLE[k].card})


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "n>1M"


def data_path(kind: str, split: str, digest: str = "") -> str:
    """Where a config's split lives in the release. The name ends with the first 12 hex digits of the file's
    SHA-256: ``datasets`` caches a local folder under its name and config (``datasets`` 5.2 hands back the
    cached rows of another folder of the same name), so content-addressed names keep every release apart."""
    return f"data/{CONFIG_NAMES[kind]}/{split}-00000-of-00001{'-' + digest[:12] if digest else ''}.parquet"


def video_files_path(split: str, digest: str = "") -> str:
    """Where the ``video_files`` config's split lives (named by its content like :func:`data_path`)."""
    return f"data/{VIDEO_FILES}/{split}-00000-of-00001{'-' + digest[:12] if digest else ''}.parquet"


def default_kind(kinds: Any, chosen: str | None = None) -> str:
    """The default config's kind: ``chosen`` (a kind, see :func:`choose_default`), else the first of
    :data:`DEFAULT_ORDER` present."""
    return chosen if chosen in kinds else next(k for k in DEFAULT_ORDER if k in kinds)


def choose_default(kinds: Any, previous: str | None, explicit: str | None) -> str:
    """The kind of a release's default config (what ``load_dataset(repo)`` gives without a config name).

    It stays what it was in the previous version (``previous``, a config name) unless the maintainer names
    another (``explicit``, ``release build --default-config``); the changelog and ``release diff`` then say
    so. A previous default that this release no longer holds must be replaced explicitly. Without a previous
    version: ``explicit``, else the first of :data:`DEFAULT_ORDER` present.
    """
    names = ", ".join(CONFIG_NAMES[k] for k in kinds)
    if explicit is not None:
        if KIND_OF.get(explicit) not in kinds:
            raise ConfigError(f"--default-config {explicit}: not a config of this release ({names})")
        return KIND_OF[explicit]
    if previous is not None:
        if KIND_OF.get(previous) not in kinds:
            raise ConfigError(f"the previous version's default config {previous} is not in this release: name the "
                              f"new default with --default-config ({names}); the changelog will say it changed")
        return KIND_OF[previous]
    return default_kind(kinds)


def _annotations_creators(records: dict[str, dict[str, list[dict[str, Any]]]]) -> list[str]:
    """found (converted from the sources' annotations), machine-generated (a model wrote them),
    expert-generated (people verified or wrote them)."""
    out = set()
    for kind, splits in records.items():
        if kind == "video":
            continue
        for rec in (r for recs in splits.values() for r in recs):
            prov = rec.get("provenance") or {}
            out.add("machine-generated" if prov.get("model") else "found")
            if (rec.get("verification") or {}).get("status") == "verified":
                out.add("expert-generated")
    return sorted(out) or ["found"]


def _source_datasets(sources: list[str]) -> list[str]:
    return sorted("original" if name == "recorded" else f"extended|other-{name}" for name in sources)


def card_header(meta: dict[str, Any], files: dict[str, dict[str, str]],
                records: dict[str, dict[str, list[dict[str, Any]]]] | None = None) -> str:
    """The YAML front matter: configs (one the default) and data_files (no loading script), licence, tags,
    sizes, how the annotations were made and which datasets they come from."""
    present = [kind for kind, splits in files.items() if splits]
    default = default_kind(present, meta.get("default"))
    configs = [
        {"config_name": CONFIG_NAMES[kind], **({"default": True} if kind == default else {}),
         "data_files": [{"split": split, "path": path} for split, path in files[kind].items()]}
        for kind in present
    ]
    if meta.get("video_files"):
        configs.append({"config_name": VIDEO_FILES,
                        "data_files": [{"split": split, "path": path} for split, path in meta["video_files"].items()]})
    records = records or {}
    sources = sorted({v["source"] for recs in records.get("video", {}).values() for v in recs})
    header = {
        "pretty_name": meta["title"],
        "license": meta["license"],
        "language": ["en"],
        "annotations_creators": _annotations_creators(records),
        "source_datasets": _source_datasets(sources) or ["original"],
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


def _metric_version(metric: str) -> str:
    """``<config>.vN``: the newest versioned config file of a metric (``metrics/configs``), read without
    importing the metrics layer (it sits above releases)."""
    config = module_name(metric)
    spec = importlib.util.find_spec("streamcue.metrics")
    versions = [int(m.group(1)) for folder in (spec.submodule_search_locations or []) if spec
                for p in Path(folder, "configs").glob(f"{config}.v*.json")
                if (m := re.fullmatch(rf"{re.escape(config)}\.v(\d+)\.json", p.name))]
    return f"{config}.v{max(versions)}" if versions else config


def _benchmarks(kinds: list[str], sources: list[str]) -> list[Any]:
    return [b for b in BENCHMARKS.values() if set(b.kinds) & set(kinds) and set(b.sources) & set(sources)]


def _example(record: dict[str, Any], keep: int = 3) -> Any:
    """The record with long lists cut to their first items (for the card only)."""
    if isinstance(record, dict):
        return {k: _example(v, keep) for k, v in record.items()}
    if isinstance(record, list):
        cut = [_example(v, keep) for v in record[:keep]]
        return cut + [f"... {len(record) - keep} more"] if len(record) > keep else cut
    return record


def _fields(kind: str, records: list[dict[str, Any]]) -> str:
    schema = load_schema(kind)
    node, _ = typed(kind, records)
    props = schema.get("properties", {})
    needed = set(schema.get("required", ()))
    rows = [[f"`{name}`", sub.type_name(), "yes" if name in needed else "no",
             " ".join(str(props.get(name, {}).get("description", "")).split()).replace("|", "\\|") or "-"]
            for name, sub in node.props.items()]
    return _table(["field", "type", "required", "description"], rows)


def _verified_section(meta: dict[str, Any], kinds: list[str]) -> list[str]:
    parts = []
    rows = []
    for kind in kinds:
        for split in SPLITS:
            v, n = meta["verified"].get(kind, {}).get(split, (0, 0))
            if n:
                rows.append([CONFIG_NAMES[kind], split, v, n, f"{100 * v / n:.1f}%"])
    if rows:
        parts.append("Verified share of the records built, per split (rejected records count as not verified):\n\n"
                     + _table(["config", "split", "verified", "records built", "share"], rows))
    if meta.get("only_verified"):
        left = ", ".join(f"{n} {CONFIG_NAMES[k]}" for k, n in meta["unverified_left_out"].items()) or "none"
        parts.append("**Released with `--only-verified`:** only human-verified records are published, with the "
                     f"videos they refer to; records left out as not verified: {left}.\n")
    elif meta["unverified_in_benchmark"]:
        counts = ", ".join(f"{n} {CONFIG_NAMES.get(k, k)}" for k, n in meta["unverified_in_benchmark"].items())
        parts.append(f"**Released with `--allow-unverified`:** {counts} record(s) in the validation/test "
                     "splits are not yet human-verified (see each record's `verification`).\n")
    else:
        parts.append("Every record in the validation and test splits is human-verified.\n")
    if meta.get("signing"):
        sig = meta["signing"]
        parts.append(f"**Signed verification:** {sig['verified']} verified record(s), each signed with the "
                     f"maintainer's Ed25519 key `{sig['key']}` (public key `{sig['public_key']}`; "
                     "`verification.signature`). The signature proves that the key's holder stated the record and "
                     "its verification (who checked it, when, which Label Studio task and annotations); it does not "
                     "prove that the key's holder was honest. Check a downloaded copy with `streamcue release "
                     f"verify {meta.get('repo') or 'ORG/NAME'}@v{meta['version']} --key {sig['key']}`.\n")
    if meta["rejected_left_out"]:
        parts.append("Records rejected by annotators are left out: "
                     + ", ".join(f"{n} {CONFIG_NAMES.get(k, k)}" for k, n in meta["rejected_left_out"].items()) + ".\n")
    return parts


def _annotation_section(meta: dict[str, Any], records: dict[str, dict[str, list[dict[str, Any]]]],
                        kinds: list[str]) -> str:
    """Who verified the records (pseudonyms), under which guideline, how disagreements were decided, the
    verified share, the records whose verification did not hold, and the agreement ``annotate pull`` measured."""
    published = {k: [r for recs in records.get(k, {}).values() for r in recs] for k in kinds}
    ver = {k: [r.get("verification") or {} for r in recs] for k, recs in published.items()}
    annotators = sorted({a for vs in ver.values() for v in vs for a in v.get("annotators") or ()}, key=_natural)
    reviewers = sorted({v["reviewer"] for vs in ver.values() for v in vs if v.get("reviewer")}, key=_natural)
    parts = ["## Annotation process\n",
             "Records are built from the sources' own annotations by streamcue's builders (each record's "
             "`provenance` names the builder, its version and, for generated text, the model and prompt). People "
             "then verify them in Label Studio (`streamcue annotate push/pull`): a record is verified when two or "
             "more annotators agree, when a majority of three or more does, or when a reviewer decides their "
             "disagreement; its `verification` says how (`decided_by`), who (pseudonyms), under which guideline, "
             "and carries `content_sha256`, the SHA-256 of what was verified (the record without its "
             "`verification`, as canonical JSON: keys sorted, no spaces, UTF-8). A record edited after its "
             "verification, or checked by one person only, is published as `unverified`.\n",
             f"- Annotators: {', '.join(annotators) or 'none recorded'}"
             + (f"; reviewers: {', '.join(reviewers)}" if reviewers else "")
             + " (pseudonyms, stable across versions of this dataset; the mapping stays with the maintainer)\n"]
    rows = []
    for kind in kinds:
        guides = Counter(v.get("guideline") or "not recorded" for v in ver[kind]
                         if v.get("guideline") or v.get("status") == "verified")
        decided = Counter(v.get("decided_by") for v in ver[kind] if v.get("status") == "verified")
        if guides or decided:
            rows.append([CONFIG_NAMES[kind], ", ".join(f"{g} ({n})" for g, n in sorted(guides.items())) or "-",
                         *(decided.get(how, 0) for how in ("agreement", "majority", "reviewer"))])
    if rows:
        parts.append("Guideline versions the annotators saw (published records annotated under each) and how the "
                     "published verified records were decided:\n\n"
                     + _table(["config", "guideline", "agreement", "majority", "reviewer"], rows))
    parts += _verified_section(meta, kinds)
    held = {k: v for k, v in (meta.get("not_held") or {}).items() if v}
    if held:
        listed = []
        for kind, by_id in held.items():
            first = ", ".join(f"`{rid}` ({why})" for rid, why in list(by_id.items())[:5])
            listed.append(f"{CONFIG_NAMES.get(kind, kind)} {first}"
                          + (f" and {len(by_id) - 5} more" if len(by_id) > 5 else ""))
        parts.append("Records marked verified that count as unverified here (edited after verification, or "
                     "checked by one person): " + "; ".join(listed) + ".\n")
    parts.append(_agreement(meta.get("annotation") or {}))
    return "\n".join(parts)


def _natural(name: str) -> tuple[str, int]:
    head, _, number = name.rpartition("-")
    return (head, int(number)) if number.isdigit() else (name, 0)


def _figure(value: Any) -> str:
    """An agreement figure as the card prints it: 4 decimals, ``-`` when there was nothing to compare."""
    return "-" if value is None else f"{value:.4f}"


def _agreement(figures: dict[str, Any]) -> str:
    """Inter-annotator agreement per kind, overall and per annotator pair, as ``annotate pull`` measured it
    (``agreement.json``; :mod:`streamcue.annotation.agreement` defines every figure)."""
    if not figures:
        return ("Inter-annotator agreement: not measured for this release (no `agreement.json` from "
                "`annotate pull` beside the records, nor `--annotation-figures`).\n")
    parts = []
    for kind, entry in sorted(figures.items()):
        names = entry.get("figures") or [k for k in entry["overall"] if k != "records"]
        head = (f"### Inter-annotator agreement: `{CONFIG_NAMES.get(kind, kind)}`\n\nMeasured by `streamcue "
                f"annotate pull` over the {entry.get('records', entry['overall'].get('records'))} records of the "
                f"Label Studio project (every pair of annotators who both submitted a record; reviewers left out), "
                f"{entry.get('required', '?')} annotators per record, boundaries within "
                f"{entry.get('tolerance_s', '?')} s; records decided "
                + (", ".join(f"by {how}: {n}" for how, n in sorted((entry.get("decided_by") or {}).items()))
                   or "by nobody yet")
                + ". A figure with nothing to compare is `-`.\n\n")
        table = [["all pairs", entry["overall"]["records"], *(_figure(entry["overall"].get(n)) for n in names)]]
        table += [[" & ".join(p["annotators"]), p["records"], *(_figure(p.get(n)) for n in names)]
                  for p in entry.get("pairs", [])]
        parts.append(head + _table(["annotators", "record pairs", *names], table))
    return "\n".join(parts)


def _privacy_section(sources: list[str], videos: list[dict[str, Any]], check: dict[str, Any] | None = None) -> str:
    published = [v for v in videos if SOURCES.get(v["source"]) and SOURCES[v["source"]].publishes_videos]
    text = ("## Personal and sensitive information\n\nRecords hold text annotations and times. Every published "
            "string was scanned for local paths, home directories, e-mail addresses and account names (none may be "
            "published). Annotators and reviewers appear as pseudonyms (annotator-N, reviewer-N) that the release "
            "build assigns; the mapping to people stays with the maintainer.\n")
    if published:
        statuses = Counter(v["anonymization"]["status"] for v in published)
        text += (f"\n{len(published)} video(s) are published under `videos/` (each at its record's `uri`; the "
                 f"`{VIDEO_FILES}` config loads them as a `datasets.Video` column); anonymization status: "
                 + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
                 + ". Faces and licence plates are blurred (`streamcue anonymize`); each video's report "
                   "(detectors and their versions, settings, per-frame detections, SHA-256 of the blurred file) is "
                   "published beside it (`<name>.anonymization.json`) with the contact sheet it names "
                   "(`<name>.contact.jpg`: frames sampled across the blurred video, every hidden region outlined; "
                   "blurred frames only, as published), and the release gate refuses a video unless a passing report "
                   "names its exact bytes and those of its sheet; a raw recording is never published.\n")
    if check:
        text += (f"\nAn anonymization check by a person was required: {check['ticked']} of {check['videos']} published "
                 "video(s) were ticked (\"all faces and plates hidden\") on their contact sheet, frames sampled across "
                 "the video with every hidden region outlined, in Label Studio; each check names the SHA-256 of the "
                 "video, report and sheet it was made on (`manifest.json`, `anonymization_check`; the sheet is "
                 "published beside the video), and the release gate refuses a video whose check is missing, rejected "
                 "or made on other bytes or another sheet. A contact sheet samples "
                 "frames: it does not show every frame.\n")
    others = [SOURCES[n] for n in sources if n in SOURCES and not SOURCES[n].publishes_videos]
    if others:
        text += ("\nVideos of these sources are not published (their terms do not allow it); obtain them from the "
                 "source under its own terms and pass their folder as the video root (`--video-root`); their "
                 "anonymization is the sources' (streamcue neither holds nor changes them):\n\n"
                 + _table(["source", "where to obtain the videos", "terms"],
                          [[s.title, s.homepage or "-", s.licence_note] for s in others]))
    elif not published:
        text += "\nNo video is published.\n"
    return text


def _limitations(meta: dict[str, Any], kinds: list[str]) -> str:
    items = ["Videos that are not published must be obtained from their sources: results depend on having the "
             "same video files (check `duration_s`).",
             "Records converted from the sources inherit their annotation errors; times are the sources' own, "
             "on each video's timeline.",
             "Generated text (where `provenance.model` is set) may be wrong even when it passed the evidence "
             "check; only verified records were checked by people."]
    unverified = {k: n for k, n in meta["unverified_in_benchmark"].items()}
    if unverified:
        items.append("Some validation/test records are not human-verified (see Annotation process).")
    if meta.get("only_verified"):
        items.append("Limited to verified records: the splits are smaller than the build and may not keep its "
                     "balance of tasks or videos.")
    json_fields = {CONFIG_NAMES[k]: v for k, v in meta["json_fields"].items() if v}
    if json_fields:
        items.append("These fields mix types across records and are stored as JSON text ("
                     + "; ".join(f"{c}: {', '.join(f'`{p}`' for p in ps)}" for c, ps in json_fields.items())
                     + "); `streamcue.loaders.load` decodes them.")
    return "## Limitations\n\n" + "\n".join(f"- {item}" for item in items) + "\n"


def card_body(meta: dict[str, Any], rows: dict[str, dict[str, int]], stats: dict[str, Any],
              figures: list[str], records: dict[str, dict[str, list[dict[str, Any]]]] | None = None) -> str:
    """The human part of the card: summary, load and score, structure, annotation, privacy, licences,
    limitations, statistics, citation."""
    records = records or {}
    repo = meta.get("repo") or "ORG/NAME"
    kinds = [k for k in rows if k != "video"]
    default = default_kind(list(rows), meta.get("default"))
    first = CONFIG_NAMES[default]
    sources = sorted(stats.get("video_sources", {}))
    benchmarks = _benchmarks(kinds, sources)
    version = meta["version"]
    parts = [f"# {meta['title']}\n", f"Version **{version}** (record schema {meta['schema_version']}), "
             f"built with streamcue {meta['streamcue_version']}.\n"]
    parts.append("## Summary\n\nA benchmark for streaming-video assistants: a model watches a video as it plays "
                 "and must speak at the right moments. Sources: "
                 + (", ".join(SOURCES[n].title if n in SOURCES else n for n in sources) or "-")
                 + (". Benchmarks: " + ", ".join(b.title for b in benchmarks) if benchmarks else "")
                 + ". Configs:\n\n" + "\n".join(f"- `{CONFIG_NAMES[k]}`: {TASKS.get(k, k)}" for k in rows) + "\n")
    videos = meta.get("video_files")
    parts.append("## Load it\n\n```python\nfrom datasets import " + ("Video, " if videos else "") + "load_dataset\n\n"
                 f'ds = load_dataset("{repo}", split="test", revision="v{version}")   # the default config, '
                 f"`{first}`\n"
                 f'videos = load_dataset("{repo}", "videos", split="test", revision="v{version}")\n'
                 # the published videos' bytes, as every machine reads them (Video() decoding needs torchcodec)
                 + (f'files = load_dataset("{repo}", "{VIDEO_FILES}", split="{next(iter(videos))}", '
                    f'revision="v{version}").cast_column("video", Video(decode=False))\n'
                    'first = files[0]["video"]["bytes"]   # the first video file (Video(), decoding, needs '
                    "torchcodec)\n" if videos else "")
                 + "# or typed records (dataclasses generated from the schemas):\n"
                 "from streamcue.loaders import load\n"
                 f'records = load("{first}", "{repo}", revision="v{version}", split="test")\n```\n')
    parts.append(f"The default config is `{first}`: it stays the default in later versions unless a version's "
                 "changelog says otherwise. Every config loads by its name:\n\n"
                 + _table(["config", "load it"], [
                     [f"`{CONFIG_NAMES[k]}`" + (" (default)" if k == default else ""),
                      f'`load_dataset("{repo}", "{CONFIG_NAMES[k]}", split="{next(iter(rows[k]), "test")}", '
                      f'revision="v{version}")`'] for k in rows]))
    parts.append("Every field comes back with the type the record held: integers as integers, nested objects "
                 "(answers, plan steps, events, `provenance`, `verification`) as structs and lists of structs.\n")
    if benchmarks:
        parts.append("## Score a model\n\nPlay the records to a model (`streamcue replay`), then score its "
                     "predictions with the benchmark's metric:\n\n"
                     + _table(["benchmark", "config", "metric", "metric config", "command"], [
                         [b.title, ", ".join(f"`{CONFIG_NAMES[k]}`" for k in b.kinds if k in rows), f"`{b.metric}`",
                          f"`{_metric_version(b.metric)}`",
                          f"`streamcue evaluate {b.metric} --gt {CONFIG_NAMES[b.kinds[0]]}.jsonl --pred "
                          "predictions.jsonl`"] for b in benchmarks])
                     + "\nReport the metric config version with your numbers; a change of scoring is a new version.\n")
    parts.append("## Configs and splits\n\n" + _table(["config", "train", "validation", "test"], [
        [f"`{CONFIG_NAMES[k]}`" + (" (default)" if k == default else ""), *(s.get(sp, 0) for sp in SPLITS)]
        for k, s in rows.items()]))
    parts.append("## Fields\n")
    for kind in rows:
        every = [r for recs in records.get(kind, {}).values() for r in recs]
        parts.append(f"### `{CONFIG_NAMES[kind]}`\n\n" + (_fields(kind, every) if every else ""))
        example = (meta.get("examples") or {}).get(kind)
        if example is not None:
            parts.append("An example instance (lists cut to their first 3 items):\n\n```json\n"
                         + json.dumps(_example(example), indent=2, ensure_ascii=False) + "\n```\n")
    parts.append(_annotation_section(meta, records, kinds))
    parts.append(_privacy_section(sources, [v for recs in records.get("video", {}).values() for v in recs],
                                  meta.get("anonymization_check")))
    parts.append(_licences(meta["license"], sources))
    citation = meta.get("citation") or (
        f"@misc{{streamcue_{version.replace('.', '_')},\n  title = {{{meta['title']}}},\n"
        f"  note = {{Version {version}, built with streamcue {meta['streamcue_version']}}}\n}}")
    cited = [SOURCES[name].citation.strip() for name in sources if name in SOURCES and SOURCES[name].citation]
    cited += [b.citation.strip() for b in benchmarks if b.citation and b.citation.strip() not in cited]
    parts.append("```bibtex\n" + "\n".join([citation.strip(), *cited]) + "\n```\n")
    parts.append(_limitations(meta, kinds))
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
    parts.append("## Changes\n\nSee `CHANGELOG.md` (records added, removed, modified field by field, and newly "
                 "verified, since the previous version); `manifest.json` lists every file with its SHA-256.\n")
    return "\n".join(parts)


def _licences(licence: str, sources: list[str]) -> str:
    """The card's licence section: the release's licence, then each source's (from the registry)."""
    rows = [[SOURCES[name].title, f"`{name}`", SOURCES[name].licence, SOURCES[name].licence_note,
             SOURCES[name].homepage or "-"] for name in sorted(sources) if name in SOURCES]
    text = ("## Licence and citation\n\nAnnotations: " + licence + ". Videos keep their own licences "
            "(see the `license` column of `videos`). The notices these licences require (copyright notices and "
            "licence texts, attributions) are in `NOTICE.md`; keep it with the records.")
    if rows:
        text += (" The records come from these sources, each under its own licence; please cite them too "
                 "(BibTeX below):\n\n" + _table(["source", "name", "licence", "terms", "homepage"], rows))
    return text + "\n"
