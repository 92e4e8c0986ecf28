"""LiveCook data engine: the refusals that come before any model call (prompts: tests/streamcue/test_contracts.py)."""

import pytest

from conftest import cli_run


@pytest.mark.parametrize("args, words", [
    (["--annotations", "no/such/folder"], "not a folder"),
    (["--split", "train"], "training split is the retrieval index"),
    (["--k", "0"], "k must be at least 1"),
])
def test_summaries_refusals_are_one_line(tmp_path, args, words):
    out = tmp_path / "o"
    done = cli_run("build", "livecook-summaries", "--out", out, "--llm-base-url", "http://127.0.0.1:9/v1",
                   "--llm-model", "m", *args)
    assert done.returncode == 2 and words in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not out.exists()
