"""Docs that cannot drift: every ``streamcue ...`` command in a code block of README.md or docs/**/*.md is either
run here, as written, in a folder beside ``../shared`` (``RUN``), inside a block another test runs as written (a
``<!-- ... -->`` marker that test reads: ``RUN_BY_MARKER``), or named in ``CANNOT_RUN_HERE`` with the reason it
cannot run in a test (real videos, a real model server with real weights, a real Label Studio deployment with
annotated tasks, the Hub). A command in none of them fails, naming its page and line, so a new doc line is either
run or its reason written down. One test per command and page line; and every ``tests/FILE.py::test`` a page
names as its evidence exists, and every option a doc command shows (run or not) is one its command declares."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from conftest import SHARED_DATA

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
COMMAND = re.compile(r"(?:^|\$\(|&&\s*|;\s*|^\$\s+)streamcue\s+[a-z]")
MARKER = re.compile(r"<!--\s*(.*?)\s*-->")

# commands run here, in this order where one reads what another wrote; "[...]" parts of a doc line are optional
# and dropped before running
RUN = (
    "streamcue annotate keygen --out keys/streamcue-signing.pem",
    "streamcue build captaincook4d --annotations ../shared/data/captaincook4d --out out/cc4d",
    "streamcue validate out/cc4d/guidance.jsonl --kind guidance",
    "streamcue release build --records out/cc4d --version 1.0.0 --out dist/v1.0.0 --repo ORG/NAME --allow-unverified",
    "streamcue release verify dist/v1.0.0",
    "streamcue build ovo-bench --annotations ../shared/data/ovo_bench/ovo_bench_new.json --out out/ovo",
    "streamcue evaluate ovo-bench --gt out/ovo --pred ../shared/data/ovo_bench/results/GPT --pred-format ovo-results",
    "streamcue build streamingbench --questions ../shared/data/streamingbench --out out/sb",
    "streamcue build streamingbench --questions ../shared/data/streamingbench --out out/sb-all --all-files",
    "streamcue build streamingbench --questions ../shared/data/streamingbench --out out/sb-real --subset real",
    "streamcue build ego4d --goalstep ../shared/data/ego4d_goalstep/data/goalstep_valid.json --out out/ego4d",
    "streamcue build phostream --annotations ../shared/data/phostream/phostream_annotations.json --out out/phostream",
    "streamcue build streambench --annotations ../shared/data/streambench/eval_streambench.json --out out/streambench",
    "streamcue schema guidance",
    "streamcue evaluate estp-f1 --gt out/ego4d/interval_qa.jsonl --pred runs/poll/predictions.jsonl",
    "streamcue evaluate estp-f1 --gt out/ego4d/interval_qa.jsonl --pred runs/poll/predictions.jsonl "
    "--timing-rule nearest-one-to-one",
    "streamcue evaluate ovo-bench --gt out/ovo --pred runs/ovo/predictions.jsonl",
    "streamcue evaluate streamingbench --gt out/sb --pred runs/sb/predictions.jsonl",
)
# what a replay would write (it needs videos and a model): the metric's own example predictions
# (``example_predictions(gt)``, as the contract tests score them) for the first records of the build
PREDICTIONS = {"runs/poll/predictions.jsonl": ("estp-f1", "out/ego4d/interval_qa.jsonl"),
               "runs/ovo/predictions.jsonl": ("ovo-bench", "out/ovo/mc_question.jsonl"),
               "runs/sb/predictions.jsonl": ("streamingbench", "out/sb/mc_question.jsonl")}

# a block under one of these markers is run as written by the named test (which reads the same marker)
RUN_BY_MARKER = {
    "publish-example: run by tests/release/test_release_hub.py":
        "tests/release/test_release_hub.py::test_the_publish_example_in_the_docs_runs_as_written",
    "local-hub-example: run by tests/release/test_release_hub.py":
        "tests/release/test_release_hub.py::test_the_local_hub_recipe_in_the_docs_runs_and_a_published_video_decodes",
    "recorded-example: run by tests/dataset_builders/test_recorded_kinds.py":
        "tests/dataset_builders/test_recorded_kinds.py::test_the_recorded_example_in_the_docs_runs_as_written",
    "setup:begin": "tests/annotation/test_annotation_setup.py::test_the_documented_setup_runs_as_written",
    "clock-example: run by tests/metrics/test_latency_cost.py":
        "tests/metrics/test_latency_cost.py::test_the_clock_example_in_the_docs_runs_as_written",
    "pool-example: run by tests/loaders/test_ray_workers.py":
        "tests/loaders/test_ray_workers.py::test_two_ray_workers_give_exactly_the_figures_of_a_local_run",
    "audio-example: run by tests/loaders/test_audio.py":
        "tests/loaders/test_audio.py::test_the_sound_example_in_the_docs_runs_as_written",
    "anonymization-check-example: run by tests/annotation/test_anonymization_check.py":
        "tests/annotation/test_anonymization_check.py::test_the_documented_check_runs_as_written_and_the_release_says_so",
    "review-example: run by tests/annotation/test_annotation_browser.py":
        "tests/annotation/test_annotation_browser.py::test_a_reviewer_starts_from_the_annotators_regions_with_the_disagreements_"
        "marked",
}

VIDEOS_AND_MODEL = "needs the benchmark's videos under /data and a real model server with real weights"
AFTER_MODEL = "compares the run folders of runs that need videos and a real model server"
LABEL_STUDIO = "needs a real Label Studio deployment whose tasks people annotated"
MODEL = "needs a real model server with real weights (the stub's canned answers build nothing meaningful)"
TEMPLATE = "a template: FILE, pred.jsonl, traces.jsonl... are the reader's own files"
# (regular expression matched at the start of the command, reason); each must match a command the docs show
CANNOT_RUN_HERE = (
    (r"streamcue export runs/phostream-try ",
     "tests/dataset_builders/test_phostream.py::test_the_official_scorer_agrees_with_a_streamcue_run exports a "
     "PhoStream run with it"),
    (r"streamcue export ",
     "tests/metrics/test_export.py::test_every_export_command_the_docs_show_runs runs each as written"),
    (r"streamcue run livecook ORG/NAME@v1\.0\.0 ", "needs the release on the Hub (a local Hub serves it to "
     "tests/release/test_open_records.py::test_a_hub_dataset_at_a_revision)"),
    (r"streamcue (replay|run) ", VIDEOS_AND_MODEL),
    (r"streamcue evaluate livecook --gt out/cc4d/guidance\.jsonl --pred runs/cook/", "its default BERTScore pass "
     "loads a sentence model (80 s on 2 cores); "
     "tests/streamcue/test_contracts.py::test_every_metric_keeps_the_contract "
     "scores livecook's example predictions"),
    (r"streamcue compare runs/", AFTER_MODEL),
    (r"streamcue evaluate \S+ +--gt \S+ +--pred pred\.jsonl", TEMPLATE),
    (r"streamcue evaluate reasoning --gt traces\.jsonl", TEMPLATE),
    (r"streamcue evaluate phostream --gt runs/phostream/", "re-scores a run that needs videos and a real model server, "
     "with a real judge model; "
     "tests/dataset_builders/test_phostream.py::test_the_official_judge_agrees_with_streamcues runs it on "
     "crafted answers against a stub judge"),
    (r"streamcue validate FILE\.jsonl", TEMPLATE),
    (r"streamcue evaluate streamingbench --gt out/sb --pred real_output\.json", "the answered question file of a "
     "model's official StreamingBench run, which ../shared does not hold"),
    (r"streamcue annotate (push|pull|status) ", LABEL_STUDIO),
    (r"streamcue release build --records out/cc4d-v2 ", "reads the build folder an `annotate pull` of people's "
     "verified work writes (" + LABEL_STUDIO + ")"),
    (r"streamcue release push --dist \S+ --repo ORG/NAME *$", "pushes to the Hugging Face Hub (HF_TOKEN)"),
    (r"streamcue release verify ORG/NAME@", "reads the release from the Hugging Face Hub; "
     "tests/release/test_release_signature.py::test_a_pushed_release_downloaded_from_the_hub_verifies_and_a_tampered_"
     "one_does_not runs it against a local Hub server"),
    (r"streamcue anonymize .*--device cuda", "needs CUDA GPUs (none here) and the reader's recordings; "
     "tests/anonymize/test_anonymize_ray_gpu.py runs GPU tasks on a local Ray that declares one GPU"),
    (r"streamcue anonymize ", "needs the reader's recordings (and, for scrfd, its ONNX weights; for --address, a "
     "Ray cluster); tests/anonymize/test_anonymize*.py run each engine and detector on clips"),
    (r"streamcue verify-evidence ", VIDEOS_AND_MODEL),
    (r"streamcue stats (evidence|agreement) ", "reads people's verified records (" + LABEL_STUDIO + ")"),
    (r"streamcue build (recorded|livecook-summaries|livecook-augment) ", MODEL),
    (r"streamcue build ego4d .*--captions ", MODEL),
)


def _commands(command: re.Pattern = COMMAND) -> list[tuple[str, int, str, str | None]]:
    """(page, line, command, marker of its block) for every streamcue command (or other ``command``) in a fenced
    block, with its backslash-continued lines joined and a trailing ``# comment`` dropped."""
    found = []
    for page in PAGES:
        lines, marker, block, last_marker, i = page.read_text(encoding="utf-8").splitlines(), None, False, None, 0
        while i < len(lines):
            line = lines[i]
            if line.lstrip().startswith("```"):
                block, marker = not block, (last_marker if not block else None)
            elif not block:
                hit = MARKER.search(line)
                last_marker = hit.group(1) if hit else (last_marker if not line.strip() else None)
            elif command.search(line):
                start, text = i + 1, line
                while text.rstrip().endswith("\\") and i + 1 < len(lines):
                    i += 1
                    text = text.rstrip()[:-1] + " " + lines[i].strip()
                text = re.sub(r"\s+#.*$", "", text)
                text = text[command.search(text).start():].lstrip("$(;& ")
                found.append((str(page.relative_to(REPO)), start, " ".join(text.split()), marker))
            i += 1
    return found


COMMANDS = _commands()

# `./dev.sh perf` commands: --help and --dry-run read only perf/baseline.json (no install, no bench) and run here;
# the others run the benches, listed with the reason
PERF_COMMAND = re.compile(r"(?:^|\s)\./dev\.sh perf\b")
PERF_COMMANDS = _commands(PERF_COMMAND)
RUN_PERF = ("./dev.sh perf --help", "./dev.sh perf --dry-run")
CANNOT_RUN_PERF = (
    (r"\./dev\.sh perf( --only \S+)?( --update-baseline .*)?$", "runs the headline benches: many minutes on 2 "
     "cores, and what it prints are timings, which no test asserts; "
     "tests/streamcue/test_perf_guard.py checks how it compares and records them"),
)


def test_no_command_hides_in_an_indented_block():
    """An indented code block is not read above: every command goes in a fenced block, so that it is run or named."""
    hidden = [f"{page.relative_to(REPO)}:{i}" for page in PAGES for i, line in enumerate(_unfenced(page), 1)
              if re.match(r"^ {4}(\$ )?streamcue\s+[a-z]", line)]
    assert hidden == [], "streamcue commands in indented blocks (put them in a fenced block): " + ", ".join(hidden)


def _unfenced(page: Path) -> list[str]:
    """The page's lines, those inside fenced blocks blanked (so that line numbers stay)."""
    lines, block = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        fence = line.lstrip().startswith("```")
        block = block != fence
        lines.append("" if block or fence else line)
    return lines


def _runnable(command: str) -> str:
    return " ".join(re.sub(r"\[[^\]]*\]", " ", command).split())


@cache
def _work(root: str) -> Path:
    work = Path(root) / "work"
    work.mkdir(parents=True)
    (Path(root) / "shared").symlink_to(SHARED_DATA.parent)
    return work


@cache
def _run(root: str, command: str) -> subprocess.CompletedProcess:
    for before in RUN[:RUN.index(command)]:  # what it reads, first (each runs once)
        if "--out" in before and _run(root, before).returncode:
            break
    for path, (metric, gt) in PREDICTIONS.items():
        if path in command:
            _predictions(_work(root), path, metric, gt)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "STREAMCUE_NO_PROGRESS": "1", "STREAMCUE_CACHE_DIR": f"{root}/cache", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=_work(root), env=env,
                          capture_output=True, text=True, timeout=300)


def _predictions(work: Path, path: str, metric: str, gt: str) -> None:
    from streamcue.io import read_jsonl, write_jsonl
    from streamcue.metrics.registry import METRICS

    module = importlib.import_module(METRICS[metric].entry.partition(":")[0])
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(work / path, module.example_predictions(read_jsonl(work / gt)[:50]))


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("docs-commands"))


def _reason(command: str, marker: str | None) -> str | None:
    if marker in RUN_BY_MARKER:
        return RUN_BY_MARKER[marker]
    return next((why for pattern, why in CANNOT_RUN_HERE if re.match(pattern, command)), None)


@pytest.mark.parametrize(("page", "line", "command", "marker"), COMMANDS,
                         ids=[f"{page}:{line}" for page, line, _, _ in COMMANDS])
def test_every_command_the_docs_show_runs_or_says_why_not(root, page, line, command, marker):
    if _runnable(command) in RUN:
        done = _run(root, _runnable(command))
        assert done.returncode == 0, f"{page}:{line}: {command}\n{done.stderr[-3000:]}"
        return
    assert _reason(command, marker), (
        f"{page}:{line}: `{command}` is neither run by tests/streamcue/test_docs_commands.py (RUN) nor listed with the "
        "reason it cannot run there (CANNOT_RUN_HERE, RUN_BY_MARKER)")


def test_the_lists_name_only_what_the_docs_show():
    """No stale entry: each RUN command, each reason and each marker's test is used, and each marker is read by
    the test it names."""
    shown = [(_runnable(c), c, m) for _, _, c, m in COMMANDS]
    assert [c for c in RUN if c not in {r for r, _, _ in shown}] == []
    assert [p for p, _ in CANNOT_RUN_HERE if not any(re.match(p, c) for r, c, _ in shown if r not in RUN)] == []
    assert sorted({m for _, _, m in shown} & RUN_BY_MARKER.keys()) == sorted(RUN_BY_MARKER)
    for marker, test in RUN_BY_MARKER.items():
        path, name = test.split("::")
        source = (REPO / path).read_text(encoding="utf-8")
        assert f"def {name}(" in source and marker.split(":")[0] in source, test


def test_every_test_the_docs_name_exists():
    """A page that names ``tests/FILE.py`` or ``tests/FILE.py::test_name`` as its evidence names a file and a test
    that exist, so a renamed or removed test cannot leave a claim without its proof."""
    missing = []
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for hit in re.finditer(r"(tests/[\w/]+\.py)(?:::(\w+))?", line):
                path = REPO / hit.group(1)
                if not path.is_file() or (hit.group(2) and not re.search(
                        rf"^\s*(?:async )?def {hit.group(2)}\(", path.read_text(encoding="utf-8"), re.M)):
                    missing.append(f"{page.relative_to(REPO)}:{number}: {hit.group(0)}")
    assert missing == []


def test_every_option_a_doc_command_shows_is_one_its_command_declares():
    """Also the commands that cannot run here: their subcommands and options are those of the CLI (read from its
    command tree, in-process), so a renamed or removed option cannot stay in the docs."""
    import click

    from streamcue.cli.main import COMMANDS as TOP, _command

    wrong = []
    for page, line, command, _ in COMMANDS:
        words = re.sub(r"[\[\]]", " ", command).split()[1:]
        assert words[0] in TOP, f"{page}:{line}: no command {words[0]!r}"
        cmd, i = _command(words[0]), 0
        while hasattr(cmd, "list_commands") and i < len(words):
            sub = cmd.get_command(click.Context(cmd), words[i])
            if sub is None:
                wrong.append(f"{page}:{line}: {cmd.name} has no command {words[i]!r}")
                break
            cmd, i = sub, i + 1
        known = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        wrong += [f"{page}:{line}: {cmd.name} has no option {w}" for w in words[i:]
                  if w.startswith("--") and w.split("=")[0] not in known]
    assert wrong == []


@pytest.mark.parametrize(("page", "line", "command", "marker"), PERF_COMMANDS,
                         ids=[f"{page}:{line}" for page, line, _, _ in PERF_COMMANDS])
def test_every_perf_command_the_docs_show_runs_or_says_why_not(page, line, command, marker):
    """``./dev.sh perf --help`` and ``--dry-run`` run as written (with this interpreter's environment, so nothing is
    installed); every other one is listed in ``CANNOT_RUN_PERF`` with its reason."""
    if command in RUN_PERF:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=REPO, capture_output=True, text=True,
                              env={**os.environ, "STREAMCUE_VENV": sys.prefix}, timeout=60)
        assert done.returncode == 0 and "anonymize-720p" in done.stdout, f"{page}:{line}: {command}\n{done.stderr}"
        return
    assert any(re.match(pattern, command) for pattern, _ in CANNOT_RUN_PERF), (
        f"{page}:{line}: `{command}` is neither run here (RUN_PERF) nor listed with its reason (CANNOT_RUN_PERF)")


def test_the_perf_lists_name_only_what_the_docs_show_and_options_that_exist():
    shown = [c for _, _, c, _ in PERF_COMMANDS]
    assert [c for c in RUN_PERF if c not in shown] == []
    assert [p for p, _ in CANNOT_RUN_PERF if not any(re.match(p, c) for c in shown if c not in RUN_PERF)] == []
    declared = set(re.findall(r'add_argument\("(--[\w-]+)"', (REPO / "perf" / "guard.py").read_text()))
    assert [w for c in shown for w in c.split() if w.startswith("--") and w not in declared | {"--help"}] == []
