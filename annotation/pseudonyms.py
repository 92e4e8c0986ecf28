"""Stable pseudonyms for the people who verified records: ``annotator-1``, ``reviewer-1``, ...

A release publishes no e-mail address or account name. Every name a record's ``verification`` holds
(``annotators``, ``reviewer``, and the ``notes`` that quote them) and every name in the agreement
figures is replaced by its pseudonym, per role: the names in ``annotators`` become ``annotator-N``,
a ``reviewer`` becomes ``reviewer-N``.

The mapping stays with the maintainer: a JSON file outside the release (``release build --pseudonyms``,
by default ``pseudonyms.json`` beside the release folder, so every version built into the same folder
shares it), ``{"annotator": {"ann1@example.org": "annotator-1"}, "reviewer": {"rev@example.org":
"reviewer-1"}}``. Each build reads it and adds the people it has not seen yet, numbered after the
highest number of their role in sorted order of their names, so a person keeps their pseudonym in
every later version. A name that already reads like a pseudonym and is not in the file is kept.

The file is written under a lock (an exclusive ``flock`` on its folder), and only when it still holds what this
build read: two builds sharing one file that both add people would each give the next number to their own new
person; the one that saves second is refused in one line, before it publishes anything, and builds again.
"""

from __future__ import annotations

import copy
import fcntl
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamcue.errors import ConfigError, InputError
from streamcue.io import read_json, write_json

__all__ = ["PSEUDONYMS_FILE", "ROLES", "Pseudonyms"]

#: The mapping's default file name (beside the release folder).
PSEUDONYMS_FILE = "pseudonyms.json"
ROLES = ("annotator", "reviewer")
_PSEUDONYM = re.compile(r"(annotator|reviewer)-[1-9][0-9]*")


@dataclass
class Pseudonyms:
    """Role -> name -> pseudonym, read from (and written back to) ``path``."""

    path: Path
    names: dict[str, dict[str, str]] = field(default_factory=lambda: {role: {} for role in ROLES})
    added: int = 0
    #: The mapping as read (None: no file yet): :meth:`save` writes only over a file that still holds it.
    read_as: dict[str, dict[str, str]] | None = None

    @classmethod
    def read(cls, path: str | Path) -> Pseudonyms:
        path = Path(path)
        if not path.exists():
            return cls(path)
        data = read_json(path)
        ok = isinstance(data, dict) and set(data) <= set(ROLES) and all(
            isinstance(m, dict) and all(isinstance(k, str) and isinstance(v, str) and
                                        re.fullmatch(f"{role}-[1-9][0-9]*", v) for k, v in m.items())
            for role, m in data.items())
        if not ok:
            raise InputError('not a pseudonyms file ({"annotator": {name: "annotator-N"}, "reviewer": '
                             '{name: "reviewer-N"}})', file=path)
        for role, mapping in data.items():
            if len(set(mapping.values())) != len(mapping):
                raise InputError(f"two {role}s share one pseudonym", file=path, field=f"$.{role}")
        names = {role: dict(data.get(role, {})) for role in ROLES}
        return cls(path, names, read_as=copy.deepcopy(names))

    def add(self, role: str, names: Iterable[str]) -> None:
        """Give each new name of ``role`` the next free pseudonym (in sorted order of the names)."""
        known = self.names[role]
        numbers = [int(v.rsplit("-", 1)[1]) for v in known.values()]
        top = max(numbers, default=0)
        for name in sorted(set(names) - set(known)):
            if _PSEUDONYM.fullmatch(name):
                continue
            top += 1
            known[name] = f"{role}-{top}"
            self.added += 1

    def of(self, role: str, name: str) -> str:
        return self.names[role].get(name, name)

    @property
    def people(self) -> list[str]:
        """Every name the mapping holds (the release's scan refuses each of them)."""
        return sorted({name for mapping in self.names.values() for name in mapping})

    def record(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` with its verification's names replaced (in the notes too, longest name first)."""
        ver = record.get("verification") or {}
        swap = {n: self.of("annotator", n) for n in ver.get("annotators") or ()}
        if ver.get("reviewer"):
            swap[ver["reviewer"]] = self.of("reviewer", ver["reviewer"])
        swap = {k: v for k, v in swap.items() if k != v}
        if not swap:
            return record
        new = dict(ver, annotators=[swap.get(n, n) for n in ver.get("annotators") or ()])
        if "annotators" not in ver:
            del new["annotators"]
        if ver.get("reviewer"):
            new["reviewer"] = swap.get(ver["reviewer"], ver["reviewer"])
        if ver.get("notes"):
            new["notes"] = [_replace(note, swap) for note in ver["notes"]]
        return {**record, "verification": new}

    def figures(self, figures: dict[str, Any]) -> dict[str, Any]:
        """Agreement figures (``agreement.json``: kind -> figures) with every annotator and reviewer replaced."""
        out = {}
        for kind, entry in figures.items():
            if not isinstance(entry, dict):
                out[kind] = entry
                continue
            entry = dict(entry)
            if isinstance(entry.get("annotators"), list):
                entry["annotators"] = [self.of("annotator", n) for n in entry["annotators"]]
            if isinstance(entry.get("reviewers"), list):
                entry["reviewers"] = [self.of("reviewer", n) for n in entry["reviewers"]]
            if isinstance(entry.get("pairs"), list):
                entry["pairs"] = [dict(p, annotators=[self.of("annotator", n) for n in p.get("annotators", [])])
                                  for p in entry["pairs"]]
            out[kind] = entry
        return out

    def add_figures(self, figures: dict[str, Any]) -> None:
        for entry in figures.values():
            if isinstance(entry, dict):
                self.add("annotator", [n for n in entry.get("annotators") or () if isinstance(n, str)])
                self.add("reviewer", [n for n in entry.get("reviewers") or () if isinstance(n, str)])

    def save(self) -> None:
        """Write the mapping back (atomically) when this build added anyone, under an exclusive lock on its folder,
        refused (ConfigError) when another build changed the file since :meth:`read`."""
        if not self.added:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        folder = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)  # another build's save waits here, then sees this one's file
            now = Pseudonyms.read(self.path).read_as if self.path.exists() else None
            if now != self.read_as:
                raise ConfigError(f"{self.path}: another release build added people to this pseudonyms file while "
                                  "this one ran; nothing was published: build again, so that no pseudonym names "
                                  "two people")
            write_json(self.path, self.names)
        finally:
            os.close(folder)


def _replace(text: str, swap: dict[str, str]) -> str:
    """``text`` with each name of ``swap`` replaced where it stands as a whole word (longest name first)."""
    for name in sorted(swap, key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", lambda _, new=swap[name]: new, text)
    return text
