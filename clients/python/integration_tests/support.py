"""What the integration suites share: the tooz driver registered as an
installation registers it, and the harness's helpers (tests.support)."""

from __future__ import annotations

import importlib
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)


def register_entry_points() -> str:
    """Write the package's metadata (METADATA and entry_points.txt, by the
    build backend's own prepare_metadata_for_build_wheel, which pip calls
    too) into a new directory on sys.path: to importlib.metadata, and so to
    tooz, the package is then installed. Returns the directory."""
    sys.path.insert(0, os.path.join(PACKAGE_ROOT, "build_backend"))
    try:
        import seqd_backend  # type: ignore[import]  # build_backend/, put on sys.path just above
    finally:
        sys.path.pop(0)
    d = tempfile.mkdtemp(prefix="seqd-dist-")
    seqd_backend.prepare_metadata_for_build_wheel(d)
    sys.path.append(d)
    importlib.invalidate_caches()
    return d
