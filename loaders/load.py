"""Read a release back as typed records, through ``datasets.load_dataset``.

>>> from streamcue.loaders import load, by_video
>>> qas = load("interval_qa", "ORG/NAME", revision="v1.0.0", split="test")   # doctest: +SKIP
>>> for video_id, records in by_video(qas): ...                              # doctest: +SKIP

``source`` is a Hub repository id (``HF_ENDPOINT`` points at another Hub-compatible server) or
a local release folder. Videos are not part of a release: :func:`video_path` joins a video's
relative ``uri`` to the video root you keep them under.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from itertools import groupby
from pathlib import Path
from typing import Any

from streamcue.bulk import gc_paused
from streamcue.errors import ConfigError, InputError, ServiceError
from streamcue.extras import require
from streamcue.fields import unknown_name
from streamcue.schemas.discovery import CONFIG_NAMES, KIND_OF_CONFIG
from streamcue.schemas.features import RELEASE_KINDS, Layout, decode
from streamcue.loaders.records import record_class
from streamcue.paths import resolve_uri

__all__ = ["load", "read_config", "by_video", "video_path"]


def _kind(name: str) -> str:
    kind_of = {**{k: k for k in RELEASE_KINDS}, **KIND_OF_CONFIG}
    if name not in kind_of:
        raise unknown_name("record kind", name, tuple(kind_of))
    return kind_of[name]


def _load_dataset(source: str, config: str, revision: str | None, split: str | None) -> Any:
    datasets = require("datasets", "release")
    datasets.disable_progress_bars()
    local = Path(source).is_dir()
    if local and revision is not None:
        # load_dataset(folder, revision=...) silently ignores the revision; refuse rather than mislead.
        raise ConfigError(f"{source} is a local folder, which has no revisions; load the version's own folder, "
                          "or its repository id through a Hub-compatible server (HF_ENDPOINT)")
    try:
        return datasets.load_dataset(str(source), config, revision=revision, split=split)
    except ValueError as exc:
        raise ConfigError(f"{source}: {str(exc).splitlines()[0]}") from None
    except FileNotFoundError as exc:
        raise InputError(f"not found: {str(exc).splitlines()[0]}", file=source) from None
    except OSError as exc:  # connection problems, HTTP errors from the Hub client
        endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
        raise ServiceError(f"could not load {source} (revision {revision or 'main'}) from {endpoint}: "
                           f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


def load(kind: str, source: str | Path, revision: str | None = None, split: str | None = None) -> Any:
    """Typed records of one config: a list for one ``split``, else ``{split: list}``.

    ``kind`` is a record kind or config name (``interval_qa``, ``dense_caption``, ``guidance``,
    ``videos``); ``revision`` is a tag such as ``"v1.0.0"`` (Hub sources only).
    """
    kind = _kind(kind)
    cls = record_class(kind)
    parts = read_config(kind, source, revision, split)
    with gc_paused():  # millions of small objects: the cyclic GC would rescan them over and over
        typed = {name: [cls.from_dict(r) for r in rows] for name, rows in parts.items()}
    return typed[split] if split is not None else typed


def read_config(kind: str, source: str | Path, revision: str | None = None,
                split: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """``{split: records}`` of one record kind of a release (folder or Hub id), records as plain dicts in the
    canonical form (:mod:`streamcue.schemas.features`); only ``split`` when given."""
    config = CONFIG_NAMES[kind]
    if Path(source).is_dir() and (Path(source) / "manifest.json").is_file():
        from streamcue.release.manifest import check_record_files

        check_record_files(source)  # what is read is what the manifest lists: SHA-256 and row counts
    loaded = _load_dataset(str(source), config, revision, split)
    shape = _layout(str(source), config, revision)
    parts = {split: loaded} if split is not None else dict(loaded.items())
    with gc_paused():
        return {name: [decode(row, kind, shape) for row in part.to_list()] for name, part in parts.items()}


def _layout(source: str, config: str, revision: str | None) -> Layout:
    """The release's layout of ``config`` (which fields it holds as JSON text), from its manifest.json."""
    import json

    if Path(source).is_dir():
        path = Path(source) / "manifest.json"
    else:
        hub = require("huggingface_hub", "release")
        try:
            path = Path(hub.hf_hub_download(source, "manifest.json", repo_type="dataset", revision=revision))
        except Exception as exc:  # noqa: BLE001 - HTTP, offline, not found: whatever the Hub client raises
            raise ServiceError(f"could not read manifest.json of {source} (revision {revision or 'main'}): "
                               f"{type(exc).__name__}") from None
    if not path.is_file():
        raise InputError("not a streamcue release (no manifest.json)", file=source)
    return Layout.from_dict(json.loads(path.read_text(encoding="utf-8")).get("layout", {}).get(config))



def by_video(records: Iterable[Any]) -> Iterator[tuple[str, list[Any]]]:
    """``(video_id, records)`` groups, in order of first appearance of each video."""
    records = list(records)
    order = {}
    for rec in records:
        order.setdefault(rec.video_id, len(order))
    ordered = sorted(records, key=lambda r: order[r.video_id])
    for video_id, group in groupby(ordered, key=lambda r: r.video_id):
        yield video_id, list(group)


def video_path(video: Any, video_root: str | Path) -> Path:
    """Where a video's file lives under ``video_root`` (its ``uri`` is relative to the root).

    A URL, an absolute path, ``..`` or a symlink that leads out of the root is refused.
    """
    uri = video.uri if hasattr(video, "uri") else video["uri"]
    vid = video.video_id if hasattr(video, "video_id") else video.get("video_id", "?")
    return resolve_uri(video_root, uri, record=f"video_id={vid}")  # relative, normalised, never out of the root
