"""Anonymization: face and licence-plate detectors, blurring, ffmpeg I/O, the video pipeline and its report.

The modules are imported by name (``streamcue.anonymize.pipeline``, ``.detectors``, ...); the package
itself exports nothing.
"""

__all__: list[str] = []
