"""Builds the optional compiled row decoder and ships the routes library; everything else is
in pyproject.toml.

Without a C compiler or Cython the package still installs and capture uses the pure-Python
decoder (``cdc_ingest.capture.decoder``), which gives the same records, slower.

The ready pipelines of ``routes/`` (outside the package, where users look for them) are
copied into the built package as ``cdc_ingest/routes/*.yaml``, so ``cdc-ingest demo`` finds
``shop-demo.yaml`` when installed from a wheel (MANIFEST.in puts them in the sdist).
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROUTES = Path(__file__).resolve().parent / "routes"
PACKAGED_ROUTES = ("cdc_ingest", "routes")  # where the built package holds them


class OptionalBuildExt(build_ext):
    """A failed compile is a warning, not a failed install (unless CDC_INGEST_REQUIRE_EXT=1)."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            self._fallback(exc)

    def build_extension(self, ext):  # type: ignore[no-untyped-def]
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._fallback(exc)

    @staticmethod
    def _fallback(exc: Exception) -> None:
        if os.environ.get("CDC_INGEST_REQUIRE_EXT") == "1":
            raise exc
        print(f"WARNING: the compiled row decoder was not built ({exc}); capture will use "
              "the pure-Python decoder")


class BuildPyWithRoutes(build_py):
    """The package, plus routes/*.yaml as package data (``cdc_ingest/routes/``)."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib, *PACKAGED_ROUTES)
        self.mkpath(str(target))
        for route in sorted(ROUTES.glob("*.yaml")):
            self.copy_file(str(route), str(target / route.name))


def extensions() -> list:  # type: ignore[type-arg]
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("WARNING: Cython is not installed; capture will use the pure-Python decoder")
        return []
    return cythonize(
        ["cdc_ingest/capture/_rowdecode.pyx", "cdc_ingest/capture/_rowencode.pyx",
         "cdc_ingest/capture/_jsontext.pyx",
         "cdc_ingest/capture/snapshot/_textrows.pyx", "cdc_ingest/verify/_rowbytes.pyx",
         "cdc_ingest/verify/_buckets.pyx"],
        compiler_directives={"language_level": "3"},
        quiet=True,
    )


setup(ext_modules=extensions(),
      cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyWithRoutes})
