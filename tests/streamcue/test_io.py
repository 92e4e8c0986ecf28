import pytest

from streamcue.errors import InputError
from streamcue.io import atomic_write, read_json, write_jsonl


def test_atomic_write_keeps_old_content_on_failure(tmp_path):
    target = tmp_path / "out.jsonl"
    write_jsonl(target, [{"a": 1}])
    with pytest.raises(RuntimeError):
        with atomic_write(target) as fh:
            fh.write("partial")
            raise RuntimeError("killed")
    assert target.read_text() == '{"a":1}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_missing_file_and_bad_json_name_the_file(tmp_path):
    with pytest.raises(InputError, match="nope.json: file not found"):
        read_json(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{\n "a": 1,\n}')
    with pytest.raises(InputError, match=r"bad.json:3: invalid JSON at column 1"):
        read_json(bad)
