"""Reading records back (any source: a build, a release or the Hub; typed records) and the replay harness."""

from streamcue.loaders.load import by_video, load, video_path
from streamcue.loaders.sources import RecordSet, open_records

__all__ = ["RecordSet", "by_video", "load", "open_records", "video_path"]
