"""Reading releases back (typed records through ``datasets``), baselines and the replay harness."""

from streamcue.loaders.load import by_video, load, video_path

__all__ = ["by_video", "load", "video_path"]
