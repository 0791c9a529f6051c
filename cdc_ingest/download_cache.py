"""Where cdc-ingest keeps what it downloads (jars, service homes), and a lock across processes."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_dir() -> Path:
    """Where downloads and default service homes live (git-ignored, safe to delete).

    ``$CDC_INGEST_CACHE`` if set, else ``<checkout>/.cache`` when running from a source checkout,
    else ``~/.cache/cdc-ingest``.
    """
    override = os.environ.get("CDC_INGEST_CACHE")
    if override:
        return Path(override).expanduser().resolve()
    checkout = Path(__file__).resolve().parents[1]  # <checkout>/cdc_ingest/download_cache.py
    if (checkout / "pyproject.toml").is_file() and (checkout / ".git").exists():
        return checkout / ".cache"
    return Path.home() / ".cache" / "cdc-ingest"


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing), across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """``target``, made by ``build(partial)`` if it is not there yet: once across processes
    (a lock beside it), written under a temporary name and renamed, so a reader never sees a
    half-made file; other versions in its directory with its name's first part are removed.
    What ``build`` raises goes to the caller, and nothing is left behind."""
    if target.is_file():
        return target
    with file_lock(target.parent / "build.lock"):
        if target.is_file():  # another process made it meanwhile
            return target
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        try:
            build(partial)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        stem = target.name.split("-")[0]
        for old in target.parent.glob(f"{stem}-*{target.suffix}"):
            if old != target:
                old.unlink(missing_ok=True)  # an earlier version
    return target
