"""Shared fixtures: where the public source data lies, small valid records of every kind."""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import io
import os
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("STREAMCUE_SHARED_DATA", REPO.parent / "shared" / "data"))
CAPTAINCOOK4D = SHARED_DATA / "captaincook4d"
GOALSTEP_VAL = SHARED_DATA / "ego4d_goalstep" / "data" / "goalstep_valid.json"

# Fixtures that tests of several stages share, from the helper modules beside this file.
pytest_plugins = ["toybench", "toykind", "phostream_runs", "label_studio_server", "ray_instance", "recorded_clips"]


def pytest_configure(config):
    """Module-scoped fixtures run outside the per-test isolation below: give them a cache too."""
    import tempfile

    _check_editable_install()

    os.environ["STREAMCUE_CACHE_DIR"] = tempfile.mkdtemp(prefix="streamcue-test-cache-")
    os.environ["STREAMCUE_NO_PROGRESS"] = "1"


#: markers whose tests share one server per process: under pytest-xdist their modules run on one worker, which
#: starts it once
SHARED_SERVERS = ("label_studio", "ray")


def pytest_xdist_make_scheduler(config, log):
    """``./dev.sh test`` runs on every core (``-n auto``): a module's tests stay on one worker, so that its module
    fixtures are made once, and every module that marks a test with one of :data:`SHARED_SERVERS` runs on the same
    worker as the others of that server (xdist's own ``--dist loadgroup`` does not group under pytest 9.2). Units go
    out in collection order, not largest first by test count: Label Studio's unit (30 slow tests) was sent after
    units of hundreds of quick ones and ran alone at the end."""
    from xdist.scheduler import LoadScopeScheduling

    class BySharedServer(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return _shared_server(module) or module

    config.option.loadscopereorder = False  # in the order of the folders: the long shared-server units start first
    return BySharedServer(config, log)


@functools.cache
def _shared_server(module: str) -> str | None:
    """The first of :data:`SHARED_SERVERS` that a test module marks anything with (``pytest.mark.NAME``)."""
    path = REPO / module
    if path.suffix != ".py" or not path.is_file():
        return None
    marks = {node.attr for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "mark"}
    return next((name for name in SHARED_SERVERS if name in marks), None)


def _check_editable_install():
    """An editable install maps each folder to its package when installed: a folder added since is not found."""
    import importlib.util

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: no TOML reader in the standard library; skip the check
        return
    mapped = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    missing = [name for name in mapped if importlib.util.find_spec(name) is None]
    if missing:
        pytest.exit(f"{', '.join(missing)} not importable: pyproject.toml's package map changed since streamcue "
                    "was installed; re-install it: python -m pip install -e . --no-deps", returncode=4)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Never touch the user's cache from a test."""
    monkeypatch.setenv("STREAMCUE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("STREAMCUE_NO_PROGRESS", "1")


VALID = {
    "video": {
        "schema_version": "1.0", "video_id": "v1", "source": "recorded", "duration_s": 30.0, "fps": 30.0,
        "width": 1280, "height": 720, "license": "CC BY 4.0", "uri": "recorded/v1.mp4", "split": "test",
        "anonymization": {"status": "passed", "report": "reports/v1.json"},
    },
    "interval_qa": {
        "schema_version": "1.0", "qa_id": "q1", "video_id": "v1", "clip": {"start_s": 0.0, "end_s": 30.0},
        "task_type": "OR", "proactive_type": "explicit", "question": "Tell me when you see a red cup.",
        "query_time_s": 1.0,
        "answers": [{"start_s": 2.0, "end_s": 4.0, "text": "A red cup on the table."},
                    {"start_s": 10.0, "end_s": 12.5, "optimal_s": 10.5, "text": "The red cup is in the sink."}],
        "provenance": {"builder": "test", "version": "1"}, "verification": {"status": "unverified"},
    },
    "dense_caption": {
        "schema_version": "1.0", "task_id": "t1", "video_id": "v1", "task_type": "present", "category": "cooking",
        "prompt": "Describe what the person is doing now.", "fps": 1,
        "captions": [{"t_s": 0, "text": "Cutting an onion."}, {"t_s": 1, "text": "Cutting an onion.",
                                                               "corrected": True}],
        "provenance": {"builder": "test", "version": "1"}, "verification": {
            "status": "verified", "annotators": ["annotator-1", "annotator-2"], "checks": 2, "decided_by": "agreement",
            "content_sha256": "sealed below"},
    },
    "guidance": {
        "schema_version": "1.0", "video_id": "v1", "activity": "Coffee", "activity_id": 3,
        "plan": [{"index": 0, "text": "Boil water.", "step_ids": [1],
                  "actions": [{"step_id": 1, "description": "Boil-Boil water", "start_s": 1.0, "end_s": 10.0}]}],
        "events": [
            {"t_s": 1.0, "type": "instruction", "text": "Boil water.", "plan_index": 0, "step_ids": [1],
             "mistake_category": None, "time_source": "annotation"},
            {"t_s": 10.0, "type": "mistake", "text": "Too little water.", "plan_index": 0, "step_ids": [1],
             "mistake_category": "measurement", "time_source": "step_end_default"},
            {"t_s": 10.0, "type": "finish", "text": "You have finished all the steps.", "plan_index": None,
             "step_ids": [], "mistake_category": None, "time_source": "annotation"},
        ],
        "provenance": {"builder": "test", "version": "1"}, "verification": {"status": "unverified"},
    },
    "interval_qa_prediction": {"qa_id": "q1", "responses": [{"t_s": 2.5, "text": "a red cup"}]},
    "dense_caption_prediction": {"task_id": "t1", "responses": [{"t_s": 0.0, "text": "cutting"}]},
    "guidance_prediction": {"video_id": "v1", "events": [{"t_s": 9.0, "type": "mistake", "text": "more water"}]},
    "interval_qa_minimal": {"qa_id": "q1", "task_type": "AR", "answers": [{"start_s": 1, "end_s": 2, "text": "now"}]},
    "dense_caption_minimal": {"task_id": "t1", "task_type": "present", "captions": [{"t_s": 0, "text": "a"}]},
    "guidance_minimal": {"video_id": "v1", "events": [{"t_s": 3, "type": "success", "text": "done"}]},
    "recorded_task": {"task_id": "t1", "video": "kitchen.mp4", "task_type": "present", "category": "cooking",
                      "prompt": "Describe what the person is doing with their hands right now."},
    "reasoning_trace": {"id": "r1", "video_id": "v1", "question": "What is added after the onions brown?",
                        "options": ["Salt", "Garlic"], "answer": "Garlic", "task_type": "temporal",
                        "reference_trace": "At 3:40 the onions turn brown; at 3:55 garlic is added."},
    "reasoning_trace_prediction": {"id": "r1", "answer": "B", "trace": "The onions brown, then garlic goes in."},
    "mistake_summary": {
        "schema_version": "1.0", "summary_id": "v1:0", "video_id": "v1", "plan_index": 0, "split": "test",
        "instruction": "Boil water.", "step_ids": [1], "summary": "Too little water.\nWater not yet boiling.",
        "neighbours": [{"video_id": "t1", "step_id": 1, "instruction": "Boil water.", "similarity": 1.0,
                        "mistakes": [{"category": "measurement", "description": "Used half the water"}]}],
        "retrieval": {"index_split": "train", "embedding_model": "m", "k": 1, "index_size": 1},
        "provenance": {"builder": "test", "version": "1"},
    },
    "counterfactual_mistake": {
        "schema_version": "1.0", "cf_id": "v1:0:1:noun", "video_id": "v1",
        "source": {"dataset": "ego4d_goalstep", "video_uid": "v1", "step_index": 0, "step_description": "make tea",
                   "substep_index": 1, "substep_description": "pour water into the cup"},
        "critical": {"start_s": 5.0, "end_s": 8.0, "chosen_from": "goalstep_substeps"},
        "original": {"verb": "pour", "noun": "water", "text": "Pour the water."},
        "counterfactual": {"verb": "pour", "noun": "milk", "text": "Pour the milk."},
        "changed_slot": "noun", "instruction": {"t_s": 1.0, "text": "Pour the milk."},
        "mistake": {"t_s": 8.0, "text": "That is the water, not the milk.", "time_source": "substep_end"},
        "provenance": {"builder": "test", "version": "1"},
    },
    "mc_question": {
        "schema_version": "1.0", "question_id": "ovo-1", "video_id": "v1", "benchmark": "ovo-bench", "task": "EPM",
        "group": "backward", "question": "What did I cut?", "options": ["an onion", "a carrot"], "answer": 1,
        "answer_text": "a carrot", "query_time_s": 12.0,
        "provenance": {"builder": "test", "version": "1"}, "verification": {"status": "unverified"},
    },
    "active_item": {
        "schema_version": "1.0", "item_id": "ovo-2", "video_id": "v1", "benchmark": "ovo-bench", "task": "REC",
        "group": "forward", "activity": "jumping", "query_time_s": 5.0,
        "spans": [{"start_s": 4.0, "end_s": 6.0, "text": None}],
        "probes": [{"t_s": 5.0, "expected": "0"}, {"t_s": 7.0, "expected": "1"}],
        "provenance": {"builder": "test", "version": "1"}, "verification": {"status": "unverified"},
    },
    "mc_question_prediction": {"question_id": "ovo-1", "response": "B"},
    "active_item_prediction": {"item_id": "ovo-2", "responses": [{"t_s": 5.0, "probe": 0, "text": "0"}]},
    "open_question": {
        "schema_version": "1.0", "question_id": "sb-1", "video_id": "v1", "benchmark": "streambench", "task": "SM",
        "group": "Ego", "category": "Cooking", "question": "Where did I put the knife?",
        "answer": "On the board, left of the sink.", "query_time_s": 20.0, "context": {"group_id": "sb", "turn": 1},
        "provenance": {"builder": "test", "version": "1"}, "verification": {"status": "unverified"},
    },
    "open_question_prediction": {"question_id": "sb-1", "response": "On the cutting board.", "t_s": 20.0},
}
# a verification that holds: two annotators agreed on exactly this content (streamcue.annotation.verify), signed
# with the session's key (streamcue.annotation.signing)
from streamcue.annotation.signing import KEY_ENV, generate  # noqa: E402
from streamcue.annotation.verify import sealed  # noqa: E402


def _signing_key():
    """The maintainer's signing key of this test process, outside every folder a test writes; ``annotate pull``
    signs with it and ``release build`` checks and signs with it ($STREAMCUE_SIGNING_KEY, subprocesses too)."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="streamcue-test-key-")) / "signing.pem"
    os.environ[KEY_ENV] = str(path)
    return generate(path)


SIGNING_KEY = _signing_key()


def signed(record: dict) -> dict:
    """``record`` as ``annotate pull`` leaves a decided one: sealed, then signed with :data:`SIGNING_KEY`."""
    return SIGNING_KEY.sign(sealed(record))


VALID["dense_caption"] = signed(VALID["dense_caption"])


def pulled_verification(record: dict) -> dict:
    """``record``'s verification less what ``annotate pull`` adds when it signs a decision (``label_studio``,
    ``signature``), once that signature holds under :data:`SIGNING_KEY` and names the task and annotations."""
    problem = SIGNING_KEY.problem(record)
    assert problem is None, problem
    ver = {k: v for k, v in record["verification"].items() if k not in ("label_studio", "signature")}
    decided = record["verification"]["label_studio"]
    assert isinstance(decided["task"], int) and decided["annotations"] and decided.get("at"), decided
    return ver


#: Tests whose command runs in a process with a small file-size limit (a full disk): under ``./dev.sh coverage`` the
#: limit stops coverage.py's own data file in that process (a traceback of sqlite's, and its figures lost), so they
#: are left out of the coverage run and kept in every other.
FILE_SIZE_LIMITED = pytest.mark.skipif(bool(os.environ.get("COVERAGE_PROCESS_CONFIG")),
                                       reason="a file-size limit stops coverage.py's data file (./dev.sh coverage)")


@pytest.fixture(scope="module")
def made_once(tmp_path_factory):
    """``made_once(name, make, into)``: ``make(folder)`` runs once per module, in a folder of the module's own, and
    each test gets its own copy under ``into`` (returned): the module's tests share one build, none sees another's
    edits. Paths written inside what ``make`` made still name the module's folder, which lasts the module."""
    import shutil

    folders: dict[str, Path] = {}

    def copy(name: str, make, into: Path) -> Path:
        if name not in folders:
            folder = tmp_path_factory.mktemp(name)
            make(folder)
            folders[name] = folder
        shutil.copytree(folders[name], into, symlinks=True, dirs_exist_ok=True)
        return into

    return copy


@pytest.fixture
def valid():
    """A deep copy of a valid record of each kind, safe to mutate."""
    return copy.deepcopy(VALID)


def cli(*args) -> tuple[int, str, str]:
    """Run the console script's entry point in this process; returns (exit code, stdout, stderr).

    Exceptions other than SystemExit propagate, so a traceback fails the test that caused it. The consoles' width is
    taken from ``$COLUMNS`` now, as a new process takes it at start (rich keeps the width it found when the console
    was made: the first in-process call of a worker would otherwise fix it for every later one).
    """
    from streamcue import console
    from streamcue.cli import main

    columns = os.environ.get("COLUMNS", "")
    for stream in (console.out, console.err):
        stream.width = int(columns) if columns.isdigit() else None
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue()


def cli_run(*args, env: dict | None = None) -> types.SimpleNamespace:
    """:func:`cli` shaped like ``subprocess.run``'s result (``returncode``, ``stdout``, ``stderr``), with ``env``'s
    variables set around the call and restored after it: only for variables the command reads when it runs, not
    at import (``HF_ENDPOINT``/``HF_HUB_OFFLINE`` for huggingface_hub, ``HOME``: keep a subprocess for those)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in (env or {}).items():
            patch.setenv(name, str(value))
        code, out, err = cli(*args)
    return types.SimpleNamespace(returncode=code, stdout=out, stderr=err)


def in_folder(folder, env: dict | None = None):
    """A maintainer's ``streamcue ...`` commands, each in this process (:func:`cli_run`) from ``folder`` with
    ``env``'s variables: the returned function of a command's arguments gives its stdout, and fails the test with
    the command and its output unless it exits 0."""
    def streamcue(*args) -> str:
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(folder)
            done = cli_run(*args, env=env)
        assert done.returncode == 0, f"streamcue {' '.join(map(str, args))}:\n{done.stdout}{done.stderr}"
        return done.stdout

    return streamcue
