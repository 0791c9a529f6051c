"""GitHub's gh-ost for tests/integration/test_gh_ost.py: built from source with Go, once, into
the project cache (``<cache>/gh-ost/gh-ost-<version>``); ``scripts/setup.sh`` builds it with
``CDC_INGEST_SETUP_TESTS=1``, and the test does too when it is missing::

    python -m tests.integration.gh_ost      # prints the binary's path

``go install github.com/github/gh-ost/go/cmd/gh-ost@v1.1.6`` fails here: the Go module proxy
serves that one version of the module but not its version list, which ``go install`` reads
to look for a deprecation notice (403). So the module is downloaded (``go mod download``), its
source copied out of the read-only module cache and built with its own go.mod and go.sum;
its ``vendor/`` holds only ``modules.txt`` in a module zip, so it is removed and the
dependencies come from the proxy too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cdc_ingest.download_cache import build_once, cache_dir

VERSION = "v1.1.6"  # the newest the Go module proxy serves (2023-11-03)
MODULE = "github.com/github/gh-ost"
TIMEOUT = 900


class GhOstBuildError(RuntimeError):
    """gh-ost could not be built; says why."""


def binary() -> Path:
    """The pinned gh-ost, building it first when it is not in the cache."""
    return build_once(cache_dir() / "gh-ost" / f"gh-ost-{VERSION}", _build)


def _go() -> str:
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not os.access(go, os.X_OK):
        raise GhOstBuildError(
            f"gh-ost {VERSION} is built from source and needs Go (1.17 or newer), found "
            "neither `go` on PATH nor /usr/local/go/bin/go: install Go (Debian: apt-get "
            "install golang-go) and run scripts/setup.sh again with CDC_INGEST_SETUP_TESTS=1")
    return go


def _build(target: Path) -> None:
    go = _go()
    with tempfile.TemporaryDirectory(prefix="gh-ost-build-") as tmp:
        # the source's own go.mod and go.sum, not the checkout's; -mod=mod: no vendor/
        env = {**os.environ, "GOFLAGS": "-mod=mod -buildvcs=false", "GOTOOLCHAIN": "local"}
        info = json.loads(_run([go, "mod", "download", "-json", f"{MODULE}@{VERSION}"],
                               tmp, env, "download the module"))
        src = Path(tmp) / "src"
        shutil.copytree(info["Dir"], src)
        for path in [src, *src.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)  # the module cache is read-only
        shutil.rmtree(src / "vendor", ignore_errors=True)
        _run([go, "build", "-ldflags", f"-X main.AppVersion={VERSION}", "-o", str(target),
              "./go/cmd/gh-ost"], str(src), env, "build it")
    version = _run([str(target), "--version"], None, None, "run it").strip()
    if version != VERSION:
        raise GhOstBuildError(f"the gh-ost built says it is {version!r}, not {VERSION}")


def _run(command: list[str], cwd: str | None, env: dict[str, str] | None, what: str) -> str:
    print(f"gh_ost: {' '.join(command)}", file=sys.stderr)
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GhOstBuildError(f"gh-ost {VERSION}: could not {what}: {exc}") from exc
    if done.returncode != 0:
        raise GhOstBuildError(f"gh-ost {VERSION}: could not {what} (exit {done.returncode}):"
                              f"\n{done.stderr[-3000:]}")
    return done.stdout


if __name__ == "__main__":
    try:
        print(binary())
    except GhOstBuildError as error:
        sys.exit(f"gh_ost: error: {error}")
