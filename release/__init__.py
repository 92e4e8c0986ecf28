"""Releases: validated records -> a versioned Hugging Face dataset folder -> the Hub or a local git mirror.

* :mod:`~streamcue.release.build`: ``streamcue release build`` (gates, Parquet files, card, figures, manifest);
* :mod:`~streamcue.release.gates`: what a release refuses (unverified or invalid records, unsafe files);
* :mod:`~streamcue.release.notice`: ``NOTICE.md``, the notices the records' licences require;
* :mod:`~streamcue.release.card`: the README.md dataset card and its figures (Parquet features come from
  :mod:`streamcue.schemas.features`);
* :mod:`~streamcue.release.croissant`: ``croissant.json`` (Croissant 1.0 with its responsible-AI fields);
* :mod:`~streamcue.release.manifest`: manifest.json and the SHA-256 check of every file;
* :mod:`~streamcue.release.push`: ``streamcue release push`` (Hub or local git, one tag per version);
* :mod:`~streamcue.release.diff`: ``streamcue release diff`` and the changelog lines.

Loaders (:mod:`streamcue.loaders`) read releases; nothing here imports them.
"""

__all__: list[str] = []
