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


@pytest.mark.parametrize("digits", [309, 5000])
def test_an_integer_too_large_for_a_number_is_refused_in_one_line(tmp_path, digits):
    """An integer a float cannot hold (past 308 digits) is refused as 1e999 is; past 4,300 digits Python's own
    reader raised a ValueError, a traceback through every JSON reader."""
    from streamcue.io import iter_jsonl

    big = "9" * digits
    (tmp_path / "big.json").write_text(f'{{"fps": {big}}}')
    (tmp_path / "big.jsonl").write_text(f'{{"fps": -{big}}}\n')
    with pytest.raises(InputError, match=f"big.json: an integer of {digits} digits is too large for a number"):
        read_json(tmp_path / "big.json")
    with pytest.raises(InputError, match=f"an integer of {digits} digits is too large"):
        list(iter_jsonl(tmp_path / "big.jsonl"))
    (tmp_path / "fine.json").write_text(f'{{"n": {"9" * 308}}}')
    assert read_json(tmp_path / "fine.json")["n"] == int("9" * 308)
