"""From a task's annotations to a verified record: the double-check rule (ESTP-Bench: every
item verified by two annotators), and how a disagreement is decided.

* Skipped or cancelled annotations are ignored.
* A check is one *annotator* (a Label Studio user id), not one annotation: when the same user
  submits a task twice, only their latest annotation counts, as one check.
* No annotation: the record comes back exactly as it was pushed.
* Fewer than ``required`` annotators: the record is unchanged; its verification counts the
  checks so far and stays ``unverified``.
* ``required`` or more: each annotation is applied to the record; when all of them agree
  (same reject decision; the same items, each boundary within ``tolerance_s``, same types, same
  texts after normalising case, spaces and end punctuation) the first annotation's record is kept
  with status ``verified`` (or ``rejected``), the annotators, the number of checks and
  ``decided_by: agreement``. When they disagree the record is unchanged, stays ``unverified`` and
  the disagreement, naming the item and field (``event e3 (mistake at 12s): t_s 12s (ann1) vs 15s
  (ann2)``), is written in ``verification.notes`` and reported: never resolved silently.
* A disagreement is resolved by a stated rule or by a person, and the record says which
  (``verification.decided_by``):

  - ``majority`` (``pull --majority``, with ``--required 3`` or more): when more than half of the
    annotators agree with each other, their record is kept; the dissent stays in the notes;
  - ``reviewer``: an annotation by a reviewer (``pull --reviewer EMAIL``, a third user who is not
    one of the annotators) is the decision: the record is the reviewer's, ``verification.reviewer``
    names them, ``checks`` counts the reviewer and the annotators who agree with them, and the
    disagreement it resolved stays in the notes. A reviewer decides whatever the annotators did.
* Once anyone has annotated, ``verification.guideline`` names the guideline version the
  project showed its annotators (``interval_qa.v1``); an untouched record is left as pushed.
* A decided (verified or rejected) record carries ``verification.content_sha256``, the SHA-256 of
  what was decided: the record without its ``verification``, as canonical JSON (:func:`content_sha256`).
  A record edited afterwards no longer matches it, and :func:`verification_problem` says it is not
  verified; so does a record that fewer than two people checked (one annotator, or a reviewer alone).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from streamcue.annotation.convert import Applied, Where, apply


__all__ = ["Difference", "Outcome", "SEAL", "content_sha256", "describe", "differences", "disagreement", "identity",
           "latest_per_annotator", "sealed", "verification_problem", "verify"]

#: The field of ``verification`` that holds the SHA-256 of what was verified (:func:`content_sha256`).
SEAL = "content_sha256"


def content_sha256(record: dict[str, Any]) -> str:
    """SHA-256 (hex) of ``record`` without its ``verification``, as canonical JSON: keys sorted, no
    spaces (``separators=(",", ":")``), UTF-8 without ASCII escapes, NaN refused, and a number written as
    JSON Schema compares numbers (as RFC 8785 writes them): an integral float as an integer, so ``1.0``
    and ``1`` (a time a Parquet release hands back as a float) are the same content."""
    body = _canonical({k: v for k, v in record.items() if k != "verification"})
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        return int(value)
    return value


def sealed(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with ``verification.content_sha256`` set to the hash of its content (a decided record)."""
    return {**record, "verification": {**record["verification"], SEAL: content_sha256(record)}}


#: Latin look-alikes in Cyrillic and Greek, read as the Latin letter when people are compared.
_LOOKALIKE = str.maketrans("аеорсхуіјѕԁһӏοαντρκιεχ", "aeopcxyijsdhloavtpkiex")


_SCRIPT = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "HANGUL": "CJK"}  # written together in one name


def identity(name: Any) -> str | None:
    """A person's name as the double-check rule compares it: NFKC, trimmed, case-folded, look-alike letters read
    as Latin (``ann``, ``Ann ``, ``ANN`` and ``аnn`` with a Cyrillic a are one person); None for a name that cannot
    be told apart: not text, empty, or holding a zero-width or other format character or letters of two scripts."""
    if not isinstance(name, str):
        return None
    text = unicodedata.normalize("NFKC", name).strip().casefold()
    if not text or any(unicodedata.category(c) == "Cf" for c in text):
        return None
    scripts = {_SCRIPT.get(w, w) for w in (unicodedata.name(c, "?").split()[0] for c in text if c.isalpha())}
    if len(scripts) > 1:
        return None
    return text.translate(_LOOKALIKE)


def verification_problem(record: dict[str, Any]) -> str | None:
    """Why a record does not count as verified (None: it does).

    Verified means: status ``verified``; the content hash holds (nothing was edited after verification);
    and the double-check rule: two or more annotators agreed (``checks`` >= 2), or a reviewer decided
    a record at least one annotator checked (two people in all).
    """
    ver = record.get("verification") or {}
    if ver.get("status") != "verified":
        return f"status {ver.get('status')!r}"
    if ver.get(SEAL) is None:
        return f"no {SEAL}: what was verified is not recorded (verify it with annotate pull)"
    if ver[SEAL] != content_sha256(record):
        return f"edited after verification (its content no longer matches verification.{SEAL})"
    people = [*(ver.get("annotators") or ()), *([ver["reviewer"]] if ver.get("reviewer") is not None else [])]
    if any(identity(p) is None for p in people):
        return ("an annotator or reviewer name is empty, not text, or holds a zero-width or mixed-script character: "
                "the double-check rule cannot tell people apart")
    annotators = {identity(a) for a in ver.get("annotators") or ()}
    if ver.get("decided_by") == "reviewer":
        if len(annotators | {identity(ver.get("reviewer")) if ver.get("reviewer") is not None else None} - {None}) < 2:
            return "decided by a reviewer alone: the double-check rule needs two people"
    elif len(annotators) < 2 or (ver.get("checks") or 0) < 2:
        return (f"checked by {len(annotators)} annotator(s), {ver.get('checks') or 0} agreeing check(s): the "
                "double-check rule needs two")
    return None


@dataclass
class Outcome:
    record: dict[str, Any]
    state: str                      # untouched | pending | verified | rejected | disagreement | invalid
    annotations: int = 0
    changes: list[str] = field(default_factory=list)
    disagreement: str | None = None
    decided_by: str | None = None   # agreement | majority | reviewer (verified or rejected records)
    #: Each submitted annotation applied to the record: (annotator name, Applied, is a reviewer).
    applied: list[tuple[str, Applied, bool]] = field(default_factory=list)


@dataclass(frozen=True)
class Difference:
    """One way two annotations of a record differ: which item (``e3``, ``a1``, ``c4``, ``question``,
    ``decision``, or ``new mistake``), which field, and a line saying it."""

    item: str
    field: str
    text: str
    #: The region it concerns in each annotation (its id in the page, ``e3`` or an added region's own id;
    #: None where that annotation has no such region or the difference is the whole task's).
    regions: tuple[str | None, str | None] = (None, None)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower()).rstrip(".!?")


def _s(value: float) -> str:
    return f"{value:g}s"


def describe(kind: str, rid: str, item: dict[str, Any]) -> str:
    """An item as a person finds it in the page: ``event e3 (mistake at 12s)``, ``answer a1 (10s-13s)``."""
    if kind == "interval_qa":
        return f"answer {rid} ({_s(item['start_s'])}-{_s(item['end_s'])})"
    if kind == "dense_caption":
        return f"caption {rid} (second {item['t_s']:g})"
    return f"event {rid} ({item['type']} at {_s(item['t_s'])})"


def _pair_added(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]], key: str) -> list[tuple[Any, Any]]:
    """Added items of two annotations paired in time order, each as (its region id, the item), (None, None) for
    one the other annotation lacks (their region ids are each annotator's own)."""
    xs = sorted(((k[1:], v) for k, v in a.items() if k.startswith("+")), key=lambda kv: kv[1][key])
    ys = sorted(((k[1:], v) for k, v in b.items() if k.startswith("+")), key=lambda kv: kv[1][key])
    pairs: list[tuple[Any, Any]] = list(zip(xs, ys))
    pairs += [(x, (None, None)) for x in xs[len(ys):]] + [((None, None), y) for y in ys[len(xs):]]
    return pairs


def _pair_new(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]], key: str) -> list[tuple[Any, Any]]:
    """Added items of two annotations paired in time order (None for one the other annotation lacks)."""
    return [(x, y) for (_, x), (_, y) in _pair_added(a, b, key)]


def differences(kind: str, a: Applied, b: Applied, tolerance_s: float, names: tuple[str, str] = ("one", "the other"),
                original: dict[str, Any] | None = None) -> list[Difference]:
    """Every way annotation ``a`` differs from ``b`` (empty when they agree), item by item.

    ``original`` is the record as pushed, used to name an item as the annotators saw it.
    """
    na, nb = names
    if a.rejected != b.rejected:
        who = na if a.rejected else nb
        return [Difference("decision", "rejected", f"decision: {who} rejects the record, "
                                                    f"{nb if a.rejected else na} does not")]
    if a.rejected:
        return []
    out: list[Difference] = []
    if kind == "interval_qa" and _norm(a.record["question"]) != _norm(b.record["question"]):
        out.append(Difference("question", "question", f"question: {a.record['question']!r} ({na}) vs "
                                                      f"{b.record['question']!r} ({nb})"))
    keys = {"interval_qa": ("start_s", "end_s"), "dense_caption": (), "guidance": ("t_s",)}[kind]
    listed = {"interval_qa": "answers", "dense_caption": "captions", "guidance": "events"}[kind]
    pushed = {f"{listed[0]}{i}": item for i, item in enumerate((original or a.record)[listed])}
    noun = "an answer" if kind == "interval_qa" else "a mistake"
    ids = sorted({k for k in (*a.items, *b.items) if not k.startswith("+")}, key=lambda k: (len(k), k))
    pairs = [(rid, a.items.get(rid), b.items.get(rid), (rid if rid in a.items else None,
                                                        rid if rid in b.items else None)) for rid in ids]
    pairs += [("+", x, y, (ra, rb)) for (ra, x), (rb, y) in _pair_added(a.items, b.items, keys[0] if keys else "t_s")]
    for rid, x, y, regions in pairs:
        base = pushed.get(rid) or x or y
        label = describe(kind, rid, base) if rid != "+" else None
        if x is None or y is None:
            kept, gone = (na, nb) if y is None else (nb, na)
            item = x if y is None else y
            if rid == "+":
                where = f"{_s(item[keys[0]])}" + (f"-{_s(item['end_s'])}" if kind == "interval_qa" else "")
                out.append(Difference(f"new {noun.split()[1]}", "present",
                                      f"{noun} added at {where} ({item['text']!r}) by {kept} only", regions))
            else:
                out.append(Difference(rid, "present", f"{label}: deleted by {gone}, kept by {kept}", regions))
            continue
        label = label or f"{noun.split()[1]} added at {_s(x[keys[0]])} by both"
        if x.get("type") != y.get("type"):
            out.append(Difference(rid, "type", f"{label}: type {x.get('type')} ({na}) vs {y.get('type')} ({nb})",
                                  regions))
        for key in keys:
            if abs(x[key] - y[key]) > tolerance_s:
                out.append(Difference(rid, key, f"{label}: {key} {_s(x[key])} ({na}) vs {_s(y[key])} ({nb}), "
                                                f"more than {_s(tolerance_s)} apart", regions))
        if _norm(x["text"]) != _norm(y["text"]):
            out.append(Difference(rid, "text", f"{label}: text {x['text']!r} ({na}) vs {y['text']!r} ({nb})",
                                  regions))
    return out


def disagreement(kind: str, a: Applied, b: Applied, tolerance_s: float, names: tuple[str, str] = ("one", "the other"),
                 original: dict[str, Any] | None = None) -> str | None:
    """Why two annotations of one record disagree (every difference, ``; ``-joined); None when they agree."""
    found = differences(kind, a, b, tolerance_s, names, original)
    return "; ".join(d.text for d in found) if found else None


def latest_per_annotator(annotations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The submitted (not skipped) annotations, one per annotator (their latest), oldest first."""
    latest: dict[Any, dict[str, Any]] = {}
    for annotation in sorted((a for a in annotations if not a.get("was_cancelled")), key=lambda a: a["id"]):
        latest[annotation.get("completed_by")] = annotation
    return sorted(latest.values(), key=lambda a: a["id"])


def _without(notes: list[str], *prefixes: str) -> list[str]:
    return [n for n in notes if not n.startswith(prefixes)]


def verify(record: dict[str, Any], kind: str, fps: float, annotations: list[dict[str, Any]],
           annotator_names: dict[Any, str], where: Where, *, required: int = 2, tolerance_s: float = 1.0,
           guideline: str | None = None, reviewers: Collection[str] = (), majority: bool = False) -> Outcome:
    """The record after its annotations, following the rules above (``reviewers``: names, i.e. emails)."""
    done = latest_per_annotator(annotations)
    if not done:
        return Outcome(record, "untouched")
    if guideline:
        record = {**record, "verification": {**record["verification"], "guideline": guideline}}
    applied = []
    for annotation in done:
        name = annotator_names.get(annotation.get("completed_by"), f"user:{annotation.get('completed_by')}")
        spot = Where(where.project, where.task, annotation["id"], where.record)
        applied.append((name, apply(record, kind, fps, annotation.get("result") or [], spot), name in reviewers))
    checks = [(n, a) for n, a, is_reviewer in applied if not is_reviewer]
    reviews = [(n, a) for n, a, is_reviewer in applied if is_reviewer]
    names = [n for n, _ in checks]
    base = {k: v for k, v in record["verification"].items() if k not in ("decided_by", "reviewer")}
    notes = _without(base.pop("notes", []), "disagreement:", "majority:", "resolved:")
    if notes:
        base["notes"] = notes
    unchanged = copy.deepcopy(record)

    def found(a: tuple[str, Applied], b: tuple[str, Applied]) -> str | None:
        return disagreement(kind, a[1], b[1], tolerance_s, (a[0], b[0]), record)

    if reviews:  # the reviewer's (latest) decision is final
        reviewer, decision = reviews[-1]
        agreeing = [n for n, a in checks if found((reviewer, decision), (n, a)) is None]
        disputes = [why for other in checks[1:] if (why := found(checks[0], other))]
        status = "rejected" if decision.rejected else "verified"
        decision.record["verification"] = {
            **base, "status": status, "annotators": names, "checks": len(agreeing) + 1, "decided_by": "reviewer",
            "reviewer": reviewer, "notes": [*notes, *(f"disagreement: {why}" for why in disputes[:1]),
                                            f"resolved: by reviewer {reviewer}"]}
        return Outcome(sealed(decision.record), status, len(checks), decision.changes,
                       disputes[0] if disputes else None, "reviewer", applied)
    if len(checks) < required:
        unchanged["verification"] = {**base, "status": "unverified", "annotators": names, "checks": len(checks)}
        return Outcome(unchanged, "pending", len(checks), [f"waiting for {required - len(checks)} more check(s)"],
                       applied=applied)
    groups: list[list[tuple[str, Applied]]] = []
    for check in checks:  # annotators who agree with each other's first member
        group = next((g for g in groups if found(g[0], check) is None), None)
        if group is None:
            groups.append([check])
        else:
            group.append(check)
    biggest = max(groups, key=len)
    if len(groups) == 1 or (majority and 2 * len(biggest) > len(checks)):
        name, first = biggest[0]
        status = "rejected" if first.rejected else "verified"
        extra: dict[str, Any] = {"decided_by": "agreement" if len(groups) == 1 else "majority"}
        dissent = [why for other in checks if other not in biggest and (why := found(biggest[0], other))]
        if dissent:
            extra["notes"] = [*notes, f"majority: {len(biggest)} of {len(checks)} agree; dissent: {dissent[0]}"]
        first.record["verification"] = {**base, "status": status, "annotators": names, "checks": len(biggest),
                                        **extra}
        return Outcome(sealed(first.record), status, len(checks), first.changes, None, extra["decided_by"], applied)
    reason = found(checks[0], next(c for c in checks[1:] if found(checks[0], c)))
    unchanged["verification"] = {**base, "status": "unverified", "annotators": names, "checks": len(checks),
                                 "notes": [*notes, f"disagreement: {reason}"]}
    return Outcome(unchanged, "disagreement", len(checks), [], reason, applied=applied)
