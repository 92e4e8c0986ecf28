"""``NOTICE.md``: the notices that the licences of a release's records require, shipped with every release.

Generated from the registry (each source's licence, copyright lines, homepage; ``streamcue/registry.py``) and from
the video records (each recorded video's own licence). MIT and BSD data keep their copyright notice and licence
text; Creative Commons data its attribution: what it is, who made it, its licence with a link, and that it was
changed (converted into records). The licence gate (:mod:`~streamcue.release.gates`) has already refused what no
notice could make releasable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from streamcue.registry import SOURCES, Source
from streamcue.release.gates import OWN_VIDEOS, video_licence_id

__all__ = ["NOTICE_FILE", "TEXTS", "notice", "licence_url"]

#: The file, at the top of the release folder.
NOTICE_FILE = "NOTICE.md"

_MIT = """\
Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""
#: The BSD licences' conditions: BSD-2-Clause has the first two, BSD-3-Clause all three.
_BSD_CONDITIONS = (
    "1. Redistributions of source code must retain the above copyright notice, this list of conditions and the "
    "following disclaimer.",
    "2. Redistributions in binary form must reproduce the above copyright notice, this list of conditions and the "
    "following disclaimer in the documentation and/or other materials provided with the distribution.",
    "3. Neither the name of the copyright holder nor the names of its contributors may be used to endorse or "
    "promote products derived from this software without specific prior written permission.",
)
_BSD = """\
Redistribution and use in source and binary forms, with or without modification, are permitted provided that the \
following conditions are met:

{conditions}

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, \
INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE \
DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, \
SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR \
SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, \
WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE \
OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""
#: Hub licence id -> the licence text that copies must keep beside the copyright notice.
TEXTS = {
    "mit": _MIT,
    "bsd-2-clause": _BSD.format(conditions="\n\n".join(_BSD_CONDITIONS[:2])),
    "bsd-3-clause": _BSD.format(conditions="\n\n".join(_BSD_CONDITIONS)),
}
_SPDX = {"mit": "MIT", "apache-2.0": "Apache-2.0", "bsd-2-clause": "BSD-2-Clause", "bsd-3-clause": "BSD-3-Clause"}


def licence_url(licence: str) -> str:
    """Where the text of ``licence`` (a Hub or SPDX id, any case) is read: a Creative Commons deed, an SPDX page,
    else the Hub's list of licences."""
    lid = licence.lower()
    if lid == "cc0-1.0":
        return "https://creativecommons.org/publicdomain/zero/1.0/"
    parts = lid.split("-")
    if lid.startswith("cc-") and len(parts) >= 3:
        return f"https://creativecommons.org/licenses/{'-'.join(parts[1:-1])}/{parts[-1]}/"
    if lid in _SPDX:
        return f"https://spdx.org/licenses/{_SPDX[lid]}.html"
    return "https://huggingface.co/docs/hub/repositories-licenses"


def notice(title: str, licence: str, videos: Iterable[dict[str, Any]]) -> str:
    """The text of ``NOTICE.md`` for a release called ``title`` under ``licence`` whose video records are
    ``videos``: a section per source present (its licence, copyright lines and licence text, or attribution),
    and for :data:`~streamcue.release.gates.OWN_VIDEOS` one line per video with its own licence."""
    videos = sorted(videos, key=lambda v: (v["source"], v["video_id"]))
    parts = [f"# Notices\n\nThis release ({title}) is published under `{licence}`. Its records are made from the "
             "sources and videos below, whose licences ask that these notices travel with every copy of what is "
             "made from them: keep this file with the records. BibTeX for each source is in the card (README.md).\n"]
    for name in sorted({v["source"] for v in videos}):
        if name in OWN_VIDEOS:  # made from videos recorded for the dataset: each video's licence stands for it
            parts.append(_own_videos(title, [v for v in videos if v["source"] == name]))
        elif name in SOURCES:
            parts.append(_source(SOURCES[name]))
    return "\n".join(parts)


def _source(source: Source) -> str:
    text = (f"## {source.title} (`{source.name}`): {source.licence}\n\n"
            f"The records of source `{source.name}` were converted into streamcue's format from {source.title}"
            f"{f' ({source.homepage})' if source.homepage else ''}; terms: {source.licence_note}. "
            f"Licence: {source.licence}, {licence_url(source.licence)}.\n")
    lines = "\n".join(source.copyright)
    if lines:
        text += f"\n```text\n{lines}\n\n{TEXTS.get(source.licence.lower(), '').rstrip()}\n```\n"
    return text


def _own_videos(title: str, videos: list[dict[str, Any]]) -> str:
    """One line per video: its id, its licence as stated, and the licence's link; the texts that MIT and BSD
    videos' licences require, once each."""
    lines = [f"## Videos recorded for {title}: each under its own licence\n",
             "The records (captions, questions, guidance) describe these videos; credit them as "
             f"\"{title}, video <id>\", under the video's licence. Changes: the videos were anonymized (faces and "
             "licence plates blurred) and annotated.\n"]
    ids = [video_licence_id(v["license"]) or v["license"] for v in videos]
    lines += [f"- `{v['video_id']}`: {v['license']}, {licence_url(lid)}" for v, lid in zip(videos, ids)]
    for lid in sorted({lid for lid in ids if lid in TEXTS}):
        lines.append(f"\nThe licence text of the videos under `{lid}`:\n\n```text\n{TEXTS[lid].rstrip()}\n```")
    return "\n".join(lines) + "\n"
