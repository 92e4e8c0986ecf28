"""Label Studio as annotators use it: a real Chromium (Debian's ``chromium``), driven by
Playwright, in the real Label Studio page, on real videos served through local-files storage.

Per record kind: two annotators, who signed up through the project's invite link, each open
the project's labeling stream, read the guideline shown before the first task, check that the
video plays and that the timeline holds the record's regions at the record's frames, make the
same change through the page (move and edit an answer interval; correct one second's caption;
move a mistake), and submit. ``annotate pull`` must then return exactly that change, verified
by two distinct annotators, and nothing else.

Screenshots of each task page go to the test's temporary folder; with
``STREAMCUE_SCREENSHOTS=DIR`` one small PNG per kind is also written to DIR (``docs/`` holds
the README's copies). ``./dev.sh test`` installs Chromium (``apt-get install chromium``) when it
runs as root; without it these tests are skipped with the reason.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import VALID, pulled_verification
from label_studio_server import executable

CHROMIUM = Path(os.environ.get("STREAMCUE_CHROMIUM", "/usr/bin/chromium"))


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install -e '.[dev]')"
    if not CHROMIUM.is_file():
        return (f"no Chromium at {CHROMIUM}: ./dev.sh test installs Debian's chromium when run as root "
                "(or apt-get install -y chromium; STREAMCUE_CHROMIUM may point to another build)")
    if executable() is None:
        return "no Label Studio server: ./dev.sh test installs it in .venv-label-studio (or set STREAMCUE_LABEL_STUDIO)"
    return None


pytest.importorskip("label_studio_sdk")
httpx = pytest.importorskip("httpx")
pytestmark = [pytest.mark.browser, pytest.mark.label_studio, pytest.mark.slow, pytest.mark.usefixtures("connected"),
              pytest.mark.skipif(_missing() is not None, reason=_missing() or "")]

from streamcue.annotation import client as ls  # noqa: E402
from streamcue.annotation.convert import DISPUTED, prediction  # noqa: E402
from streamcue.annotation.verify import content_sha256  # noqa: E402
from streamcue.annotation.roundtrip import pull, push, status_report  # noqa: E402
from streamcue.io import read_jsonl, write_jsonl  # noqa: E402

FPS = 30.0
ANNOTATORS = ("anna@streamcue.test", "ben@streamcue.test")
REVIEWER = "rita@streamcue.test"
PASSWORD = "annotator-password-7"
TIMINGS: dict[str, list[float]] = {}


@pytest.fixture(scope="module")
def videos(server):
    """A real 30 s H.264 clip (the records' video v1) under the server's local-files root, in a folder of its own
    (the session's other modules serve placeholder files under ``videos/``)."""
    from streamcue.video import ffmpeg_exe

    root = server.document_root / "played-videos"
    (root / "recorded").mkdir(parents=True)
    subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30",
                    "-t", "30", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "ultrafast",
                    str(root / "recorded" / "v1.mp4")], check=True)
    return root


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield chromium
        chromium.close()


#: Each person's browser (a context: cookies, cache) once signed up through the page: later pages of the module open
#: in it, as a browser that stayed logged in does, with the page's scripts cached rather than fetched again.
BROWSERS: dict[str, object] = {}
VIEWPORT = {"width": 1400, "height": 1100}


@pytest.fixture(scope="module")
def annotators(server, browser):
    """Two annotators and a reviewer who signed up through the organisation's invite link, as people do."""
    headers = {"Authorization": f"Token {server.token}"}
    invite = httpx.get(f"{server.url}/api/invite", headers=headers).json()["invite_url"]
    for email in (*ANNOTATORS, REVIEWER):
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        page.goto(server.url + invite)
        page.fill("#email", email)
        page.fill("#password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/user/signup" not in url)
        page.close()
        BROWSERS[email] = context
    users = httpx.get(f"{server.url}/api/users/", headers=headers).json()
    yield {u["email"]: u["id"] for u in users if u["email"] in (*ANNOTATORS, REVIEWER)}
    for context in BROWSERS.values():
        context.close()
    BROWSERS.clear()


@contextmanager
def logged_in(browser, server, email):
    """A new page in ``email``'s browser, logged in since they signed up."""
    page = BROWSERS[email].new_page()
    page.set_default_timeout(30_000)
    try:
        yield page
    finally:
        page.close()


def open_next_task(page, server, project_id, guideline_title, version):
    """The project's labeling stream, as the annotator's "Label All Tasks" button opens it: the
    guideline comes first, then the task."""
    page.goto(f"{server.url}/projects/{project_id}/data?labeling=1")
    modal = page.locator(".lsf-modal-ls__content").filter(has_text="Labeling Instructions")
    assert modal.locator("h1").inner_text() == guideline_title
    assert f"streamcue guideline {version}" in modal.inner_text()
    modal.locator("button[aria-label='Close modal']").click()
    modal.wait_for(state="hidden")
    page.wait_for_selector("video", state="attached")
    page.locator(".lsf-outliner-item").first.wait_for()


def check_video_plays(page):
    video = page.locator("video")
    page.wait_for_function("() => document.querySelector('video').readyState >= 2")
    assert abs(video.evaluate("v => v.duration") - 30.0) < 0.1
    page.locator("button[aria-label=Play]").click()
    page.wait_for_function("() => document.querySelector('video').currentTime > 0.5")
    page.locator("button[aria-label=Pause], button[aria-label=Play]").first.click()
    page.locator("button[aria-label='Hop backward'], button[aria-label='Step backward']").first.click()


def select_region(page, rid):
    """Select a region by its id through the Regions list (the detail panel shows the id)."""
    items, head = page.locator(".lsf-outliner-item"), page.locator(".lsf-detailed-region").first
    for i in range(items.count()):
        item = items.nth(i)
        # a click on the region selected already would unselect it: only an unselected one is clicked
        if not item.evaluate("e => Boolean(e.closest('[class*=treenode-selected]'))"):
            item.click()
        if _visible(head) and rid in [s.strip() for s in head.locator("span").all_inner_texts()]:
            return head
    raise AssertionError(f"region {rid} is not in the Regions list")


def _visible(locator, timeout=3000):
    try:
        locator.wait_for(timeout=timeout)
    except Exception:
        return False
    return True


def region_frames(page, rid):
    select_region(page, rid)
    inputs = page.locator(".lsf-region-editor input[type=number]")
    return int(inputs.nth(0).input_value()), int(inputs.nth(1).input_value())


def check_timeline(page, rows):
    """Every region of the record, and only those, at the record's frames."""
    expected = {r["id"]: tuple(r["value"]["ranges"][0].values()) for r in rows if r["type"] == "timelinelabels"}
    assert page.locator(".lsf-outliner-item").count() == len(expected)
    assert {rid: region_frames(page, rid) for rid in expected} == expected


def move_region(page, rid, start, end):
    select_region(page, rid)
    first, last = page.locator(".lsf-region-editor input[type=number]").nth(0), \
        page.locator(".lsf-region-editor input[type=number]").nth(1)
    # an earlier start first, a later end first: the page keeps start <= end at every step
    steps = ((first, start), (last, end)) if start < int(first.input_value()) else ((last, end), (first, start))
    for box, value in steps:
        box.fill(str(value))
        box.press("Enter")
    assert (int(first.input_value()), int(last.input_value())) == (start, end)


def edit_region_text(page, rid, control, text):
    select_region(page, rid)
    box = page.locator("[data-testid=textarea-region]").filter(has=page.locator(f"[name^='{control}:']"))
    box.locator("[data-testid=htx-textbox-edit-button]").click()
    box.locator("[data-testid=htx-textbox-input]").fill(text)
    box.locator("[data-testid=htx-textbox-save]").click()
    box.get_by_text(text).wait_for()


def submit(page):
    with page.expect_response(lambda r: "/annotations" in r.url and r.request.method == "POST") as response:
        page.locator("button[aria-label='Submit current annotation']").click()
    assert response.value.ok, response.value.text()


def screenshot(page, tmp_path, kind, email):
    path = tmp_path / f"{kind}-{email.split('@')[0]}.png"
    page.screenshot(path=str(path))
    docs = os.environ.get("STREAMCUE_SCREENSHOTS")
    if docs:  # a small copy for the README: 1000 px wide, 64 colours
        from PIL import Image

        image = Image.open(path).convert("RGB")
        image = image.resize((1000, round(image.height * 1000 / image.width)), Image.LANCZOS)
        image.quantize(64).save(Path(docs) / f"annotate-{kind}.png", optimize=True)


def annotate_in_browser(browser, server, kind, record, videos, tmp_path, annotators, change):
    """Push one record, let both annotators work through the page, pull: (pulled record, summary)."""
    folder = tmp_path / "records"
    folder.mkdir()
    write_jsonl(folder / "videos.jsonl", [VALID["video"]])
    write_jsonl(folder / f"{kind}.jsonl", [record])
    name = f"{kind} in the browser"
    pushed = push(kind, folder / f"{kind}.jsonl", name, videos_root=videos, document_root=server.document_root)
    title = ls.guideline(kind)[1].split("</h1>")[0].removeprefix("<h1>")
    for i, email in enumerate(annotators):
        start = time.perf_counter()
        with logged_in(browser, server, email) as page:
            try:
                open_next_task(page, server, pushed.project_id, title, pushed.guideline)
                if i == 0:
                    check_video_plays(page)
                check_timeline(page, prediction(record, kind, FPS))
                change(page)
                screenshot(page, tmp_path, kind, email)
                submit(page)
            except Exception:
                page.screenshot(path=str(tmp_path / f"failed-{kind}-{i}.png"))  # what the annotator saw
                raise
        TIMINGS.setdefault(kind, []).append(time.perf_counter() - start)
    summary = pull(name, tmp_path / "pulled.jsonl")
    [pulled] = read_jsonl(tmp_path / "pulled.jsonl")
    _, people = status_report(name)
    assert [(p["annotator"], p["tasks"]) for p in people] == [(email, 1) for email in sorted(annotators)]
    assert all(p["median_s"] and p["median_s"] > 0 for p in people)  # lead times the page measured
    leads = ", ".join(f"{p['median_s']:.1f}" for p in people)
    sessions = ", ".join(f"{t:.1f}" for t in TIMINGS[kind])
    print(f"{kind}: seconds per task in the page (Label Studio lead time) {leads}; whole browser session {sessions}")
    return pulled, summary


def verified(kind):
    return {"status": "verified", "annotators": list(ANNOTATORS), "checks": 2, "guideline": ls.guideline(kind)[0],
            "decided_by": "agreement"}  # how it was decided (issue 24: adjudication)


def test_interval_qa_answer_moved_and_edited_in_the_page(browser, server, videos, annotators, tmp_path):
    record = copy.deepcopy(VALID["interval_qa"])

    def change(page):
        move_region(page, "a1", 301, 390)  # 10.0-12.5 s -> 10.0-13.0 s
        edit_region_text(page, "a1", "answer_text", "The red cup is by the sink.")

    pulled, summary = annotate_in_browser(browser, server, "interval_qa", record, videos, tmp_path, ANNOTATORS, change)
    expected = copy.deepcopy(record)
    expected["answers"][1] = {"start_s": 10.0, "end_s": 13.0, "optimal_s": 10.5, "text": "The red cup is by the sink."}
    expected["verification"] = dict(verified("interval_qa"), content_sha256=content_sha256(expected))
    assert dict(pulled, verification=pulled_verification(pulled)) == expected
    assert summary.changes == {"q1": ["interval a1 moved", "answer a1 edited"]}


def test_dense_caption_corrected_in_the_page(browser, server, videos, annotators, tmp_path):
    record = copy.deepcopy(VALID["dense_caption"])
    record["captions"][1].pop("corrected")

    def change(page):
        # every caption readable at a glance, by its second counted from 0 as in the record, before any click
        listed = page.locator(".lsf-richtext, .htx-richtext").filter(has_text="0 s: ").first
        box, screen = listed.bounding_box(), page.viewport_size
        assert box and 0 <= box["y"] and box["y"] + box["height"] <= screen["height"]   # in view, no scrolling
        assert [line.strip() for line in listed.inner_text().splitlines() if line.strip()] == \
            [f"{c['t_s']:g} s: {c['text']}" for c in record["captions"]]
        screenshot(page, tmp_path, "dense_caption-opened", "annotator")  # as the task opens
        edit_region_text(page, "c1", "caption", "Slicing the onion into rings.")

    pulled, summary = annotate_in_browser(browser, server, "dense_caption", record, videos, tmp_path, ANNOTATORS,
                                          change)
    expected = copy.deepcopy(record)
    expected["captions"][1] = {"t_s": 1, "text": "Slicing the onion into rings.", "corrected": True}
    expected["verification"] = dict(verified("dense_caption"), content_sha256=content_sha256(expected))
    assert dict(pulled, verification=pulled_verification(pulled)) == expected
    assert summary.changes == {"t1": ["caption 1s corrected"]}


def test_guidance_mistake_moved_in_the_page(browser, server, videos, annotators, tmp_path):
    record = copy.deepcopy(VALID["guidance"])

    def change(page):
        move_region(page, "e1", 211, 211)  # the mistake shows at 7 s, not at the step's end (10 s)

    pulled, summary = annotate_in_browser(browser, server, "guidance", record, videos, tmp_path, ANNOTATORS, change)
    expected = copy.deepcopy(record)
    expected["events"][1] = {**record["events"][1], "t_s": 7.0, "time_source": "annotator"}
    expected["verification"] = dict(verified("guidance"), content_sha256=content_sha256(expected))
    assert dict(pulled, verification=pulled_verification(pulled)) == expected
    assert summary.changes == {"v1": ["mistake e1 moved to 7s"]}


def relabel(page, rid, label):
    select_region(page, rid)
    page.locator(".lsf-label").filter(has=page.locator(".lsf-label__text", has_text=label)).first.click()
    head = page.locator(".lsf-detailed-region").first
    head.locator(".lsf-labels-list", has_text=label).wait_for()


def test_guidance_events_relabelled_in_the_page(browser, server, videos, annotators, tmp_path):
    """success <-> mistake through the label buttons: a success that becomes a mistake has no category
    (the page cannot give one), so that record alone is reported and kept as pushed; the other is written."""
    to_mistake = copy.deepcopy(VALID["guidance"])
    to_mistake["events"][1] = {"t_s": 6.0, "type": "success", "text": "The water boils.", "plan_index": 0,
                               "step_ids": [1], "mistake_category": None, "time_source": "annotation"}
    to_success = dict(copy.deepcopy(VALID["guidance"]), video_id="v2", activity="Tea")
    write_jsonl(tmp_path / "videos.jsonl", [VALID["video"], dict(VALID["video"], video_id="v2")])
    write_jsonl(tmp_path / "guidance.jsonl", [to_mistake, to_success])
    name = "guidance relabelled in the browser"
    pushed = push("guidance", tmp_path / "guidance.jsonl", name, videos_root=videos,
                  document_root=server.document_root, checks=1)
    title = ls.guideline("guidance")[1].split("</h1>")[0].removeprefix("<h1>")
    with logged_in(browser, server, ANNOTATORS[0]) as page:
        try:
            open_next_task(page, server, pushed.project_id, title, pushed.guideline)
            page.get_by_text("Activity: Coffee").wait_for()
            relabel(page, "e1", "mistake")
            submit(page)
            page.get_by_text("Activity: Tea").wait_for()  # the stream moves on to the next task
            page.locator(".lsf-outliner-item").first.wait_for()
            relabel(page, "e1", "success")
            submit(page)
        except Exception:
            page.screenshot(path=str(tmp_path / "failed-relabel.png"))
            raise
    summary = pull(name, tmp_path / "pulled.jsonl", required=1)
    pulled = {r["video_id"]: r for r in read_jsonl(tmp_path / "pulled.jsonl")}
    assert summary.states == {"invalid": 1, "verified": 1}
    assert "mistake_category" in summary.invalid["v1"]
    assert {k: v for k, v in pulled["v1"].items() if k != "verification"} == \
        {k: v for k, v in to_mistake.items() if k != "verification"}
    assert pulled["v1"]["verification"]["status"] == "unverified"
    assert pulled["v1"]["verification"]["notes"][0].startswith("invalid: $.events[1].mistake_category")
    expected = copy.deepcopy(to_success)
    expected["events"][1].update(type="success", mistake_category=None)
    expected["verification"] = {"status": "verified", "annotators": [ANNOTATORS[0]], "checks": 1,
                                "guideline": "guidance.v1", "decided_by": "agreement",
                                "content_sha256": content_sha256(expected)}
    assert dict(pulled["v2"], verification=pulled_verification(pulled["v2"])) == expected
    assert summary.changes == {"v2": ["mistake e1 relabelled success"]}


REVIEW_EXAMPLE = "review-example: run by tests/annotation/test_annotation_browser.py"


def documented_review() -> str:
    """The block of docs/annotation.md under the ``review-example`` marker, as written."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "annotation.md").read_text(encoding="utf-8")
    return text.split(f"<!-- {REVIEW_EXAMPLE} -->", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]


def region_text(page, rid, control):
    """The per-region text panel of region ``rid`` as the page shows it once the region is selected."""
    select_region(page, rid)
    rows = page.locator("[data-testid=textarea-region]").filter(has=page.locator(f"[name^='{control}:']"))
    return "\n".join(rows.all_inner_texts())


def region_meta(page, rid):
    """Region ``rid``'s meta as the page shows it once the region is selected (where the review mark is)."""
    select_region(page, rid)
    meta = page.locator("[class*=detailed-region__meta-text]")
    meta.first.wait_for()
    return "\n".join(meta.all_inner_texts())


def test_a_reviewer_starts_from_the_annotators_regions_with_the_disagreements_marked(browser, server, videos,
                                                                                        annotators, tmp_path):
    """The documented reviewer path: anna moves mistake e1 to 7 s, ben keeps it at 10 s and adds a mistake at
    5 s; ``annotate review`` (the docs' command, as written) gives the task a prediction holding anna's regions
    and ben's added one, the two disputed regions marked in their text and counted in the task's data; the
    reviewer duplicates that prediction, finds every region at its frames and the marks on exactly the disputed
    ones, moves e1 to 6 s and submits without touching the marks; ``pull --reviewer`` returns e1 at 6 s, ben's
    mistake, no mark, ``decided_by: reviewer``."""
    record = copy.deepcopy(VALID["guidance"])
    write_jsonl(tmp_path / "videos.jsonl", [VALID["video"]])
    write_jsonl(tmp_path / "guidance.jsonl", [record])
    name = "cc4d check"   # the project of the docs' example
    pushed = push("guidance", tmp_path / "guidance.jsonl", name, videos_root=videos,
                  document_root=server.document_root)
    [task] = ls.export_tasks(ls.connect(), pushed.project_id)
    moved = prediction(record, "guidance", FPS)
    next(r for r in moved if r["id"] == "e1" and r["from_name"] == "events")["value"]["ranges"] = \
        [{"start": 211, "end": 211}]
    added = [{"id": "Xb7q2", "from_name": "events", "to_name": "video", "type": "timelinelabels",
              "value": {"ranges": [{"start": 151, "end": 151}], "timelinelabels": ["mistake"]}},
             {"id": "Xb7q2", "from_name": "event_text", "to_name": "video", "type": "textarea",
              "value": {"text": ["The kettle is left on."]}}]
    for email, result in zip(ANNOTATORS, (moved, prediction(record, "guidance", FPS) + added)):
        httpx.post(f"{server.url}/api/tasks/{task['id']}/annotations/",
                   headers={"Authorization": f"Token {server.token}"},
                   json={"result": result, "completed_by": annotators[email]}).raise_for_status()
    disputed = pull(name, tmp_path / "disputed.jsonl")
    assert "event e1 (mistake at 10s): t_s 7s (anna@streamcue.test) vs 10s (ben@streamcue.test)" \
        in disputed.disagreements["v1"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "STREAMCUE_NO_PROGRESS": "1"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", documented_review()], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "1 disputed task(s) in project 'cc4d check' now start from the annotators' regions (2 difference(s) " \
        "marked)" in " ".join(done.stdout.split())   # the console wraps long lines
    [task] = ls.export_tasks(ls.connect(), pushed.project_id)
    assert task["data"]["review_disagreements"] == 2 and "by ben@streamcue.test only" in task["data"]["review_note"]
    with logged_in(browser, server, REVIEWER) as page:
        try:
            page.goto(f"{server.url}/projects/{pushed.project_id}/data?task={task['id']}")
            page.locator(".lsf-annotation-button").filter(has_text="anna").first.click()
            # the free edition lets any account edit anyone's annotation (docs/annotation.md says so)
            page.locator("button").filter(has_text="Update").first.wait_for()
            tab = page.locator(".lsf-annotation-button").filter(has_text="review").first
            tab.click()
            tab.locator(".lsf-annotation-button__trigger").click()
            page.get_by_text("Duplicate Annotation").click()
            page.locator(".lsf-outliner-item").first.wait_for()
            check_timeline(page, moved + added)   # anna's regions (e1 at her 7 s) and ben's added mistake
            for rid in ("e0", "e2"):
                assert DISPUTED not in region_text(page, rid, "event_text")
            assert DISPUTED not in region_text(page, "Xb7q2", "event_text")   # the text is the record's
            assert f"{DISPUTED}a mistake added at 5s ('The kettle is left on.') by ben@streamcue.test only" \
                in region_meta(page, "Xb7q2")   # the mark: the region's meta, shown with it
            assert f"{DISPUTED}event e1 (mistake at 10s): t_s 7s (anna@streamcue.test) vs 10s (ben@streamcue.test)" \
                in region_meta(page, "e1")
            move_region(page, "e1", 181, 181)   # the reviewer sees the mistake at 6 s
            screenshot(page, tmp_path, "review", REVIEWER)
            submit(page)
        except Exception:
            page.screenshot(path=str(tmp_path / "failed-review.png"))
            raise
    summary = pull(name, tmp_path / "pulled.jsonl", reviewers=(REVIEWER,))
    [pulled] = read_jsonl(tmp_path / "pulled.jsonl")
    assert summary.decided_by == {"reviewer": 1}
    assert pulled["events"] == [record["events"][0],
                                {"t_s": 5.0, "type": "mistake", "text": "The kettle is left on.", "plan_index": None,
                                 "step_ids": [], "mistake_category": "other", "time_source": "annotator"},
                                {**record["events"][1], "t_s": 6.0, "time_source": "annotator"}, record["events"][2]]
    assert pulled["verification"]["decided_by"] == "reviewer" and pulled["verification"]["reviewer"] == REVIEWER
