"""What the adapter's tests share: the driver registered as an installation
registers it, and the client's test helpers (clients/python/tests.support,
on the path the harness gives)."""

from __future__ import annotations

import importlib
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTER_ROOT = os.path.dirname(HERE)


def backend() -> object:
    """The build backend (build_backend/seqd_backend.py), as pip loads it."""
    sys.path.insert(0, os.path.join(ADAPTER_ROOT, "build_backend"))
    try:
        import seqd_backend  # type: ignore[import]  # build_backend/, put on sys.path just above
    finally:
        sys.path.pop(0)
    return seqd_backend


def register_entry_points() -> str:
    """Write the adapter's metadata (METADATA and entry_points.txt, by the
    build backend's own prepare_metadata_for_build_wheel, which pip calls
    too) into a new directory on sys.path: to importlib.metadata, and so to
    tooz, the adapter is then installed. Returns the directory."""
    d = tempfile.mkdtemp(prefix="seqd-tooz-dist-")
    backend().prepare_metadata_for_build_wheel(d)  # type: ignore[attr-defined]
    sys.path.append(d)
    importlib.invalidate_caches()
    return d
