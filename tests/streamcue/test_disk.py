"""Disk and concurrency at the root (streamcue/io.py, staging.py, paths.py): one output, one writer (a lock
that a second process is refused by, naming the folder and the holder), unique temporaries, a full disk and a
file-size limit named as such, and errors that name the output, never a temporary."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from conftest import FILE_SIZE_LIMITED, SHARED_DATA, cli_run

OVO = SHARED_DATA / "fixtures" / "ovo_bench" / "ovo_bench_new.one_per_task.json"
HOLD = ("import sys, time; from streamcue.paths import lock_output; lock_output(sys.argv[1]); "
        "print('held', flush=True); time.sleep(60)")


def cli(*args):
    """The command in this process: a second process to the holder's, which is what the lock is about."""
    return cli_run(*args, env={"COLUMNS": 200})


@pytest.fixture
def held(tmp_path):
    """An output folder that another process is writing into."""
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield out, holder.pid
    finally:
        holder.kill()
        holder.wait()


COMMANDS = {
    "build": lambda out: ("build", "ovo-bench", "--annotations", OVO, "--out", out),
    "run": lambda out: ("run", "ovo-bench", out.parent / "no-such-records", "--out", out, "--llm-base-url",
                        "http://127.0.0.1:9/v1", "--llm-model", "m", "--no-video"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_second_writer_into_one_folder_is_refused_naming_the_holder(command, held):
    if not OVO.is_file():
        pytest.skip("needs ../shared/data/fixtures")
    out, pid = held
    if command == "run":  # a real build to run on, so that only the lock can refuse it
        done = cli("build", "ovo-bench", "--annotations", OVO, "--out", out.parent / "records")
        assert done.returncode == 0, done.stderr
        args = ("run", "ovo-bench", out.parent / "records", *COMMANDS["run"](out)[3:])
    else:
        args = COMMANDS[command](out)
    done = cli(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.splitlines()
    assert str(out) in line and f"pid {pid}" in line and "being written by another streamcue" in line
    assert not (out.exists() and any(out.iterdir()))


def test_the_lock_goes_with_the_process(tmp_path):
    if not OVO.is_file():
        pytest.skip("needs ../shared/data/fixtures")
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.kill()  # a killed holder leaves its lock file, unlocked: the next writer takes it over
    holder.wait()
    from streamcue.paths import lock_file

    assert lock_file(out).is_file()
    done = cli("build", "ovo-bench", "--annotations", OVO, "--out", out)
    assert done.returncode == 0, done.stderr
    assert not lock_file(out).exists()  # a writer that ends removes its lock file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_same_process_may_take_its_own_lock_again(tmp_path):
    from streamcue.paths import check_out_folder, lock_file, release_outputs

    check_out_folder(tmp_path / "a" / "b" / "mine")
    check_out_folder(tmp_path / "a" / "b" / "mine")
    assert lock_file(tmp_path / "a" / "b" / "mine").is_file()
    release_outputs()  # the folders made for the lock go with it, being empty
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("code", "words"), [(errno.ENOSPC, "the disk is full"),
                                             (errno.EFBIG, "the file-size limit was reached"),
                                             (errno.EDQUOT, "quota"), (errno.EROFS, "read-only")])
def test_a_disk_error_is_named_and_names_the_output(code, words, tmp_path):
    from streamcue.io import atomic_write

    target = tmp_path / "results.json"
    with pytest.raises(OSError) as caught, atomic_write(target) as fh:
        fh.write("x")
        raise OSError(code, os.strerror(code), fh.name if hasattr(fh, "name") else None)
    assert caught.value.filename == str(target) and words in caught.value.strerror
    assert list(tmp_path.iterdir()) == []


def test_a_staged_folder_error_names_the_final_file_not_the_temporary(tmp_path):
    from streamcue.staging import staged_folder

    out = tmp_path / "release"
    with pytest.raises(OSError) as caught, staged_folder(out) as tmp:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp / "data" / "x.parquet"))
    assert caught.value.filename == str(out / "data" / "x.parquet") and "the disk is full" in caught.value.strerror
    assert list(tmp_path.iterdir()) == []


def test_temporaries_are_unique(tmp_path):
    from streamcue.io import atomic_write
    from streamcue.staging import staged_folder

    target = tmp_path / "x.json"
    with atomic_write(target) as one, atomic_write(target) as two:
        one.write("1")
        two.write("2")
        assert len({p.name for p in tmp_path.iterdir()}) == 2
    with staged_folder(tmp_path / "a") as one, staged_folder(tmp_path / "a") as two:
        assert one.name.startswith(".a.") and two.name.startswith(".a.") and one != two
    assert target.read_text() == "1" and (tmp_path / "a").is_dir()


@FILE_SIZE_LIMITED
def test_a_file_size_limit_through_the_cli_is_named_as_such(tmp_path):
    """Python ignores SIGXFSZ, so the limit is an EFBIG: one line naming the output and the limit."""
    import resource

    if not OVO.is_file():
        pytest.skip("needs ../shared/data/fixtures")
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "streamcue", "build", "ovo-bench", "--annotations",
                          SHARED_DATA / "ovo_bench" / "ovo_bench_new.json", "--out", out], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "STREAMCUE_NO_PROGRESS": "1"},
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000)))
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    [line] = run.stderr.splitlines()
    assert line.startswith(f"error: {out}/") and "file-size limit" in line and ".tmp" not in line, line


@pytest.fixture
def small_disk(tmp_path):
    """A real 64 KiB file system (tmpfs; skipped where this process may not mount one), ``free`` bytes left."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs to mount a small tmpfs (root)")

    def fill(free):
        (disk / "fill").write_bytes(b"\0" * (64 * 1024 - free))
        return disk

    try:
        yield fill
    finally:
        subprocess.run(["umount", str(disk)], check=False)


@pytest.mark.parametrize(("free", "annotations", "named"), [
    (0, OVO, "out"),                                                    # not even the lock's line fits
    (24 * 1024, SHARED_DATA / "ovo_bench" / "ovo_bench_new.json", "out/videos.jsonl"),  # the lock fits, the data not
])
def test_a_full_disk_names_the_file_and_leaves_no_lock_or_empty_folder(small_disk, free, annotations, named):
    """issue 46: on a full disk a command said "No space left on device" naming no file and left its
    ``.out.lock``, and build left an empty folder. Now one line naming the output (or the file being written), and
    the disk as it was."""
    if not annotations.is_file():
        pytest.skip("needs ../shared/data")
    disk = small_disk(free)
    done = cli("build", "ovo-bench", "--annotations", annotations, "--out", disk / "out")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.splitlines()
    assert line == f"error: {disk / named}: the disk is full (no space left on device)"
    assert sorted(p.name for p in disk.iterdir()) == ["fill"]


def test_a_run_on_a_full_disk_names_its_folder_and_leaves_no_lock(small_disk, toybench, tmp_path):
    """issue 46's second case: ``run`` on a full disk said "No space left on device" and left ``.run.lock``."""
    from conftest import cli as in_process

    source = toybench / "dataset_builders" / "toybench.json"
    assert in_process("build", "toybench", "--questions", source, "--out", tmp_path / "built")[0] == 0
    disk = small_disk(0)
    code, _, err = in_process("run", "toybench", tmp_path / "built", "--out", disk / "run", "--no-video",
                              "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m")
    assert code == 2 and err.strip() == f"error: {disk / 'run'}: the disk is full (no space left on device)", err
    assert sorted(p.name for p in disk.iterdir()) == ["fill"]
