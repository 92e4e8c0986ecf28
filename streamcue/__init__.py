"""streamcue: benchmark datasets and annotation toolkit for streaming-video assistants."""

from streamcue.errors import StreamcueError
from streamcue.version import __version__

__all__ = ["StreamcueError", "__version__"]
