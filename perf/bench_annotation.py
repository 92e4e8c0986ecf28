"""Label Studio figures: push and pull times for 1,000 tasks against a real local server.

    python perf/bench_annotation.py [--tasks 1000] [--kind interval_qa|guidance]

Starts Label Studio from ``.venv-label-studio`` (``./dev.sh test`` installs it) on
127.0.0.1, pushes real builder output (Ego4D template questions, or CaptainCook4D guidance,
repeated under new ids to reach the count), has two annotators submit the prediction
unchanged on every task through the API, and pulls (all records verified).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("STREAMCUE_NO_PROGRESS", "1")

import httpx  # noqa: E402
from label_studio_server import label_studio  # noqa: E402

from streamcue.annotation import client as ls  # noqa: E402
from streamcue.annotation.convert import prediction  # noqa: E402
from streamcue.annotation.roundtrip import pull, push  # noqa: E402
from streamcue.dataset_builders import BuildReport, captaincook4d, ego4d  # noqa: E402
from streamcue.dataset_builders.output import write_outputs  # noqa: E402
from streamcue.io import read_jsonl, write_jsonl  # noqa: E402
from streamcue.paths import default_captaincook4d, default_goalstep  # noqa: E402
from streamcue.schemas import ID_FIELDS  # noqa: E402


def records(kind: str, n: int, folder: Path) -> Path:
    if kind == "guidance":
        items = captaincook4d.build(captaincook4d.Config(annotations=default_captaincook4d()))
    else:
        items = ego4d.build(ego4d.Config(goalstep=default_goalstep()), BuildReport("ego4d"))
    write_outputs(items, folder / "src")
    base, videos = read_jsonl(folder / "src" / f"{kind}.jsonl"), read_jsonl(folder / "src" / "videos.jsonl")
    out, copy = [], 0
    while len(out) < n:
        for r in base[: n - len(out)]:
            out.append(dict(r, **{ID_FIELDS[kind]: f"{r[ID_FIELDS[kind]]}-c{copy}"}) if kind != "guidance"
                       else dict(r, video_id=f"{r['video_id']}-c{copy}"))
        copy += 1
    if kind == "guidance":
        videos = [dict(v, video_id=f"{v['video_id']}-c{c}") for c in range(copy) for v in videos]
    write_jsonl(folder / "videos.jsonl", videos)
    write_jsonl(folder / f"{kind}.jsonl", out)
    return folder / f"{kind}.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--kind", default="interval_qa", choices=["interval_qa", "guidance"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = records(args.kind, args.tasks, tmp)
        with label_studio(tmp / "ls") as server:
            os.environ["LABEL_STUDIO_URL"], os.environ["LABEL_STUDIO_API_KEY"] = server.url, server.token
            start = time.perf_counter()
            push(args.kind, path, "bench")
            pushed = time.perf_counter() - start
            headers = {"Authorization": f"Token {server.token}"}
            users = [httpx.post(f"{server.url}/api/users/", headers=headers,
                                json={"email": f"a{i}@bench.test", "username": f"a{i}"}).json()["id"] for i in (1, 2)]
            conn = ls.connect()
            project, _ = ls.project_for(conn, "bench")
            by_id = {r[ID_FIELDS[args.kind]]: r for r in read_jsonl(path)}
            start = time.perf_counter()
            with httpx.Client(headers=headers, timeout=60) as http:
                for task in ls.export_tasks(conn, project.id):
                    result = prediction(by_id[task["data"]["record_id"]], args.kind, task["data"]["fps"])
                    for user in users:
                        http.post(f"{server.url}/api/tasks/{task['id']}/annotations/",
                                  json={"result": result, "completed_by": user}).raise_for_status()
            annotated = time.perf_counter() - start
            start = time.perf_counter()
            summary = pull("bench", tmp / "pulled.jsonl")
            pulled = time.perf_counter() - start
        print(f"{args.kind}: {args.tasks} tasks; push {pushed:.1f} s, pull {pulled:.1f} s "
              f"({dict(summary.states)}); {2 * args.tasks} annotations submitted in {annotated:.0f} s")


if __name__ == "__main__":
    main()
