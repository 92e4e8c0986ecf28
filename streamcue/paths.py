"""Where streamcue finds its default inputs and caches (options > environment > defaults)."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from streamcue.errors import ConfigError, InputError
from streamcue.io import disk_error
from streamcue.redact import command_line

__all__ = ["repository_root", "shared_data_dir", "default_captaincook4d", "default_goalstep", "cache_dir",
           "URI_PATTERN", "uri_problem", "resolve_uri", "check_outputs", "check_out_folder", "lock_output", "lock_file",
           "release_outputs"]


def repository_root() -> Path:
    """The source checkout this package was installed from (``pip install -e .``)."""
    return Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The public annotation files that sit beside the repository (``../shared/data``)."""
    return Path(os.environ.get("STREAMCUE_SHARED_DATA", repository_root().parent / "shared" / "data"))


def default_captaincook4d() -> Path:
    """CaptainCook4D annotations: $STREAMCUE_CAPTAINCOOK4D, else ``../shared/data/captaincook4d``."""
    return Path(os.environ.get("STREAMCUE_CAPTAINCOOK4D", shared_data_dir() / "captaincook4d"))


def default_goalstep() -> Path:
    """Ego4D GoalStep val annotations beside the repository."""
    return shared_data_dir() / "ego4d_goalstep" / "data" / "goalstep_valid.json"


def cache_dir() -> Path:
    """Persistent cache (judge verdicts, LLM responses): $STREAMCUE_CACHE_DIR or ~/.cache/streamcue."""
    base = (os.environ.get("STREAMCUE_CACHE_DIR")
            or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "streamcue")
    return Path(base)


#: A video ``uri``: an http(s) URL, or a relative, normalised POSIX path (no ``..``, ``.``, empty
#: segment, leading ``/`` or ``~``, scheme, drive or backslash). The same rule as :func:`uri_problem`,
#: written as a JSON Schema pattern (``schemas/common.schema.json`` ``$defs/uri``).
URI_PATTERN = (r"^(https?://[^\s/]+(/\S*)?|(?![/~])(?![A-Za-z][A-Za-z0-9+.-]*:)(?!.*//)(?!(.*/)?\.\.?(/|$))"
               r"[^\\\u0000]+)$")


def uri_problem(uri: str) -> str | None:
    """Why ``uri`` is not a safe video uri (a relative normalised path, or an http(s) URL), or None."""
    if not isinstance(uri, str) or not uri:
        return "uri must be a non-empty string"
    lower = uri.lower()
    if lower.startswith(("http://", "https://")):
        return None if len(uri.split("/", 3)[2]) and not any(c.isspace() for c in uri) else "not a valid http(s) URL"
    if "\\" in uri or "\x00" in uri:
        return f"uri {uri!r} holds a backslash or NUL; use a relative path with /"
    if uri.startswith(("/", "~")):
        return f"uri {uri!r} is absolute; it must be relative to the video root"
    head = uri.split("/", 1)[0]
    if ":" in head and head.split(":", 1)[0].replace("+", "").replace(".", "").replace("-", "").isalnum():
        return f"uri {uri!r} has a scheme or drive; only http(s) URLs or relative paths are allowed"
    if any(part in ("", ".", "..") for part in uri.split("/")):
        return f"uri {uri!r} is not normalised (a '..', '.' or empty segment); it must stay under the video root"
    return None


def resolve_uri(root: str | Path, uri: str, *, record: str | None = None, file: str | Path | None = None,
                field: str = "uri") -> Path:
    """``root / uri`` for a local video, refused unless ``uri`` is safe and resolves under ``root``
    (a symlink that leads out of the root is refused too)."""
    problem = uri_problem(uri)
    if problem is None and "://" in uri:
        problem = f"uri {uri!r} is a URL, not a path under a video root"
    if problem:
        raise InputError(problem, file=file, record=record, field=field)
    path = Path(root) / uri
    real_root = Path(root).resolve()
    if not path.resolve().is_relative_to(real_root):
        raise InputError(f"uri {uri!r} resolves outside the video root (a symlink leads out of it)",
                         file=file, record=record, field=field)
    return path


def check_outputs(outputs: Mapping[Path, object] | Iterable[tuple[Path, object]], inputs: list[Path], *,
                  inside_inputs: bool = False) -> None:
    """Refuse writes that would lose data, before anything is written.

    ``outputs`` pairs each file (or folder) to be written with the input it comes from (or a
    label), as a mapping or as ``(output, origin)`` pairs; ``inputs`` are the files and folders
    read. Refused, as a one-line error naming both: an output that is, or resolves (symlinks,
    ``..``) to, an input; with ``inside_inputs``, an output that lies inside an input folder (or
    below an input file); two different inputs that map to one output.
    """
    real_inputs = [(p, Path(p).resolve()) for p in inputs]
    seen: dict[Path, object] = {}
    for out, origin in (outputs.items() if isinstance(outputs, Mapping) else outputs):
        real = Path(out).resolve()
        for given, real_in in real_inputs:  # the worst first: overwriting an input, then writing inside one
            if real == real_in:
                raise ConfigError(f"output {out} is the input {given}: refusing to overwrite an input")
        for given, real_in in real_inputs:
            if inside_inputs and real_in.is_dir() and real.is_relative_to(real_in):
                raise ConfigError(f"output {out} lies inside the input folder {given}: choose another output folder")
            if inside_inputs and real_in.is_file() and real.is_relative_to(real_in):
                raise ConfigError(f"output {out} lies inside the input file {given}: choose another output")
        if real in seen and seen[real] != origin:
            raise ConfigError(f"{seen[real]} and {origin} would both be written to {out}: rename one of them")
        seen[real] = origin


def check_out_folder(out: str | Path, option: str = "--out") -> Path:
    """An output folder: refused (one line) when it exists as something other than a folder, or when another
    streamcue process writes into it (:func:`lock_output`; this process then holds it until it ends)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{option} {out} exists and is not a folder")
    lock_output(out, option)
    return out


#: The output locks this process holds: resolved output -> (lock file, its open descriptor, folders made for it).
_HELD: dict[Path, tuple[Path, int, list[Path]]] = {}


def lock_file(out: str | Path) -> Path:
    """The lock file of output ``out``: ``.NAME.lock`` beside it, in its parent folder."""
    out = Path(out)
    return out.parent / f".{out.name}.lock"


def lock_output(out: str | Path, option: str = "--out") -> None:
    """One output, one writer: take an exclusive ``flock`` on :func:`lock_file` until :func:`release_outputs`
    (the CLI calls it when a command ends) or the end of the process.

    A second process that wants the same output is refused with one line naming the output and the holder
    (its process id and command, which the holder writes into the lock file). Taken again by the same process,
    it is a no-op. The lock file is removed on release (a killed process leaves an unlocked one, which the next
    writer takes over), with the folders made to hold it and the output folder when they are still empty (a
    command that failed on a full disk leaves no empty folder). Where no lock file can be
    made (a read-only parent), nothing is locked: the write itself will fail, naming the output.
    """
    out = Path(out)
    key = out.resolve()
    if key in _HELD:
        return
    lock = lock_file(key)
    # the output folder too: a command that fails (a full disk) leaves no empty folder behind
    made = [folder for folder in (key, lock.parent, *lock.parent.parents) if not folder.exists()]
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = _take(lock, out, option)
    except OSError:
        _remove_empty(made)
        return
    except ConfigError:
        _remove_empty(made)
        raise
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}: {command_line(['streamcue', *sys.argv[1:]])[:300]}\n".encode())
    except OSError as exc:  # a full disk: no lock left behind, and the line names the output, not nothing
        _drop(lock, fd, made)
        raise disk_error(exc, out) from None
    if not _HELD:
        atexit.register(release_outputs)
    _HELD[key] = (lock, fd, made)


def _take(lock: Path, out: Path, option: str) -> int:
    """An open descriptor of ``lock`` holding its exclusive lock; refused when another process holds it."""
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 4096).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise ConfigError(f"{option} {out} is being written by another streamcue ({holder}): wait for it to "
                              "end, or choose another output") from None
        try:
            same = os.stat(lock, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:  # not a file its last holder removed while this process waited to open it
            return fd
        os.close(fd)


def _remove_empty(folders: list[Path]) -> None:
    for folder in folders:  # deepest first
        with contextlib.suppress(OSError):
            folder.rmdir()


def release_outputs() -> None:
    """Unlock and remove every lock file this process holds (:func:`lock_output`), and the folders made for
    them that are still empty."""
    while _HELD:
        _, (lock, fd, made) = _HELD.popitem()
        _drop(lock, fd, made)


def _drop(lock: Path, fd: int, made: list[Path]) -> None:
    """Remove the lock file ``lock`` (open as ``fd``), then the folders made for it that are still empty."""
    with contextlib.suppress(OSError):
        os.unlink(lock)
    with contextlib.suppress(OSError):
        os.close(fd)
    _remove_empty(made)
