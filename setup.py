"""Builds the optional compiled row decoder; everything else is in pyproject.toml.

Without a C compiler or Cython the package still installs and capture uses the pure-Python
decoder (``cdc_ingest.capture.decoder``), which gives the same records, slower.
"""

from __future__ import annotations

import os

from setuptools import setup
from setuptools.command.build_ext import build_ext


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


def extensions() -> list:  # type: ignore[type-arg]
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("WARNING: Cython is not installed; capture will use the pure-Python decoder")
        return []
    return cythonize(
        ["cdc_ingest/capture/_rowdecode.pyx", "cdc_ingest/capture/snapshot/_textrows.pyx"],
        compiler_directives={"language_level": "3"},
        quiet=True,
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
