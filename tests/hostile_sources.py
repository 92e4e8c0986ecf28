"""Small, real source trees for hostile-input tests: subsets of the public files in ../shared/data.

Each helper copies a few recordings or videos of the real annotation files (unchanged, so every
quirk they have stays) into a temporary folder, where a test can then break them on purpose.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from conftest import CAPTAINCOOK4D, GOALSTEP_VAL

#: Recordings of the CaptainCook4D subset (all three in train upstream).
CC4D_RECORDINGS = ("1_7", "1_10", "2_3")
CC4D_FILES = {
    "steps": "annotation_json/complete_step_annotations.json",
    "errors": "annotation_json/error_annotations.json",
    "metadata": "metadata/video_information.csv",
    "splits": "data_splits/recordings_data_split_combined.json",
}


def cc4d_subset(dest: Path, recordings: tuple[str, ...] = CC4D_RECORDINGS) -> Path:
    """A CaptainCook4D annotation folder holding only ``recordings`` (their real entries)."""
    wanted = set(recordings)
    for rel in CC4D_FILES.values():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
    steps = json.loads((CAPTAINCOOK4D / CC4D_FILES["steps"]).read_text())
    (dest / CC4D_FILES["steps"]).write_text(json.dumps({k: v for k, v in steps.items() if k in wanted}))
    errors = json.loads((CAPTAINCOOK4D / CC4D_FILES["errors"]).read_text())
    (dest / CC4D_FILES["errors"]).write_text(json.dumps([e for e in errors if e["recording_id"] in wanted]))
    with (CAPTAINCOOK4D / CC4D_FILES["metadata"]).open(newline="") as fh:
        rows = list(csv.reader(fh))
    with (dest / CC4D_FILES["metadata"]).open("w", newline="") as fh:
        csv.writer(fh).writerows([rows[0], *(r for r in rows[1:] if r[0] in wanted)])
    splits = json.loads((CAPTAINCOOK4D / CC4D_FILES["splits"]).read_text())
    (dest / CC4D_FILES["splits"]).write_text(json.dumps({k: [r for r in v if r in wanted] for k, v in splits.items()}))
    return dest


def goalstep_subset(dest: Path, n: int = 3) -> Path:
    """A GoalStep val file holding its first ``n`` videos (with the groups file beside it)."""
    data = json.loads(GOALSTEP_VAL.read_text())
    data["videos"] = data["videos"][:n]
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(data))
    groups = GOALSTEP_VAL.with_name("goalstep_video_groups.tsv")
    if groups.is_file():
        shutil.copy(groups, dest.with_name(groups.name))
    return dest
