"""One redaction of known secrets (streamcue/redact.py) for every string that leaves the process.

Generated over every writer (``write_json``, ``write_jsonl``, ``atomic_write``, a staged folder filled with
``Path.write_text``, both consoles, an error's message), then the probe's cases through the CLI: an endpoint
``?api_key=`` and a real local server that echoes the Authorization header in its answer leave no key in
results.json, replay_report.json, samples.jsonl, predictions.jsonl or report.html.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SHARED_DATA

KEY = "sk-live-KEYVALUE-0123456789"
PASSWORD = "PASSWORD-hunter2"
TOKEN = "TOKEN-abcdef123456"

#: a string holding every kind of secret the redaction knows, and what each becomes
LEAKY = (f"key {KEY}; url http://user:{PASSWORD}@example.org/v1?api_key={TOKEN}&model=m; "
         f"page https://h/x?a=1&amp;access_token={TOKEN}; header Authorization: Bearer {TOKEN}")
SECRETS = (KEY, PASSWORD, TOKEN)


@pytest.fixture
def key_in_env(monkeypatch):
    monkeypatch.setenv("STREAMCUE_LLM_API_KEY", KEY)


def _write_json(path):
    from streamcue.io import write_json

    write_json(path, {"endpoint": LEAKY, "nested": [{"raw": LEAKY}]})


def _write_jsonl(path):
    from streamcue.io import write_jsonl

    write_jsonl(path, [{"raw_answer": LEAKY}, {"raw_answer": json.dumps({"echo": LEAKY})}])


def _atomic_write_in_pieces(path):
    from streamcue.io import atomic_write

    with atomic_write(path) as fh:  # a secret written in pieces is still seen whole
        for i in range(0, len(LEAKY), 5):
            fh.write(LEAKY[i:i + 5])
        fh.write("\n<p>" + LEAKY.replace("&", "&amp;") + "</p>")


def _staged_card(path):
    from streamcue.staging import staged_folder

    with staged_folder(path) as tmp:
        (tmp / "README.md").write_text(f"# card\n\n{LEAKY}\n")


WRITERS = {"write_json": _write_json, "write_jsonl": _write_jsonl, "atomic_write": _atomic_write_in_pieces,
           "staged_folder": _staged_card}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_no_writer_writes_a_secret(writer, key_in_env, tmp_path):
    target = tmp_path / "out"
    WRITERS[writer](target)
    files = [target] if target.is_file() else sorted(p for p in target.rglob("*") if p.is_file())
    assert files
    for path in files:
        text = path.read_text()
        assert not [s for s in SECRETS if s in text], (path, text)
        assert "***" in text and "example.org/v1" in text  # redacted, not dropped


@pytest.mark.parametrize("stream", ["out", "err"])
def test_the_consoles_print_no_secret(stream, key_in_env, capsys):
    from streamcue import console

    getattr(console, stream).print(LEAKY)
    printed = getattr(capsys.readouterr(), stream)
    assert "***" in printed and not [s for s in SECRETS if s in printed], printed


def test_an_error_message_shows_no_secret(key_in_env):
    from streamcue.errors import InputError, ServiceError

    for error in (ServiceError(f"cannot reach {LEAKY}"), InputError(LEAKY, file="x.json", field="endpoint")):
        assert not [s for s in SECRETS if s in str(error)], str(error)


def test_the_redaction_rules():
    from streamcue.redact import redact, register, shareable, url_without_credentials

    assert redact("http://u:p@h:8080/v1?api_key=S&model=m") == "http://***@h:8080/v1?api_key=***&model=m"
    assert redact('{"Authorization": "Bearer abcdefgh12"}') == '{"Authorization": "***"}'
    assert redact("a key=value and a token count stay") == "a key=value and a token count stay"
    register("registered-secret-1")
    assert redact('echo "registered-secret-1"') == 'echo "***"'
    shareable("http://h/user/signup/?token=invite123")
    assert redact("link: http://h/user/signup/?token=invite123, other ?token=x") == (
        "link: http://h/user/signup/?token=invite123, other ?token=***")
    assert url_without_credentials("http://user:pw@h:8080/x") == "http://h:8080/x"


def test_the_invite_link_carries_no_credentials():
    """``annotate setup --url http://user:PASSWORD@...``: the link for other people is made by
    ``url_without_credentials`` (annotation/setup.py), whatever the console does."""
    import inspect

    from streamcue.annotation import setup

    assert "url_without_credentials(url) + invite" in inspect.getsource(setup.setup)


# ---------------------------------------------------------------- the probe's cases through the CLI

def cli(*args, env=None, cache):
    base = {"PATH": "/usr/bin:/bin", "COLUMNS": "200", "STREAMCUE_NO_PROGRESS": "1", "STREAMCUE_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "streamcue", *map(str, args)], capture_output=True, text=True,
                          env={**base, **(env or {})}, timeout=300)


@pytest.fixture(scope="module")
def ovo(tmp_path_factory):
    fixture = SHARED_DATA / "fixtures" / "ovo_bench" / "ovo_bench_new.one_per_task.json"
    if not fixture.is_file():
        pytest.skip("needs ../shared/data/fixtures")
    root = tmp_path_factory.mktemp("ovo")
    done = cli("build", "ovo-bench", "--annotations", fixture, "--out", root / "ovo", cache=root / "cache")
    assert done.returncode == 0, done.stderr
    return root / "ovo"


def _route(path):
    head, query, tail = path.partition(f"?api_key={TOKEN}")
    return head + tail if query else path


def echoing_server():
    """A real local OpenAI-compatible server whose answers echo the request's Authorization header, and which
    takes the key in the query too (the ``openai`` client puts a base URL's query before the route:
    ``/v1/?api_key=KEYchat/completions``)."""
    from streamcue.testing.stub_llm import StubLLMServer, request_schema

    class Echoing(StubLLMServer):
        heard = ""

        def _handler(self):
            base, stub = super()._handler(), self

            class Handler(base):
                def do_POST(self):  # noqa: N802
                    stub.heard = self.headers.get("Authorization", "")
                    self.path = _route(self.path)
                    super().do_POST()

                def do_GET(self):  # noqa: N802
                    self.path = _route(self.path)
                    super().do_GET()

            return Handler

    def answer(body):
        text = f"Answer: A (you sent Authorization: {server.heard})"
        schema = request_schema(body)
        if schema and "answer" in schema.get("properties", {}):
            return json.dumps({"answer": f"yes {server.heard}"})
        return json.dumps({"text": text}) if schema else text

    server = Echoing(answer, api_key=KEY, model="echo-vl")
    return server


def test_run_writes_no_key_from_an_endpoint_query_or_an_echoing_server(ovo, tmp_path):
    with echoing_server() as server:
        out = tmp_path / "run"
        done = cli("run", "ovo-bench", ovo, "--out", out, "--llm-base-url", f"{server.base_url}?api_key={TOKEN}",
                   "--llm-model", "echo-vl", "--no-video", env={"STREAMCUE_LLM_API_KEY": KEY}, cache=tmp_path / "c")
        heard = server.heard
    assert KEY in heard  # the server did see the key, and echoed it
    written = {p.relative_to(out): p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()}
    for name in ("results.json", "samples.jsonl", "report.html", "predictions.jsonl", "replay_report.json"):
        assert any(path.name == name for path in written), (name, sorted(written), done.stderr)
    leaks = {str(path): [s for s in (KEY, TOKEN) if s in text] for path, text in written.items()}
    assert not any(leaks.values()), leaks
    assert not [s for s in (KEY, TOKEN) if s in done.stdout + done.stderr]
    assert "***" in (out / "samples.jsonl").read_text()


def test_setup_refuses_an_accounts_file_that_exists_or_is_a_symlink(tmp_path):
    """Refused before Label Studio is even asked (the URL below has no server): no account is made."""
    kept = tmp_path / "accounts.tsv"
    kept.write_text("ann@example.org\tannotator\tshown-once\n")
    other = tmp_path / "other.txt"
    other.write_text("not yours\n")
    link = tmp_path / "link.tsv"
    link.symlink_to(other)
    env = {"LABEL_STUDIO_PASSWORD": PASSWORD}
    for accounts, why in ((kept, "exists"), (link, "is a symlink")):
        done = cli("annotate", "setup", "--url", f"http://user:{PASSWORD}@127.0.0.1:9", "--admin", "a@example.org",
                   "--annotator", "b@example.org", "--accounts", accounts, env=env, cache=tmp_path / "c")
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and why in done.stderr, done.stderr
        assert PASSWORD not in done.stderr
    assert kept.read_text() == "ann@example.org\tannotator\tshown-once\n" and other.read_text() == "not yours\n"


def test_write_accounts_never_replaces_a_file(tmp_path):
    from streamcue.annotation.setup import Account, write_accounts
    from streamcue.errors import ConfigError

    target = tmp_path / "accounts.tsv"
    write_accounts(target, [Account("a@example.org", "annotator", "pw1")])
    assert target.read_text() == "a@example.org\tannotator\tpw1\n" and oct(target.stat().st_mode & 0o777) == "0o600"
    with pytest.raises(ConfigError, match="appeared"):
        write_accounts(target, [Account("b@example.org", "annotator", "pw2")])
    assert target.read_text() == "a@example.org\tannotator\tpw1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["accounts.tsv"]
    os.environ.get("HOME")  # nothing else written beside it


def test_docs_name_the_redaction():
    text = (Path(__file__).resolve().parents[2] / "docs" / "errors.md").read_text()
    assert "streamcue/redact.py" in text


@pytest.mark.parametrize("text", ["Describe the scene when a woman said 'but let's look at a really basic version.'",
                                  "He was the bearer of good news.", "Basic knowledge, basic training."])
def test_plain_words_after_basic_or_bearer_are_text_not_credentials(text):
    """A record's own words pass unchanged (a StreamingBench question lost 'version.' to the Basic pattern)."""
    from streamcue.redact import redact

    assert redact(text) == text


ODD_KEY = "sk-test-1234567890/abc+def=="


@pytest.mark.parametrize("spelling", ["plain", "upper", "url", "url-plus", "base64", "base64-url", "json"])
def test_a_key_echoed_encoded_or_in_another_case_is_redacted(spelling, monkeypatch, tmp_path):
    """The probe's echoing server (issue #35) sent the key back URL-encoded and in Base64: predictions.jsonl and
    samples.jsonl held it. Every spelling of a known key is ``***`` in whatever file is written."""
    import base64
    import urllib.parse

    from streamcue.io import write_jsonl

    monkeypatch.setenv("OPENAI_API_KEY", ODD_KEY)
    echoed = {"plain": ODD_KEY, "upper": ODD_KEY.upper(), "url": urllib.parse.quote(ODD_KEY, safe=""),
              "url-plus": urllib.parse.quote_plus(ODD_KEY), "base64": base64.b64encode(ODD_KEY.encode()).decode(),
              "base64-url": base64.urlsafe_b64encode(ODD_KEY.encode()).decode(),
              "json": json.dumps(ODD_KEY)[1:-1]}[spelling]
    write_jsonl(tmp_path / "predictions.jsonl", [{"raw_answer": f"A. (you sent {echoed})"}])
    text = (tmp_path / "predictions.jsonl").read_text()
    assert echoed not in text and echoed.rstrip("=") not in text and "you sent ***" in text, text


@pytest.mark.parametrize("leaky, kept", [
    ("http://h/v1?x-api-key=sk-test-1234567890abcdef&model=m", "http://h/v1?x-api-key=***&model=m"),
    ("http://h/v1?api_token=abcdefgh1", "http://h/v1?api_token=***"),
    ("http://h/v1?subscription-key=abcdefgh1", "http://h/v1?subscription-key=***"),
    ("http://h/v1?private_token=abcdefgh1", "http://h/v1?private_token=***"),
    ("http://h/v1?access-token=abcdefgh1", "http://h/v1?access-token=***"),
    ("http://h/v1;jsessionid=abcdefgh1", "http://h/v1;jsessionid=***"),
    ("you sent x-api-key: abcdefgh1", "you sent x-api-key: ***"), ('{"Api-Key": "abcdefgh1"}', '{"Api-Key": "***"}'),
    ("the key sk-test-1234567890abcdef, echoed", "the key ***, echoed"),
    ("token hf_abcdefghijklmnopqrstuvwxyz123456 echoed", "token *** echoed"),
    ("a task-list, a risk-free desk-lamp, sk-8", "a task-list, a risk-free desk-lamp, sk-8"),
])
def test_a_key_only_in_the_url_or_a_header_is_redacted_by_its_name_or_shape(leaky, kept):
    """Keys the environment does not know (the probe's re-run, issue #35): in a query under another common name,
    in an X-Api-Key header a server echoes, or shaped like an OpenAI or Hugging Face key."""
    from streamcue.redact import redact

    assert redact(leaky) == kept


def test_a_url_fragment_is_masked_in_results_and_the_page(toybench, tmp_path, monkeypatch):
    """issue 46: ``--llm-base-url .../v1#SECRET`` put the fragment into results.json's ``command`` and the page.
    The recorded command line masks every URL's fragment, as a secret query value is (a server never sees a
    fragment); a fragment's ``#access_token=`` is masked wherever it is written, like a query's."""
    from conftest import cli as in_process
    from toybench import answer_right

    from streamcue.redact import command_line, redact
    from streamcue.testing.stub_llm import StubLLMServer

    assert command_line(["streamcue", "run", "--llm-base-url", "http://h:1/v1#s3cret-frag"]) == \
        "streamcue run --llm-base-url 'http://h:1/v1#***'"
    assert redact("http://h/cb#access_token=abcdef123&state=1") == "http://h/cb#access_token=***&state=1"
    assert redact("see https://en.wikipedia.org/wiki/Onion#Uses") == "see https://en.wikipedia.org/wiki/Onion#Uses"
    source = toybench / "dataset_builders" / "toybench.json"
    assert in_process("build", "toybench", "--questions", source, "--out", tmp_path / "built")[0] == 0
    with StubLLMServer(answer_right) as server:
        args = ["run", "toybench", tmp_path / "built", "--out", tmp_path / "r", "--no-video",
                "--llm-base-url", f"{server.base_url}#s3cret-frag", "--llm-model", "m"]
        monkeypatch.setattr(sys, "argv", ["streamcue", *map(str, args)])  # what results.json records
        code, _, err = in_process(*args)
    assert code == 0, err
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert "#***" in results["command"]
    written = {p.name: p.read_text(errors="replace") for p in (tmp_path / "r").rglob("*") if p.is_file()}
    assert not [name for name, text in written.items() if "s3cret-frag" in text]
