"""The prologue holds for every command: tests generated from the builder registry and the command table.

Builders (``dataset_builders/registry.py`` BUILDERS): each ``Config`` declares its inputs
(``streamcue.prologue.input_path``), every path option of ``streamcue build <name>`` is one of them,
and ``--out`` equal to, inside, or resolving (symlink, ``..``) to any input, or a source file named
like one of the outputs in ``--out``, is refused with a one-line error and exit 2, nothing written.

Commands that read record files (:data:`RECORD_COMMANDS`): an empty file, a truncated line, a NaN,
records of the wrong kind, an output equal to or inside an input: exit 2, one line, nothing written.
Every case runs the real CLI entry point in-process (``streamcue.cli.main.main``) on real files.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import VALID, cli

from streamcue.cli.main import _command
from streamcue.dataset_builders import BUILDERS
from streamcue.dataset_builders.output import FILE_NAMES
from streamcue.prologue import declared_fields

DEAD_LLM = ("--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m")  # resolved, never called


def one_line_error(result: tuple[int, str, str], *words: str) -> str:
    code, _, err = result
    assert code == 2, (code, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: a file's SHA-256, a link's target, or 'dir'."""
    found = {}
    for p in sorted(folder.rglob("*")):
        key = str(p.relative_to(folder))
        if p.is_symlink():
            found[key] = "-> " + os.readlink(p)
        elif p.is_dir():
            found[key] = "dir"
        else:
            found[key] = hashlib.sha256(p.read_bytes()).hexdigest()
    return found


# ---------------------------------------------------------------------------------------------
# builders, generated from the registry


def build_command(name: str):
    build = _command().commands["build"]
    cli_name = name.replace("_", "-")
    assert cli_name in build.commands, f"builder {name} has no `streamcue build {cli_name}` command"
    return cli_name, build.commands[cli_name]


def path_options(command) -> dict[str, bool]:
    """Each option of ``command`` that takes a path (its long name -> required)."""
    return {p.opts[0]: p.required for p in command.params
            if getattr(getattr(p, "type_descriptor", None), "annotation", None) is Path}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_path_option_of_a_build_command_is_a_declared_input(name):
    _, command = build_command(name)
    declared = {d.option for d in declared_fields(BUILDERS[name].config) if d.role == "input"}
    options = set(path_options(command)) - {"--out"}
    assert declared, f"{name}: its Config declares no input (streamcue.prologue.input_path)"
    assert options <= declared, f"{name}: {sorted(options - declared)} not declared as inputs of its Config"


def _builder_cases() -> list[tuple[str, str, str]]:
    cases = []
    for name in sorted(BUILDERS):
        _, command = build_command(name)
        options = path_options(command)
        for d in declared_fields(BUILDERS[name].config):
            if d.role == "input" and d.option in options:
                for how in ("equal", "inside", "symlink", "dotdot", "named like an output"):
                    cases.append((name, d.option, how))
    return cases


def _make_input(path: Path, folder: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if folder:
        path.mkdir()
        (path / "source.json").write_text("{}")
    else:
        path.write_text("{}\n")
    return path


@pytest.mark.parametrize("name, option, how", _builder_cases(), ids="-".join)
def test_builders_refuse_an_output_over_or_inside_an_input(tmp_path, name, option, how):
    cli_name, command = build_command(name)
    options = path_options(command)
    declared = declared_fields(BUILDERS[name].config)
    fields = {d.option: d.folder for d in declared if d.role == "input"}
    writes = [w for d in declared if d.role == "output" for w in d.writes]
    args: list[object] = ["build", cli_name]
    for other, folder in fields.items():  # every other required input exists, away from the output
        if other != option and options.get(other):
            args += [other, _make_input(tmp_path / "others" / other.lstrip("-"), folder)]
    folder = fields[option]
    if how == "named like an output":
        # a source named like a file the build writes: its first records file, or a folder it writes (videos/)
        named = writes[0] if folder and writes else FILE_NAMES[BUILDERS[name].makes[0]]
        target = _make_input(tmp_path / "d" / named, folder)
        out = tmp_path / "d"
    else:
        target = _make_input(tmp_path / "src" / ("in" if folder else "in.json"), folder)
        out = {"equal": target, "inside": target / "sub", "dotdot": target / ".." / target.name,
               "symlink": tmp_path / "link"}[how]
        if how == "symlink":
            out.symlink_to(target)
    args += [option, target, "--out", out]
    if "--llm-base-url" in {p.opts[0] for p in command.params if p.opts}:
        args += DEAD_LLM
    before = snapshot(tmp_path)
    line = one_line_error(cli(*args))
    assert any(w in line for w in ("refusing to overwrite an input", "inside the input")), line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("option, source", [("--annotations", "mc_question.jsonl"), ("--goalstep", "guidance.jsonl")])
def test_the_two_data_loss_cases_of_issue_22(tmp_path, option, source):
    """build ovo-bench --annotations D/mc_question.jsonl --out D (livecook-augment --goalstep too) lost the source."""
    src = tmp_path / source
    src.write_text('{"keep": "me"}\n')
    command = "ovo-bench" if option == "--annotations" else "livecook-augment"
    one_line_error(cli("build", command, option, src, "--out", tmp_path, *DEAD_LLM * (command != "ovo-bench")),
                   "refusing to overwrite an input")
    assert src.read_text() == '{"keep": "me"}\n' and sorted(p.name for p in tmp_path.iterdir()) == [source]


# ---------------------------------------------------------------------------------------------
# commands that read record files, one table


def _write(path: Path, lines: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def _qa_folder(folder: Path) -> tuple[Path, Path]:
    """interval_qa.jsonl and videos.jsonl of one valid, verified record."""
    videos = _write(folder / "videos.jsonl", [dict(VALID["video"], source="other",
                                                   anonymization={"status": "not_required", "report": None})])
    qa = _write(folder / "interval_qa.jsonl", [dict(VALID["interval_qa"], verification={"status": "verified"})])
    return qa, videos


#: command -> (argv from (the records file under test, its folder, the output path), kind of that file,
#: whether the command's input is the records' folder rather than the file). The hostile case breaks that file.
RECORD_COMMANDS: dict[str, tuple[Callable[[Path, Path, Path], list], str, bool]] = {
    "validate": (lambda f, d, o: ["validate", f, "--kind", "interval_qa"], "interval_qa", False),
    "evaluate --gt": (lambda f, d, o: ["evaluate", "estp-f1", "--gt", f, "--pred", d.parent / "p" / "pred.jsonl",
                                       "--judge", "exact", "--output", o], "interval_qa", False),
    "evaluate --pred": (lambda f, d, o: ["evaluate", "estp-f1", "--gt", d.parent / "g" / "gt.jsonl",
                                         "--pred", f, "--judge", "exact", "--output", o],
                        "interval_qa_prediction", False),
    "verify-evidence": (lambda f, d, o: ["verify-evidence", "--records", f, "--video-root", d.parent,
                                         "--out", o, *DEAD_LLM], "interval_qa", False),
    "stats evidence": (lambda f, d, o: ["stats", "evidence", "--checked", f, "--verified", f, "--output", o],
                       "interval_qa", False),
    "stats agreement": (lambda f, d, o: ["stats", "agreement", "--generated", f, "--verified", f, "--output", o],
                        "dense_caption", False),
    "annotate push": (lambda f, d, o: ["annotate", "push", "--kind", "interval_qa", "--records", f, "--project", "p",
                                       "--url", "http://127.0.0.1:9"], "interval_qa", False),
    "release build": (lambda f, d, o: ["release", "build", "--records", d, "--version", "1.0.0", "--out", o],
                      "interval_qa", True),
    "replay": (lambda f, d, o: ["replay", f, "--out", o, "--video-root", d.parent, *DEAD_LLM], "interval_qa", False),
    "run": (lambda f, d, o: ["run", "estp", f, "--out", o, "--video-root", d.parent, *DEAD_LLM], "interval_qa", False),
}
#: commands that write nothing an input could be confused with
NO_OUTPUT = {"validate", "annotate push"}

NAN_QA = json.dumps(dict(VALID["interval_qa"], verification={"status": "verified"})).replace(
    '"query_time_s": 1.0', '"query_time_s": NaN')
NAN_PRED = json.dumps(VALID["interval_qa_prediction"]).replace('"t_s": ', '"t_s": NaN, "x": ', 1)
HOSTILE = {
    "empty file": lambda kind: [],
    "truncated line": lambda kind: [json.dumps(VALID[kind] if kind in VALID else VALID["interval_qa"])[:40]],
    "NaN": lambda kind: [NAN_PRED if kind.endswith("_prediction") else NAN_QA],
    "wrong kind": lambda kind: [dict(VALID["video"], source="other")],
}


def _records_case(tmp_path: Path, command: str) -> Path:
    """The records folder (videos.jsonl and a valid file of the command's kind); returns the file under test."""
    _, kind, _ = RECORD_COMMANDS[command]
    folder = tmp_path / "records"
    qa, _ = _qa_folder(folder)
    _write(tmp_path / "p" / "pred.jsonl", [VALID["interval_qa_prediction"]])  # the other side of evaluate
    _write(tmp_path / "g" / "gt.jsonl", [VALID["interval_qa_minimal"]])
    if kind == "interval_qa":
        return qa
    return _write(folder / f"{kind}.jsonl", [VALID[kind]])


@pytest.mark.parametrize("command", sorted(RECORD_COMMANDS))
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_record_commands_refuse_hostile_files(tmp_path, command, case):
    make, kind, _ = RECORD_COMMANDS[command]
    target = _records_case(tmp_path, command)
    _write(target, HOSTILE[case](kind))
    before = snapshot(tmp_path)
    code, _, err = cli(*make(target, target.parent, tmp_path / "out"))
    assert code == 2 and "Traceback" not in err, (code, err)
    lines = err.strip().splitlines()
    if command == "validate":  # one line per violation, then the count
        assert lines and all(line.startswith((str(target), "error: ")) for line in lines), err
    else:
        assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", sorted(set(RECORD_COMMANDS) - NO_OUTPUT))
@pytest.mark.parametrize("how", ["equal", "inside", "symlink"])
def test_record_commands_refuse_an_output_over_or_inside_an_input(tmp_path, command, how):
    make, _, reads_folder = RECORD_COMMANDS[command]
    target = _records_case(tmp_path, command)
    anchor = target.parent if reads_folder else target
    out = {"equal": anchor, "inside": anchor / "sub", "symlink": tmp_path / "link"}[how]
    if how == "symlink":
        out.symlink_to(anchor)
    before = snapshot(tmp_path)
    code, _, err = cli(*make(target, target.parent, out))
    one_line_error((code, "", err))
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------------------------
# the command tree: every command is covered, or the test names the case it lacks


def leaf_commands() -> dict[str, object]:
    """Every command of ``streamcue`` (``build ego4d``, ``annotate push``, ...), walked from the click tree."""
    found: dict[str, object] = {}

    def walk(command, path):
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, (*path, name))
        elif path:
            found[" ".join(path)] = command

    walk(_command(), ())
    return found


def path_params(command) -> dict[str, bool]:
    """Each parameter of ``command`` that takes a path (option name or argument name -> required)."""
    return {(p.opts[0] if p.opts and p.opts[0].startswith("-") else p.name): p.required for p in command.params
            if "Path" in str(getattr(getattr(p, "type_descriptor", None), "annotation", None))}


OUTPUT_OPTIONS = ("--out", "--output")
#: Commands the record table above does not run, each with the test that covers its hostile cases
#: (output over or inside an input, broken files), or why no case applies.
COVERED_ELSEWHERE = {
    "demo": "test_demo_refuses_an_output_over_or_inside_its_annotations (below)",
    "anonymize": "tests/anonymize/test_anonymize.py and tests/streamcue/test_hostile.py "
                 "(videos, not record files)",
    "annotate pull": "tests/annotation/test_annotation.py: reads a Label Studio server, --changes is written, "
                     "never read",
    "annotate status": "reads a Label Studio server only",
    "annotate anonymization push": "tests/annotation/test_anonymization_check.py::test_push_refuses_a_report_a_"
                                   "release_would_refuse_or_a_folder_the_page_cannot_load: reads the anonymizer's "
                                   "reports (one line each), writes no file",
    "annotate anonymization pull": "tests/annotation/test_anonymization_check.py::test_push_refuses_a_report_a_"
                                   "release_would_refuse_or_a_folder_the_page_cannot_load: --out over the --key it "
                                   "reads is refused; reads a Label Studio project, writes --out atomically",
    "annotate review": "tests/annotation/test_annotation_review.py: reads and writes a Label Studio project only, "
                       "no file",
    "annotate setup": "tests/annotation/test_annotation_setup.py: reads no record file, talks to a Label Studio "
                      "server; "
                      "--accounts is a new file written with mode 600",
    "release push": "tests/release/test_release.py: reads a built release folder (--dist), writes to the "
                    "Hub",
    "release diff": "test_release_diff_refuses_broken_folders (below); writes nothing",
    "release verify": "tests/release/test_release_signature.py: reads a release (folder or Hub dataset), writes "
                      "nothing; a changed byte, an edited record, a hand-written verification each refused",
    "annotate keygen": "tests/release/test_release_signature.py::test_keygen_writes_a_private_key_for_its_owner_"
                       "only_and_never_overwrites: reads no file, never overwrites one",
    "compare": "tests/loaders/test_run.py::test_run_ovo_and_streamingbench_write_a_run_folder_rerun_from_cache_and_"
               "compare (--output inside a run folder) and test_run_refuses_with_one_line (not a run folder)",
    "export": "tests/metrics/test_export.py::test_export_refuses_with_one_line: reads a run folder (--out inside it, "
              "a non-empty --out, a folder that is no run)",
    "schema": "reads no file",
    "ls": "reads no file",
}


def _covered() -> dict[str, str]:
    covered = {f"build {name.replace('_', '-')}": "the builder tests above" for name in BUILDERS}
    covered.update({c.split(" --")[0]: "RECORD_COMMANDS" for c in RECORD_COMMANDS})
    covered.update(COVERED_ELSEWHERE)
    return covered


def test_every_command_is_covered_by_the_hostile_tests():
    """A new command fails here, named, until RECORD_COMMANDS (or COVERED_ELSEWHERE, with its test) lists it."""
    missing = sorted(set(leaf_commands()) - set(_covered()))
    assert not missing, (f"commands with no hostile-input case: {missing}; add each to RECORD_COMMANDS in "
                         "tests/streamcue/test_prologue.py (empty file, truncated line, NaN, wrong kind, output over "
                         "or inside an input), or to COVERED_ELSEWHERE naming the test that covers it")
    stale = sorted(set(_covered()) - set(leaf_commands()))
    assert not stale, f"hostile-test tables name commands that no longer exist: {stale}"


@pytest.mark.parametrize("command", sorted(c for c in leaf_commands() if c.split(" ")[0] != "build"))
def test_every_command_that_writes_a_file_refuses_it_over_an_input(command):
    """Each command with an --out/--output and a path input has the output-over-input case run for it."""
    params = path_params(leaf_commands()[command])
    writes = [o for o in params if o in OUTPUT_OPTIONS]
    reads = [o for o in params if o not in OUTPUT_OPTIONS]
    if not (writes and reads):
        return
    ran = {c.split(" --")[0] for c in set(RECORD_COMMANDS) - NO_OUTPUT}
    assert command in ran or command in COVERED_ELSEWHERE, (
        f"`streamcue {command}` writes {writes} and reads {reads}: add it to RECORD_COMMANDS so that "
        "test_record_commands_refuse_an_output_over_or_inside_an_input runs it")


@pytest.mark.parametrize("how", ["equal", "inside"])
def test_demo_refuses_an_output_over_or_inside_its_annotations(tmp_path, how):
    annotations = _make_input(tmp_path / "cc4d", True)
    out = annotations if how == "equal" else annotations / "out"
    before = snapshot(tmp_path)
    one_line_error(cli("demo", "--annotations", annotations, "--out", out))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_release_diff_refuses_broken_folders(tmp_path, case):
    old = tmp_path / "old"
    old.mkdir()
    _write(old / "interval_qa.jsonl", HOSTILE[case]("interval_qa"))
    code, _, err = cli("release", "diff", old, old)
    assert code == 2 and "Traceback" not in err, (code, err)


SOURCE_FAULTS = {"empty file": "", "truncated": '{"videos": [{"video_uid": "a", "segm', "NaN": '{"videos": [NaN]}\n',
                 "not JSON": "\x00\x01binary"}


def _source_cases() -> list[tuple[str, str, str]]:
    return [(name, d.option, fault) for name in sorted(BUILDERS)
            for d in declared_fields(BUILDERS[name].config)
            if d.role == "input" and not d.folder and d.option in path_options(build_command(name)[1])
            for fault in SOURCE_FAULTS]


@pytest.mark.parametrize("name, option, fault", _source_cases(), ids="-".join)
def test_builders_refuse_a_broken_source_file(tmp_path, name, option, fault):
    """Every file a builder reads, empty, cut short, holding NaN or not JSON: exit 2, one line, nothing written."""
    cli_name, command = build_command(name)
    options = path_options(command)
    fields = {d.option: d.folder for d in declared_fields(BUILDERS[name].config) if d.role == "input"}
    args: list[object] = ["build", cli_name]
    for other, folder in fields.items():
        if other != option and options.get(other):
            args += [other, _make_input(tmp_path / "others" / other.lstrip("-"), folder)]
    source = tmp_path / "src" / "source.json"
    source.parent.mkdir()
    source.write_text(SOURCE_FAULTS[fault])
    args += [option, source, "--out", tmp_path / "out"]
    if "--llm-base-url" in {p.opts[0] for p in command.params if p.opts}:
        args += DEAD_LLM
    before = snapshot(tmp_path)
    one_line_error(cli(*args))
    assert snapshot(tmp_path) == before
