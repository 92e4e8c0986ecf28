"""The privacy scan normalizes, then matches (issue 46 item 4): every spelling the hostile runs published, planted in
every text field of every record kind, is caught in the release's Parquet files as in its text files."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import VALID

pytest.importorskip("datasets")
pytest.importorskip("pyarrow")

from streamcue.errors import InputError  # noqa: E402
from streamcue.io import write_json  # noqa: E402
from streamcue.redact import key_shaped  # noqa: E402
from streamcue.release.build import _write_parquet  # noqa: E402
from streamcue.release.gates import _parquet_strings, absolute_path_in, personal_data_in, scan_published  # noqa: E402
from streamcue.schemas.features import typed  # noqa: E402

#: Each case issue 46 names: normalized spellings of e-mails and home paths, and key-shaped tokens.
CASES = {
    "host without a dot": "bob@localhost", "full-width at": "bob\uff20example.com",
    "percent-encoded at": "bob%40example.com", "HTML entity at": "bob&#64;example.com",
    "percent-encoded path": "%2Fhome%2Fbob%2Fx", "JSON-escaped path": "\\/home\\/bob\\/x",
    "full-width solidus": "\uff0fhome\uff0fbob", "spelled out": "bob [at] example [dot] com",
    "spelled out (at)": "bob (at) example (dot) com", "quoted local part": '"bob smith"@example.com',
    "mailto": "mailto:bob%40example.com", "IP literal": "bob@[192.168.0.1]", "$USERPROFILE": "$USERPROFILE/x",
    "bare ~bob": "ask ~bob", "hf token": "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3", "sk key": "sk-" + "Ab12" * 6,
    "sk-proj key": "sk-proj-" + "Cd34" * 6, "bearer token": "Authorization: Bearer abc123def456ghi789",
}
KINDS = ("video", "interval_qa", "dense_caption", "guidance", "mc_question")


def text_paths(value, path=()):
    """The path of every string leaf of a record."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from text_paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from text_paths(item, (*path, i))
    elif isinstance(value, str):
        yield path


def planted(record, path, text):
    out = copy.deepcopy(record)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = text
    return out


def caught(text: str) -> bool:
    return bool(absolute_path_in(text) or personal_data_in(text) or key_shaped(text))


@pytest.mark.parametrize("kind", [k for k in KINDS if k in VALID])
def test_every_case_is_caught_in_every_text_field_of_every_kind(tmp_path, kind):
    """One Parquet file per kind, a row per (case, text field) with the case planted there: every row is flagged."""
    record = VALID[kind]
    paths = list(text_paths(record))
    records = [planted(record, path, CASES[case]) for case in sorted(CASES) for path in paths]
    node, layout = typed(kind, records)
    _write_parquet(records, kind, tmp_path / "data.parquet", layout, __import__("datasets").Features(node.feature()))
    flagged = [t for _, t in _parquet_strings(tmp_path / "data.parquet", []) if caught(t)]
    for case in sorted(CASES):
        spelled = (CASES[case], json.dumps(CASES[case])[1:-1])
        assert sum(any(s in t for s in spelled) for t in flagged) >= len(paths), case
    with pytest.raises(InputError, match="home directory|e-mail|key-shaped") as err:
        scan_published(tmp_path)
    assert not any(text in str(err.value) for text in CASES.values())


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_case_is_caught_in_a_text_file(tmp_path, case):
    (tmp_path / "manifest.json").write_text(json.dumps({"title": CASES[case]}))  # raw: write_json would mask keys
    with pytest.raises(InputError, match="home directory|e-mail|key-shaped") as err:
        scan_published(tmp_path)
    assert CASES[case] not in str(err.value)


def test_ordinary_text_still_passes(tmp_path):
    ordinary = ["1/2 cup", "and/or", "~5/10 minutes", "100% sure", "a@b", "@misc{x,", "sketch", "skill-based",
                "at the [dot] marker", "Bearer of good news", "&amp; more", "html&lt;b&gt;"]
    write_json(tmp_path / "manifest.json", {"notes": ordinary, "json": json.dumps(ordinary)})
    scan_published(tmp_path)
