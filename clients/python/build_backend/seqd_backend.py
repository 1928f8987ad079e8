"""A PEP 517 build backend for seqd's pure-Python packages, standard
library only.

It exists so that ``pip install ./clients/python`` (the client, ``seqd``)
and ``pip install ./contrib/tooz`` (its tooz adapter, ``seqd-tooz``, whose
``build_backend/`` links here) work without a package index (pip's
isolated build would have to download setuptools). It builds what one
pure-Python package needs and nothing more: a ``py3-none-any`` wheel of
the package directory (the project's name with ``-`` as ``_``), an
editable wheel (PEP 660) that points at the source tree, and an sdist. The
metadata comes from ``pyproject.toml``'s ``[project]`` table: its flat
string entries, ``dependencies`` and ``[project.entry-points."GROUP"]``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Dict, List, Optional, Tuple

# The project's directory: the one above build_backend/ (abspath, not
# realpath: the adapter's build_backend/ is a link to this file).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _project() -> Dict[str, str]:
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if m is None:
        raise RuntimeError("pyproject.toml has no [project] table")
    fields = dict(re.findall(r'^([A-Za-z-]+)\s*=\s*"([^"]*)"\s*$', m.group(1), re.M))
    for key in ("name", "version", "requires-python"):
        if key not in fields:
            raise RuntimeError(f"pyproject.toml: [project] needs {key} = \"...\"")
    return fields


def _package() -> str:
    """The directory of the package: the project's name, ``-`` as ``_``."""
    return re.sub(r"[-.]+", "_", _project()["name"])


def _dependencies() -> List[str]:
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    d = re.search(r"^dependencies\s*=\s*\[(.*?)\]", m.group(1) if m else "", re.M | re.S)
    return re.findall(r'"([^"]+)"', d.group(1)) if d else []


def _metadata() -> str:
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p.get('description', '')}",
        f"Requires-Python: {p['requires-python']}",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Typing :: Typed",
    ]
    lines += [f"Requires-Dist: {d}" for d in _dependencies()]
    readme = os.path.join(ROOT, p.get("readme", "README.md"))
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _entry_points() -> str:
    """entry_points.txt from pyproject.toml's ``[project.entry-points."GROUP"]``
    tables (``name = "module:object"`` lines), or "" if it has none."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    out = []
    for group, body in re.findall(r'^\[project\.entry-points\."([^"]+)"\]\s*$(.*?)(?=^\[|\Z)', text, re.M | re.S):
        out.append(f"[{group}]")
        for name, ref in re.findall(r'^"?([^"=\s]+)"?\s*=\s*"([^"]+)"\s*$', body, re.M):
            out.append(f"{name} = {ref}")
        out.append("")
    return "\n".join(out)


def _package_files() -> List[Tuple[str, str]]:
    """(path in the archive, path on disk) of the package's files."""
    out = []
    src = os.path.join(ROOT, _package())
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith(".py") or fn == "py.typed":
                full = os.path.join(dirpath, fn)
                out.append((os.path.relpath(full, ROOT).replace(os.sep, "/"), full))
    if _package() == CLIENT:  # the client; its adapters carry no fence
        out.append((FENCE_SCRIPT, _fence_script()))
    return out


# The Redis fence's script: one file in seqd's repository (Go embeds it),
# copied into the package when it is built, never kept here.
CLIENT = "seqd"
FENCE_SCRIPT = f"{CLIENT}/fence/fence.lua"


def _fence_script() -> str:
    """Where the script is: in an unpacked sdist, in the package already;
    in seqd's repository, fence/redisfence/fence.lua."""
    for path in (os.path.join(ROOT, FENCE_SCRIPT), os.path.join(ROOT, "..", "..", "fence", "redisfence", "fence.lua")):
        if os.path.exists(path):
            return os.path.normpath(path)
    raise RuntimeError(f"the Redis fence script is missing: neither {FENCE_SCRIPT} nor seqd's fence/redisfence/fence.lua")


def _dist_name() -> str:
    p = _project()
    return f"{re.sub(r'[-_.]+', '_', p['name'])}-{p['version']}"


def _write_wheel(directory: str, files: List[Tuple[str, bytes]]) -> str:
    name = _dist_name()
    info = f"{name}.dist-info"
    files = files + [
        (f"{info}/METADATA", _metadata().encode()),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: seqd_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    if _entry_points():
        files.append((f"{info}/entry_points.txt", _entry_points().encode()))
    record = []
    for path, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    wheel = f"{name}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            zi = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            z.writestr(zi, data, zipfile.ZIP_DEFLATED)
    return wheel


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None, metadata_directory: Optional[str] = None) -> str:
    files = []
    for arc, full in _package_files():
        with open(full, "rb") as f:
            files.append((arc, f.read()))
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None, metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, [(f"_{_package()}_editable.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    name = _dist_name()
    sdist = f"{name}.tar.gz"
    paths = ["pyproject.toml", "README.md", "build_backend/seqd_backend.py"]
    files = dict(_package_files())
    paths += list(files)
    tests = sorted(d for d in os.listdir(ROOT) if d == "tests" or d.endswith("_tests"))
    for top in tests:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            paths += [os.path.relpath(os.path.join(dirpath, fn), ROOT) for fn in sorted(filenames) if fn.endswith(".py")]
    # dereference: the adapter's build_backend/ is a link to the client's.
    with tarfile.open(os.path.join(sdist_directory, sdist), "w:gz", format=tarfile.PAX_FORMAT, dereference=True) as t:
        for rel in paths:
            full = files.get(rel, os.path.join(ROOT, rel))
            if os.path.exists(full):
                t.add(full, arcname=f"{name}/{rel}", recursive=False)
        data = _metadata().encode()
        ti = tarfile.TarInfo(f"{name}/PKG-INFO")
        ti.size = len(data)
        ti.mode = 0o644
        t.addfile(ti, io.BytesIO(data))
    return sdist


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[dict] = None) -> str:
    """The wheel's ``.dist-info`` (METADATA and entry_points.txt), written
    into ``metadata_directory``. A directory on ``sys.path`` that holds it
    (and the package) is what an installation looks like to
    ``importlib.metadata``: the tooz adapter's tests register its driver
    that way."""
    info = f"{_dist_name()}.dist-info"
    d = os.path.join(metadata_directory, info)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    eps = _entry_points()
    if eps:
        with open(os.path.join(d, "entry_points.txt"), "w", encoding="utf-8") as f:
            f.write(eps)
    return info


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[dict] = None) -> List[str]:
    return []
