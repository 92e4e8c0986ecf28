"""Issue 46 item 1: verification as a signature kept by the maintainer. A signed verification holds; an edited
record, a verification written by hand (a recomputed content hash, invented names) or a record signed by another
key does not, at release build and in every reader; ``release verify`` checks a downloaded release (folder or
Hub dataset through the local Hub server) and names what failed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import SIGNING_KEY, VALID, cli, signed

pytest.importorskip("datasets")
pytest.importorskip("pyarrow")
pytest.importorskip("cryptography")

from streamcue.annotation.signing import KEY_ENV, SigningKey, generate, load_key, public_key  # noqa: E402
from streamcue.annotation.verify import content_sha256, sealed, verification_problem  # noqa: E402
from streamcue.anonymize.report import sha256_file  # noqa: E402
from streamcue.errors import ConfigError, InputError  # noqa: E402
from streamcue.io import read_json, write_json, write_jsonl  # noqa: E402
from streamcue.loaders import load  # noqa: E402
from streamcue.release.build import ReleaseConfig, build_release  # noqa: E402
from streamcue.release.verify import verify_release  # noqa: E402

AGREED = {"status": "verified", "annotators": ["ann1@lab.example.org", "ann2@lab.example.org"], "checks": 2,
          "decided_by": "agreement", "guideline": "dense_caption.v1",
          "label_studio": {"task": 7, "annotations": [31, 32], "at": "2026-11-29T03:00:00Z"}}
HAND_WRITTEN = {"status": "verified", "annotators": ["alice", "bob"], "checks": 2, "decided_by": "agreement"}


def caption(task_id: str, verification: dict | None = None) -> dict:
    record = json.loads(json.dumps(VALID["dense_caption"]))
    record.update(task_id=task_id, verification=dict(verification or {"status": "unverified"}))
    return record


def records_folder(path, records):
    path.mkdir(parents=True)
    write_jsonl(path / "videos.jsonl", [dict(VALID["video"], source="captaincook4d", uri="cc4d/v1.mp4",
                                             license="MIT", anonymization={"status": "not_required", "report": None})])
    write_jsonl(path / "dense_caption.jsonl", records)
    return path


def test_a_signed_verification_holds_and_an_edited_hand_written_or_foreign_one_does_not(tmp_path):
    record = signed(caption("t1", AGREED))
    assert verification_problem(record, SIGNING_KEY) is None
    assert record["verification"]["signature"]["key"] == SIGNING_KEY.fingerprint
    edited = json.loads(json.dumps(record))
    edited["captions"][1]["text"] = "Peeling an onion."
    edited = dict(edited, verification=dict(sealed(edited)["verification"]))   # the content hash recomputed
    assert verification_problem(edited, SIGNING_KEY).startswith("verification.signature: does not match the record")
    renamed = json.loads(json.dumps(record))
    renamed["verification"]["label_studio"]["annotations"] = [31, 33]   # another annotation named by hand
    assert verification_problem(renamed, SIGNING_KEY).startswith("verification.signature: does not match")
    by_hand = sealed(caption("t2", HAND_WRITTEN))
    assert verification_problem(by_hand) is None   # what the unkeyed seal let through
    assert verification_problem(by_hand, SIGNING_KEY).startswith("verification.signature: not signed")
    other = generate(tmp_path / "other.pem")
    assert verification_problem(other.sign(by_hand), SIGNING_KEY).startswith(
        f"verification.signature.key: signed by key '{other.fingerprint}', not by {SIGNING_KEY.fingerprint}")
    # the public part alone checks, and cannot sign
    public = load_key(tmp_path / "other.pem.pub")
    assert public.fingerprint == other.fingerprint and public.private is None
    assert verification_problem(other.sign(by_hand), public) is None
    with pytest.raises(ConfigError, match="is a public key"):
        public.sign(by_hand)


def test_keygen_writes_a_private_key_for_its_owner_only_and_never_overwrites(tmp_path):
    code, out, err = cli("annotate", "keygen", "--out", tmp_path / "keys" / "k.pem")
    assert code == 0, err
    key = load_key(tmp_path / "keys" / "k.pem")
    assert f"signing key {key.fingerprint}" in out and key.public_text in out
    assert (tmp_path / "keys" / "k.pem").stat().st_mode & 0o077 == 0
    assert public_key((tmp_path / "keys" / "k.pem.pub").read_text()).fingerprint == key.fingerprint
    before = (tmp_path / "keys" / "k.pem").read_bytes()
    code, _, err = cli("annotate", "keygen", "--out", tmp_path / "keys" / "k.pem")
    assert code == 2 and "already exists: a key is never overwritten" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "keys" / "k.pem").read_bytes() == before
    (tmp_path / "bad.pem").write_text("not a key")
    with pytest.raises(InputError, match="not an Ed25519 private key"):
        load_key(tmp_path / "bad.pem")


@pytest.mark.parametrize("pull", [["annotate", "pull"], ["annotate", "anonymization", "pull"]])
@pytest.mark.parametrize("which", ["k.pem", "k.pem.pub"])
def test_a_pull_never_writes_over_the_key_the_environment_names(tmp_path, monkeypatch, pull, which):
    """The newcomer's probe: with the key in $STREAMCUE_SIGNING_KEY (the documented way), ``--out`` on the key or
    its public part replaced it with the pulled JSON. Refused in one line before Label Studio is asked."""
    generate(tmp_path / "keys" / "k.pem")
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "keys" / "k.pem"))
    target = tmp_path / "keys" / which
    before = target.read_bytes()
    code, _, err = cli(*pull, "--project", "p", "--out", target, "--url", "http://127.0.0.1:9")
    assert code == 2 and "refusing to overwrite an input" in err and len(err.strip().splitlines()) == 1, err
    assert target.read_bytes() == before


def test_only_verified_without_the_signing_key_names_the_key_not_the_pull(tmp_path, monkeypatch):
    """Verified records whose signatures cannot be checked (no --key, no $STREAMCUE_SIGNING_KEY): --only-verified
    finds none verified and says why (the key), not "pull verified records", which a newcomer followed in vain."""
    from streamcue.annotation.signing import KEY_ENV

    rec = records_folder(tmp_path / "rec", [signed(caption("t1", AGREED))])
    monkeypatch.delenv(KEY_ENV)
    code, _, err = cli("release", "build", "--records", rec, "--version", "1.0.0", "--out", tmp_path / "dist" / "v1",
                       "--only-verified")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "no verified record to release (1 record(s) say verified and do not hold; dense_caption t1: " in err
    assert "pass --key or set STREAMCUE_SIGNING_KEY" in err and "annotate pull)" not in err, err
    assert not (tmp_path / "dist" / "v1").exists()


def test_release_build_refuses_a_hand_written_verification_in_one_line_naming_record_and_field(tmp_path):
    rec = records_folder(tmp_path / "rec", [signed(caption("t1", AGREED)), sealed(caption("t2", HAND_WRITTEN))])
    code, _, err = cli("release", "build", "--records", rec, "--version", "1.0.0", "--out", tmp_path / "dist" / "a")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert ("record task_id=t2, field $.verification.status: unverified record in the test split (not verified: "
            "verification.signature: not signed") in err
    code, out, err = cli("release", "build", "--records", rec, "--version", "1.0.0", "--out", tmp_path / "dist" / "v1",
                         "--only-verified")
    assert code == 0, err
    out = " ".join(out.split())   # as one line, whatever the terminal's width
    assert "t2: marked verified, counted as unverified: verification.signature: not signed" in out
    manifest = read_json(tmp_path / "dist" / "v1" / "manifest.json")
    signing = manifest["signing"]
    assert {k: v for k, v in signing.items() if k != "statement"} == {
        "algorithm": "ed25519", "key": SIGNING_KEY.fingerprint, "public_key": SIGNING_KEY.public_text, "verified": 1,
        "records": ["dense_caption/test/t1"]}   # the list of verified records, signed: signing.statement
    from streamcue.annotation.signing import canonical

    assert SIGNING_KEY.holds(canonical({k: v for k, v in signing.items() if k != "statement"}), signing["statement"])
    assert f"1 verified record(s) signed with key {SIGNING_KEY.fingerprint}" in out
    card = (tmp_path / "dist" / "v1" / "README.md").read_text()
    assert f"1 verified record(s), each signed with the maintainer's Ed25519 key `{SIGNING_KEY.fingerprint}`" in card
    # published under pseudonyms, signed again: the release's own key check holds
    [loaded] = load("dense_caption", tmp_path / "dist" / "v1", split="test")
    assert loaded.verification["annotators"] == ["annotator-1", "annotator-2"]
    assert loaded.verification["label_studio"] == {"task": 7, "annotations": [31, 32], "at": "2026-11-29T03:00:00Z"}


def test_release_build_without_the_key_counts_nothing_as_verified(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    rec = records_folder(tmp_path / "rec", [signed(caption("t1", AGREED))])
    with pytest.raises(InputError, match=r"task_id=t1, field \$\.verification\.status: .*no signing key to check it "
                                         r"against \(pass --key or set STREAMCUE_SIGNING_KEY"):
        build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d"))
    other = generate(tmp_path / "keys" / "other.pem")
    manifest = build_release(ReleaseConfig(records=rec, version="1.0.0", out=tmp_path / "d2", only_verified=False,
                                           allow_unverified=True, key=tmp_path / "keys" / "other.pem"))
    assert manifest["signing"] is None and manifest["verification_not_held"]["dense_caption"]["t1"].startswith(
        f"verification.signature.key: signed by key '{SIGNING_KEY.fingerprint}', not by {other.fingerprint}")


# --- release verify: a release as a researcher downloads it ------------------------------------------------------

@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A release of one verified (signed) and one unverified record."""
    base = tmp_path_factory.mktemp("signed")
    rec = records_folder(base / "rec", [signed(caption("t1", AGREED)), caption("t2")])
    build_release(ReleaseConfig(records=rec, version="1.0.0", out=base / "dist" / "v1.0.0", allow_unverified=True))
    return base / "dist" / "v1.0.0"


def tampered(release, dst, change):
    """A copy of ``release`` whose dense_caption rows pass through ``change`` (rows -> rows), the Parquet file
    rewritten and its SHA-256 in manifest.json recomputed: what someone who edits a release by hand would do."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    shutil.copytree(release, dst)
    manifest = read_json(dst / "manifest.json")
    rel = manifest["configs"]["dense_caption"]["test"]["path"]
    table = pq.read_table(dst / rel)
    pq.write_table(pa.Table.from_pylist(change(table.to_pylist()), schema=table.schema), dst / rel)
    manifest["files"][rel] = sha256_file(dst / rel)
    write_json(dst / "manifest.json", manifest)
    return dst


def edit_verified(rows):
    rows[0]["captions"][0]["text"] = "Peeling an onion."   # content hash recomputed: the signature still fails
    rows[0]["verification"]["content_sha256"] = content_sha256(rows[0])
    return rows


def hand_written(rows):
    rows[1]["verification"] = dict(rows[0]["verification"], signature=None, content_sha256=content_sha256(rows[1]),
                                   annotators=["annotator-3", "annotator-4"])
    return rows


def test_release_verify_passes_a_release_as_built(release):
    result = verify_release(release, trusted=SIGNING_KEY.fingerprint)
    assert (result.verified, result.key, result.rows["dense_caption"]) == (1, SIGNING_KEY.fingerprint, {"test": 2})
    code, out, err = cli("release", "verify", release, "--key", SIGNING_KEY.public_text)
    assert code == 0, err
    out = " ".join(out.split())
    assert f"1 verified record(s), every signature holds under key {SIGNING_KEY.fingerprint}" in out


@pytest.mark.parametrize("change, message", [
    (edit_verified, r"data/dense_caption/test-[\w-]+\.parquet, record task_id=t1, field verification\.signature: "
                    r"marked verified, but its signature does not hold: does not match the record"),
    (hand_written, r"data/dense_caption/test-[\w-]+\.parquet, record task_id=t2, field verification\.signature: "
                   r"marked verified, but its signature does not hold: not signed"),
], ids=["one record edited", "one verification written by hand"])
def test_release_verify_and_every_reader_refuse_an_edited_release(release, tmp_path, change, message):
    copy = tampered(release, tmp_path / change.__name__, change)   # datasets caches a folder by its name
    code, out, err = cli("release", "verify", copy)
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.search(message, err), err
    with pytest.raises(InputError, match=message):
        load("dense_caption", copy)


def made_unverified(rows):
    """The verified record edited and marked unverified (its signature would no longer be checked)."""
    rows[0]["captions"][0]["text"] = "Peeling an onion."
    rows[0]["verification"] = {"status": "unverified"}
    return rows


def test_a_record_edited_and_made_unverified_after_the_build_is_named(release, tmp_path):
    """A newcomer's probe: edit the verified record and mark it unverified (its file's SHA-256 rewritten): the list of
    verified records the build signed names it; with the manifest's count rewritten too, that list's signature
    fails."""
    copy = tampered(release, tmp_path / "unverified", made_unverified)
    code, _, err = cli("release", "verify", copy, "--key", SIGNING_KEY.fingerprint)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "manifest.json, field signing.records: signed as verified at the build, but not verified now: " \
           "dense_caption/test/t1" in err, err
    manifest = read_json(copy / "manifest.json")
    manifest["signing"]["verified"], manifest["signing"]["records"] = 0, []
    write_json(copy / "manifest.json", manifest)
    code, _, err = cli("release", "verify", copy, "--key", SIGNING_KEY.fingerprint)
    assert code == 2 and "field signing.statement: the list of verified records is not signed" in err, err


def test_release_verify_names_one_changed_byte_and_a_key_that_is_not_the_trusted_one(release, tmp_path):
    copy = tmp_path / "byte"
    shutil.copytree(release, copy)
    card = copy / "README.md"
    data = bytearray(card.read_bytes())
    data[-2] ^= 1
    card.write_bytes(bytes(data))
    code, _, err = cli("release", "verify", copy)
    # both SHA-256s and the manifest's field: which side changed can be told
    stated = json.loads((copy / "manifest.json").read_text())["files"]["README.md"]
    assert code == 2 and (f"README.md: changed since the release was built: its SHA-256 is {sha256_file(card)[:12]}, "
                          f'manifest.json\'s files["README.md"] states {stated[:12]}') in err, err
    other = SigningKey(bytes(32))
    code, _, err = cli("release", "verify", release, "--key", other.fingerprint)
    assert code == 2 and (f"manifest.json, field signing.key: signed with key {SIGNING_KEY.fingerprint}, not with "
                          f"the key you trust ({other.fingerprint})") in err, err
    code, _, err = cli("release", "verify", release, "--key", "my-key")
    assert code == 2 and "--key 'my-key' is not a key fingerprint (16 hex digits)" in err, err
    code, _, err = cli("release", "verify", release.parent / "v9.9.9")   # a mistyped folder, not a Hub dataset
    assert code == 2 and err.strip().endswith("v9.9.9: no such release folder (for a Hub dataset named like it, give "
                                              "its revision: ORG/NAME@vX.Y.Z)"), err
    code, _, err = cli("release", "verify", release / "manifest.json")
    assert code == 2 and "manifest.json: not a release folder, nor a Hub dataset ORG/NAME[@vX.Y.Z]" in err, err


def published(dist, repo):
    """``dist`` committed and tagged v1.0.0 in the git repository ``repo`` by hand (release push would refuse it)."""
    shutil.copytree(dist, repo)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "edited"],
                 ["tag", "-a", "v1.0.0", "-m", "edited"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@localhost",
                            "GIT_COMMITTER_NAME": "x", "GIT_COMMITTER_EMAIL": "x@localhost"})


@pytest.mark.slow
@pytest.mark.hub_server
def test_a_pushed_release_downloaded_from_the_hub_verifies_and_a_tampered_one_does_not(release, tmp_path):
    """Done when (issue 46): built, pushed, downloaded and checked with release verify passes; the same release
    with one record edited, one verification written by hand, or one byte changed fails, naming what. The byte is
    changed in the downloaded copy (the Hub cache): every reader checks what it read, once per file identity."""
    from hub_server import olah_server
    from streamcue.release.push import push

    hub = tmp_path / "hub"
    push(release, "ORG/NAME", git_root=hub)
    with pytest.raises(InputError, match="record task_id=t1, field verification.signature: marked verified"):
        push(tampered(release, tmp_path / "edited", edit_verified), "ORG/EDITED", git_root=hub)   # push checks too
    published(tmp_path / "edited", hub / "datasets" / "ORG" / "EDITED")   # so someone with write access edits
    published(tampered(release, tmp_path / "by-hand", hand_written), hub / "datasets" / "ORG" / "BYHAND")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1",
           "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0", "COLUMNS": "200"}

    def verify(repo):
        return subprocess.run([sys.executable, "-m", "streamcue", "release", "verify", f"{repo}@v1.0.0", "--key",
                               SIGNING_KEY.fingerprint], capture_output=True, text=True, env=env, timeout=300)

    with olah_server(hub, tmp_path, "ORG/NAME") as endpoint:
        env["HF_ENDPOINT"] = endpoint
        done = verify("ORG/NAME")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"every signature holds under key {SIGNING_KEY.fingerprint}" in done.stdout
        for repo, record, why in (("ORG/EDITED", "t1", "does not match the record"),
                                  ("ORG/BYHAND", "t2", "not signed")):
            done = verify(repo)
            assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
            assert re.search(rf"^error: {repo}@v1.0.0/data/dense_caption/.*parquet, record task_id={record}, field "
                             rf"verification\.signature: .*{why}", done.stderr), done.stderr
        blob = next(p for p in (tmp_path / "hf-home").rglob("*.parquet")
                    if "datasets--ORG--NAME" in str(p) and p.parent.name == "dense_caption").resolve()
        data = bytearray(blob.read_bytes())
        data[len(data) // 2] ^= 1
        blob.write_bytes(bytes(data))
        done = verify("ORG/NAME")
        assert done.returncode == 2 and "ORG/NAME@v1.0.0/data/dense_caption/" in done.stderr
        assert "changed since the release was built: its SHA-256 is " in done.stderr, done.stderr
        assert 'manifest.json\'s files["data/dense_caption/' in done.stderr, done.stderr
        script = "from streamcue.loaders import load; load('dense_caption', 'ORG/NAME', revision='v1.0.0')"
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode != 0 and "ORG/NAME@v1.0.0/data/dense_caption/" in done.stderr
        assert "changed since the release was built" in done.stderr.strip().splitlines()[-1]
