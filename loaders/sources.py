"""Open any records source the same way: a build folder, one JSONL record file, a release folder or a Hub dataset.

>>> from streamcue.loaders import open_records
>>> rs = open_records("out/ovo", kind="mc_question")                    # doctest: +SKIP
>>> rs = open_records("dist/v1.0.0", split="test")                      # doctest: +SKIP
>>> rs = open_records("ORG/NAME@v1.0.0")                                # doctest: +SKIP
>>> rs.kind, len(rs.records), rs.videos["v1"]["uri"], rs.video_root    # doctest: +SKIP

A build folder holds the files ``streamcue build`` writes (:data:`streamcue.schemas.discovery.FILE_NAMES`),
checked against their schemas as they are read; a release folder holds ``manifest.json`` and Parquet per config
(read through ``datasets.load_dataset``, as a Hub dataset is, ``HF_ENDPOINT`` naming any Hub-compatible
server). Records come back as plain dicts, exactly as a build's JSONL lines. ``video_root`` is the source's
own ``videos/`` folder when it ships one (for a Hub dataset: its videos downloaded into streamcue's cache folder,
one folder per commit), else None: a build's
videos live under a video root you keep them in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError, InputError, ServiceError
from streamcue.extras import require
from streamcue.paths import cache_dir
from streamcue.progress import shown
from streamcue.loaders.load import read_config
from streamcue.schemas.kinds import names, ordered
from streamcue.schemas.discovery import (CONFIG_NAMES, FILE_NAMES, KIND_OF_CONFIG, MANIFEST, VIDEOS_FILE,
                                         folder_files, kind_of_file)

__all__ = ["RecordSet", "RECORD_KINDS", "open_records", "is_hub_id"]

#: The record kinds a source may hold (the kinds ranked in the ``discover`` order of
#: :data:`streamcue.schemas.kinds.TABLE`), in that order.
RECORD_KINDS: Sequence[str] = names("RECORD_KINDS", lambda: ordered("discover"))
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*(@[\w.\-/]+)?$")


@dataclass(frozen=True)
class RecordSet:
    """Records of one source: ``records`` of ``kind`` (the first of ``by_kind``), every kind read in ``by_kind``,
    the videos by id, where the source's own video files are (``video_root``, None when it ships none), and
    ``origin`` (the folder or file path, or ``ORG/NAME@REVISION``). ``files``: the JSONL files read (none for a
    release)."""

    kind: str
    records: list[dict[str, Any]]
    videos: dict[str, dict[str, Any]]
    video_root: Path | None
    origin: str
    by_kind: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def n_records(self) -> int:
        return sum(len(rows) for rows in self.by_kind.values())


def is_hub_id(source: str | Path) -> bool:
    """Whether ``source`` names a Hub dataset (``ORG/NAME`` or ``ORG/NAME@REVISION``) rather than a local path."""
    text = str(source)
    return not Path(text).exists() and bool(_HUB_ID.match(text))


def open_records(source: str | Path, *, kind: str | Sequence[str] | None = None, split: str | None = None,
                 revision: str | None = None) -> RecordSet:
    """The records of ``source`` (a build folder, one JSONL record file, a release folder or ``ORG/NAME[@REV]``).

    ``kind``: one record kind, or the kinds to read (a benchmark's); default every record kind found.
    ``split``: only the records of that split (the videos' ``split``); ``revision``: a Hub tag or commit
    (also spelled ``ORG/NAME@REV``)."""
    kinds = (kind,) if isinstance(kind, str) else tuple(kind) if kind is not None else tuple(RECORD_KINDS)
    unknown = [k for k in kinds if k not in FILE_NAMES or k == "video"]
    if unknown:
        raise ConfigError(f"not a record kind: {unknown[0]} (one of {', '.join(RECORD_KINDS)})")
    if is_hub_id(source):
        repo, _, rev = str(source).partition("@")
        if rev and revision is not None and rev != revision:
            raise ConfigError(f"{source}: two revisions given ({rev} and {revision}); give one")
        return _open_release(repo, kinds, split, rev or revision, origin=f"{repo}@{rev or revision or 'main'}")
    path = Path(source)
    if revision is not None:
        raise ConfigError(f"{source} is a local path, which has no revisions; open the version's own folder, or "
                          "its Hub id ORG/NAME@REVISION")
    if path.is_dir() and (path / MANIFEST).is_file():
        return _open_release(path, kinds, split, None, origin=str(path))
    if path.is_dir():
        files = folder_files(path, kinds)
        if not files:
            raise InputError(f"no {' or '.join(FILE_NAMES[k] for k in kinds)} in the folder (nor a release's "
                             f"{MANIFEST})", file=path)
        return _open_jsonl(files, path / VIDEOS_FILE, split, origin=str(path))
    if path.is_file():
        found = kind_of_file(path, kinds)
        if found is None:
            raise InputError(f"cannot tell the record kind ({' or '.join(kinds)}): name the file <kind>.jsonl or "
                             "give the kind", file=path, line=1)
        return _open_jsonl({found: path}, path.parent / VIDEOS_FILE, split, origin=str(path))
    raise InputError("no such records file or folder, nor a Hub dataset ORG/NAME@REVISION", file=path)


def _open_jsonl(files: dict[str, Path], videos_file: Path, split: str | None, *, origin: str) -> RecordSet:
    from streamcue.io import read_jsonl
    from streamcue.schemas import validate_file

    videos_path = videos_file if videos_file.is_file() else None
    if videos_path is not None:
        validate_file(videos_path, "video")
    videos = {v["video_id"]: v for v in read_jsonl(videos_path)} if videos_path is not None else {}
    if split is not None and videos_path is None:
        raise InputError(f"split {split} needs the videos' splits: no {VIDEOS_FILE} beside the records",
                         file=videos_file)
    by_kind = {}
    for kind, path in files.items():
        validate_file(path, kind, videos=videos_path)
        rows = read_jsonl(path)
        by_kind[kind] = rows if split is None else [r for r in rows if videos.get(r.get("video_id"), {}).get("split")
                                                    == split]
    if split is not None:
        videos = {vid: v for vid, v in videos.items() if v.get("split") == split}
    return _record_set(by_kind, videos, None, origin, files)


def _open_release(source: str | Path, kinds: Sequence[str], split: str | None, revision: str | None, *,
                  origin: str) -> RecordSet:
    configs = _configs(source, revision)
    present = [k for k in kinds if CONFIG_NAMES.get(k) in configs]
    if not present:
        raise InputError(f"the release holds no {' or '.join(kinds)} (its configs: {', '.join(sorted(configs))})",
                         file=origin)
    if split is not None and not any(split in configs[CONFIG_NAMES[k]] for k in present):
        raise ConfigError(f"{origin} has no split {split} of {', '.join(present)}")

    def rows(kind: str) -> list[dict[str, Any]]:
        splits = configs.get(CONFIG_NAMES[kind], {})
        wanted = [split] if split is not None else list(splits)
        return [r for s in wanted if s in splits for r in read_config(kind, source, revision, s)[s]]

    by_kind = {k: rows(k) for k in present}
    videos = {v["video_id"]: v for v in rows("video")} if CONFIG_NAMES["video"] in configs else {}
    return _record_set(by_kind, videos, _video_root(source, revision), origin, {})


def _record_set(by_kind: dict[str, list[dict[str, Any]]], videos: dict[str, dict[str, Any]], video_root: Path | None,
                origin: str, files: dict[str, Path]) -> RecordSet:
    first = next(iter(by_kind))
    return RecordSet(kind=first, records=by_kind[first], videos=videos, video_root=video_root, origin=origin,
                     by_kind=by_kind, files=files)


def _configs(source: str | Path, revision: str | None) -> dict[str, dict[str, Any]]:
    """``{config: {split: ...}}`` from the release's manifest.json (local, or downloaded from the Hub)."""
    path = Path(source) / MANIFEST if Path(source).is_dir() else _hub_file(str(source), MANIFEST, revision)
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"unreadable release manifest: {exc}", file=path) from None
    configs = manifest.get("configs") if isinstance(manifest, dict) else None
    if not isinstance(configs, dict) or not all(c in KIND_OF_CONFIG for c in configs):
        raise InputError("not a streamcue release manifest (no configs of record kinds)", file=path,
                         field="configs")
    return configs


def _hub_file(repo: str, name: str, revision: str | None) -> Path:
    hub = require("huggingface_hub", "release")
    try:
        return Path(hub.hf_hub_download(repo, name, repo_type="dataset", revision=revision))
    except Exception as exc:  # noqa: BLE001 - HTTP, offline, not found: whatever the Hub client raises
        raise ServiceError(f"could not read {name} of {repo} (revision {revision or 'main'}): "
                           f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None


def _video_root(source: str | Path, revision: str | None) -> Path | None:
    """The release's own ``videos/`` folder, None when it ships no videos. A Hub dataset's are downloaded as plain
    files into streamcue's cache folder, one folder per commit (the Hub cache's snapshot holds symlinks into its
    blob store, which a video root refuses: every video must resolve under its root)."""
    if Path(source).is_dir():
        root = Path(source) / "videos"
        return root if root.is_dir() else None
    hub = require("huggingface_hub", "release")
    try:
        info = hub.HfApi().dataset_info(str(source), revision=revision)
    except Exception as exc:  # noqa: BLE001 - as above
        raise ServiceError(f"could not list the files of {source} (revision {revision or 'main'}): "
                           f"{type(exc).__name__}") from None
    if not any(f.rfilename.startswith("videos/") for f in info.siblings or ()):
        return None
    folder = cache_dir() / "hub" / "datasets" / str(source) / info.sha
    bars = require("huggingface_hub.utils", "release")
    was_off = bars.are_progress_bars_disabled()
    if not shown():
        bars.disable_progress_bars()  # its own download bars follow STREAMCUE_NO_PROGRESS too
    try:
        hub.snapshot_download(str(source), repo_type="dataset", revision=info.sha, allow_patterns=["videos/**"],
                              local_dir=folder)
    except Exception as exc:  # noqa: BLE001 - as above
        raise ServiceError(f"could not download the videos of {source} (revision {revision or 'main'}): "
                           f"{type(exc).__name__}") from None
    finally:
        if not was_off:
            bars.enable_progress_bars()
    return folder / "videos"
