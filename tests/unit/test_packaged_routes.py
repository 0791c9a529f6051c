"""The routes library ships in the package (setup.py copies routes/*.yaml to
cdc_ingest/routes/), so `cdc-ingest demo` finds its pipeline when installed from a wheel,
not only in a source checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_built_package_holds_every_route_and_the_demo_uses_it(tmp_path: Path) -> None:
    build = tmp_path / "build"
    done = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib",
                           str(build)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    routes = sorted(p.name for p in (ROOT / "routes").glob("*.yaml"))
    assert "shop-demo.yaml" in routes
    packaged = build / "cdc_ingest" / "routes"
    assert sorted(p.name for p in packaged.glob("*.yaml")) == routes
    for name in routes:
        assert (packaged / name).read_bytes() == (ROOT / "routes" / name).read_bytes()
    # the built package alone (no checkout around it), as a wheel installs it
    env = {**os.environ, "PYTHONPATH": str(build)}
    found = subprocess.run(
        [sys.executable, "-c", "import cdc_ingest.commands.demo as d; print(d.__file__); "
         "print(d.ROUTE); print(d.ROUTE.is_file())"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert found.returncode == 0, found.stderr
    module, route, is_file = found.stdout.split()
    assert module == str(build / "cdc_ingest" / "commands" / "demo.py")
    assert route == str(packaged / "shop-demo.yaml") and is_file == "True"


def test_the_sdist_takes_the_routes() -> None:
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8").splitlines()
    assert "include routes/*.yaml" in manifest


def test_in_a_checkout_the_demo_runs_the_checkouts_route() -> None:
    from cdc_ingest.commands.demo import ROUTE  # noqa: PLC0415

    assert ROUTE == ROOT / "routes" / "shop-demo.yaml"
