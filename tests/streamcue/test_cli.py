"""The command line as a user runs it: a real subprocess, exit codes, one-line errors; help texts and listings in
this process (:func:`run_here`: a process adds nothing to them)."""

import json
import subprocess
import sys

import pytest

from conftest import CAPTAINCOOK4D, VALID, cli, cli_run

COMMANDS = [["build", "captaincook4d"], ["build", "ego4d"], ["validate"], ["evaluate"], ["schema"], ["ls"], ["demo"],
            ["release", "build"], ["release", "push"], ["release", "diff"], ["anonymize"], ["build", "recorded"],
            ["stats", "agreement"], ["annotate", "push"], ["annotate", "pull"], ["annotate", "status"],
            ["annotate", "anonymization", "push"], ["annotate", "anonymization", "pull"]]


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "streamcue", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={"STREAMCUE_NO_PROGRESS": "1", "PATH": "/usr/bin:/bin", "COLUMNS": "200"})


def run_here(*args):
    """:func:`run` in this process (COLUMNS is read when the help is written)."""
    return cli_run(*args, env={"COLUMNS": 200})


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_an_example(command):
    result = run_here(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert "Example" in result.stdout


def test_help_names_arguments_in_capitals_and_each_default_once():
    """A newcomer read ``{records}`` as a blank left in a template, and a default printed twice as two settings."""
    for command, usage in ((["replay"], "streamcue replay [OPTIONS] RECORDS"),
                           (["run"], "streamcue run [OPTIONS] BENCHMARK RECORDS"),
                           (["compare"], "streamcue compare [OPTIONS] RUN_A RUN_B")):
        result = run_here(*command, "--help")
        assert result.returncode == 0 and usage in " ".join(result.stdout.split()), result.stdout[:400]
    missing = run_here("replay")
    assert missing.returncode == 2 and "RECORDS" in missing.stderr and "{" not in missing.stderr, missing.stderr
    result = run_here("anonymize", "--help")
    assert result.returncode == 0 and result.stdout.count("[default: cpu]") == 1


def test_validate_reports_each_violation_on_one_line(tmp_path):
    bad = dict(VALID["interval_qa"], qa_id="q9", task_type="ZZ")
    path = tmp_path / "qa.jsonl"
    path.write_text(json.dumps(VALID["interval_qa"]) + "\n" + json.dumps(bad) + "\n")
    result = run("validate", path, "--kind", "interval_qa")
    assert result.returncode == 2
    assert f"{path}:2, record qa_id=q9: $.task_type: 'ZZ' is not one of" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args, message", [
    (["validate", "missing.jsonl", "--kind", "guidance"], "error: missing.jsonl: file not found"),
    (["validate", "x.jsonl", "--kind", "guidanse"], "error: unknown record kind 'guidanse'. Did you mean 'guidance'?"),
    (["build", "captaincook4d", "--annotations", "nowhere", "--out", "o"], "error: nowhere: not a folder"),
    (["release", "build", "--records", "nowhere", "--version", "1.0.0", "--out", "d"], "error: nowhere: not a folder"),
    (["release", "build", "--records", ".", "--version", "one", "--out", "d"], "error: version 'one' is not X.Y.Z"),
    (["release", "push", "--dist", ".", "--repo", "org/name", "--git-root", "g"],
     "error: .: not a streamcue release folder"),
    (["release", "push", "--dist", ".", "--repo", "noslash"], "error: --repo 'noslash' is not ORG/NAME"),
    (["anonymize", "nothing.mp4", "--out", "o"], "error: nothing.mp4: video file not found"),
])
def test_expected_problems_are_one_line_errors(tmp_path, args, message):
    result = run(*args, cwd=tmp_path)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(message), result.stderr


def test_usage_errors_show_usage_not_a_traceback(tmp_path):
    result = run("build", "captaincook4d", "--out", tmp_path)
    assert result.returncode == 2
    assert "Missing option '--annotations'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args, start", [
    (["evaluate", "estp-f1", "--timing-rule", "bogus"], "error: Invalid value for '--timing-rule': 'bogus' is not one"),
    (["run", "--bogus"], "error: No such option: --bogus"),
    (["nosuch"], "error: No such command 'nosuch'"),
])
def test_a_bad_choice_or_option_is_refused_in_one_line(args, start):
    """issue 46: a bad enum value (``--timing-rule bogus``) printed a 4-line usage block; now one line, exit 2,
    naming the option, the values it takes and where the help is."""
    code, out, err = cli(*args)
    assert code == 2
    assert err.strip().splitlines() == [err.strip()] and err.startswith(start), err
    assert "--help" in err and "Traceback" not in err


def test_a_number_option_with_digit_underscores_is_refused_in_one_line(tmp_path):
    """issue 45: typer reads numbers as Python does, so ``--pad 1_0`` was 10 (CSV numbers refuse digit
    underscores); now every int and float option of every command (a builder's, a strategy's too) and ``--clock
    fixed:S`` refuse it in one line naming the option, before any input is read. What was refused stays refused
    (``0x10``, ``1e999`` for an int); a space or a plus sign around a number is still read (as in a CSV cell)."""
    missing, underscores = tmp_path / "missing", "is not a number (digit underscores are not read)"
    for args, words in [
        (["anonymize", "--pad", "0_1", missing, "--out", tmp_path / "a"], ("'--pad'", "'0_1'", underscores)),
        (["stats", "agreement", "--threshold", "0_5", "--generated", missing, "--verified", missing],
         ("'--threshold'", underscores)),
        (["release", "diff", "--show", "1_0", missing, missing], ("'--show'", underscores)),
        (["compare", "--resamples", "1_000", missing, missing], ("'--resamples'", underscores)),
        (["build", "ego4d", "--min-clip-s", "1_0", "--goalstep", missing, "--out", tmp_path / "e"],
         ("'--min-clip-s'", underscores)),
        (["replay", "--every-s", "1_0", "--strategy", "periodic", missing, "--out", tmp_path / "r"],
         ("'--every-s'", underscores)),
        (["replay", "--clock", "fixed:1_0", missing, "--out", tmp_path / "r"], ("--clock", "'fixed:1_0'")),
        (["release", "diff", "--show", "0x10", missing, missing], ("'--show'", "valid integer")),
        (["release", "diff", "--show", "1e999", missing, missing], ("'--show'", "valid integer")),
    ]:
        code, out, err = cli(*args)
        assert code == 2 and err.strip().splitlines() == [err.strip()] and "Traceback" not in err, (args, err)
        assert all(word in err for word in words), (args, err)
    assert not any(tmp_path.iterdir())
    records = tmp_path / "dense_caption.jsonl"
    records.write_text(json.dumps(VALID["dense_caption"]) + "\n")
    for value in (" 5", "+5"):
        code, out, err = cli("validate", records, "--kind", "dense_caption", "--max-errors", value)
        assert code == 0 and "all valid" in out, err


def test_build_then_validate_real_captaincook4d(tmp_path):
    out = tmp_path / "out"
    result = run("build", "captaincook4d", "--annotations", CAPTAINCOOK4D, "--out", out)
    assert result.returncode == 0, result.stderr
    assert "384" in result.stdout
    result = run("validate", out / "guidance.jsonl", "--kind", "guidance")
    assert result.returncode == 0, result.stderr
    assert "384 guidance records, all valid" in result.stdout


@pytest.mark.slow
def test_demo_runs_offline_end_to_end(tmp_path):
    result = run("demo", "--out", tmp_path / "demo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for part in ("validated 384 guidance records", "release 1.0.0: 768 rows", "tagged v1.0.0",
                 "loaded 109 test guidance records back", "livecook overall", "interval_qa by task type", "stages 3-5",
                 "anonymization report", "passed"):
        assert part in result.stdout
    assert (tmp_path / "demo" / "ego4d" / "interval_qa.jsonl").is_file()
    for name in ("results.json", "samples.jsonl", "report.html"):  # the baseline's run folder (docs/runs.md)
        assert (tmp_path / "demo" / "runs" / "livecook-periodic" / name).is_file()


def test_ls_names_each_metrics_default_config_version():
    result = run_here("ls")
    assert result.returncode == 0, result.stderr
    assert "livecook (default config livecook.v2)" in result.stdout and "vsas (default config vsas.v2)" in result.stdout


def test_a_run_of_one_command_imports_only_that_commands_module():
    script = ("import sys; from streamcue.cli import main; main(['anonymize', '--help']); "
              "print(sorted(m for m in sys.modules if m.startswith('streamcue.cli.')))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={"STREAMCUE_NO_PROGRESS": "1", "PATH": "/usr/bin:/bin", "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    loaded = result.stdout.strip().splitlines()[-1]
    assert "'streamcue.cli.anonymize'" in loaded and "streamcue.cli.replay" not in loaded, loaded


@pytest.mark.parametrize("name", ["anonymize", "build", "demo", "replay", "release", "ls"])
def test_one_command_alone_has_the_same_help_and_usage_as_in_the_whole_tree(name):
    import contextlib
    import io

    from streamcue.cli.main import COMMANDS, _command

    assert name in COMMANDS

    def help_of(command, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            command(args=[*args, "--help"], prog_name="streamcue", standalone_mode=False)
        return out.getvalue()

    args = [name, *(["recorded"] if name == "build" else [])]
    alone = help_of(_command(name), *args)
    assert f"streamcue {' '.join(args)} [OPTIONS]" in " ".join(alone.split())
    assert alone == help_of(_command(), *args)


def test_a_long_list_of_ids_is_cut_between_ids_and_says_how_many_more():
    """A newcomer's run warned of 40 unparseable records and listed 39, the last cut mid-id, without saying so."""
    from streamcue.console import listed

    ids = [f"ovo-{i}" for i in range(40)]
    text = listed(ids)
    assert len(text) <= 300 + len(" and 40 more") and text.endswith(" and 1 more")
    assert text.removesuffix(" and 1 more").split(", ") == ids[:39]
    assert listed(ids[:3]) == "ovo-0, ovo-1, ovo-2" and listed([]) == ""


def test_every_command_that_calls_a_model_bounds_its_waits_with_the_same_options():
    """shared_options: one idea, one name. A command with --llm-base-url takes --llm-retries and --llm-timeout too
    (the builders had the endpoint but not the bounds on waiting for it)."""
    from streamcue.cli.main import _command

    def commands(command, path=()):
        if not hasattr(command, "list_commands"):  # a command, not a group (typer's own click)
            yield " ".join(path), {option for param in command.params for option in param.opts}
            return
        context = command.context_class(command)
        for name in command.list_commands(context):
            yield from commands(command.get_command(context, name), (*path, name))

    calling = {path: options for path, options in commands(_command()) if "--llm-base-url" in options}
    assert {"build ego4d", "build recorded", "replay", "verify-evidence"} <= set(calling), sorted(calling)
    assert {path for path, options in calling.items() if not {"--llm-retries", "--llm-timeout"} <= options} == set()


def test_a_progress_bar_on_a_terminal_ends_with_its_command(tmp_path):
    """Every bar hung on a real terminal (a newcomer's push and anonymize ran on at full CPU until killed): rich's
    live display puts a proxy of the error console in ``sys.stderr``, and that console wrote through whatever
    ``sys.stderr`` was, handing each line back to itself. The tests hide bars (``STREAMCUE_NO_PROGRESS``), so this
    one runs a real build with its stderr on a pseudo-terminal, as a user at a terminal does."""
    import os
    import pty
    import threading

    primary, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "STREAMCUE_NO_PROGRESS"}
    proc = subprocess.Popen([sys.executable, "-m", "streamcue", "build", "captaincook4d", "--annotations",
                             str(CAPTAINCOOK4D), "--out", str(tmp_path / "out")], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=secondary, env=env)
    os.close(secondary)
    shown = bytearray()

    def read() -> None:
        while True:
            try:
                data = os.read(primary, 65536)
            except OSError:  # the command ended: the terminal has no writer left
                return
            if not data:
                return
            shown.extend(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout=120)
    finally:
        proc.kill()
        reader.join(10)
        os.close(primary)
    assert code == 0, bytes(shown[-2000:])
    assert b"captaincook4d recordings" in shown and (tmp_path / "out" / "guidance.jsonl").is_file()
