"""What a loaded release must hold, for the release tests and the end-to-end tests of other stages."""

from __future__ import annotations


def same(record, loaded, path="$"):
    """Every field of ``record`` is in ``loaded`` with the same type and value (a struct column may add keys the
    record does not have, as null; an integer in a ``number`` field reads back as the equal float)."""
    if isinstance(record, dict):
        assert isinstance(loaded, dict), f"{path}: {type(loaded).__name__} instead of an object"
        for key, value in record.items():
            assert key in loaded, f"{path}.{key} missing"
            same(value, loaded[key], f"{path}.{key}")
        extra = {k: v for k, v in loaded.items() if k not in record and v is not None}
        assert not extra, f"{path}: keys the record does not have: {sorted(extra)}"
    elif isinstance(record, list):
        assert isinstance(loaded, list) and len(loaded) == len(record), f"{path}: {loaded!r} != {record!r}"
        for i, (a, b) in enumerate(zip(record, loaded)):
            same(a, b, f"{path}[{i}]")
    elif isinstance(record, int) and not isinstance(record, bool) and isinstance(loaded, float):
        assert loaded == record, f"{path}: {loaded!r} != {record!r}"
    else:
        assert type(loaded) is type(record) and loaded == record, f"{path}: {loaded!r} != {record!r}"
