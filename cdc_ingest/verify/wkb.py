"""MySQL GEOMETRY values (little-endian SRID, then OGC WKB) as GeoJSON-style text.

``{"coordinates":[1.5,-2.25],"type":"Point","srid":0}`` (``[1,1]`` for integral coordinates,
as Flink CDC writes them); a collection has ``geometries``
instead of ``coordinates``. Written for verify from the WKB specification, apart from capture.
"""

from __future__ import annotations

import struct
from typing import Any

from cdc_ingest.model.java_numbers import geojson_text

_TYPES = {1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint", 5: "MultiLineString",
          6: "MultiPolygon", 7: "GeometryCollection"}


class WkbError(ValueError):
    """The bytes are not a 2-D OGC WKB geometry."""


class _Reader:
    def __init__(self, data: bytes, offset: int) -> None:
        self.data = data
        self.offset = offset
        self.order = "<"

    def _unpack(self, fmt: str, size: int) -> tuple[Any, ...]:
        end = self.offset + size
        if end > len(self.data):
            raise WkbError(f"truncated at byte {self.offset} of {len(self.data)}")
        values = struct.unpack(self.order + fmt, self.data[self.offset:end])
        self.offset = end
        return values

    def count(self) -> int:
        return int(self._unpack("I", 4)[0])

    def point(self) -> list[float]:
        x, y = self._unpack("dd", 16)
        return [float(x), float(y)]

    def line(self) -> list[list[float]]:
        return [self.point() for _ in range(self.count())]

    def polygon(self) -> list[list[list[float]]]:
        return [self.line() for _ in range(self.count())]

    def geometry(self) -> dict[str, Any]:
        """One WKB geometry (it starts with its own byte order) as a GeoJSON-style dict."""
        order = self.data[self.offset:self.offset + 1]
        if order not in (b"\x00", b"\x01"):
            raise WkbError(f"no byte-order mark at byte {self.offset}")
        self.offset += 1
        self.order = "<" if order == b"\x01" else ">"
        code = self.count()
        kind = _TYPES.get(code)
        if kind is None:
            raise WkbError(f"unknown WKB geometry type {code}")
        if kind == "GeometryCollection":
            return {"geometries": [self.geometry() for _ in range(self.count())], "type": kind}
        return {"coordinates": self._coordinates(kind), "type": kind}

    def _coordinates(self, kind: str) -> Any:
        if kind == "Point":
            return self.point()
        if kind == "LineString":
            return self.line()
        if kind == "Polygon":
            return self.polygon()
        # Multi*: each member is a whole WKB geometry of the single kind.
        return [self.geometry()["coordinates"] for _ in range(self.count())]


def geometry_text(value: bytes) -> str:
    """The GeoJSON-style text of a GEOMETRY value as SELECT returns it."""
    if len(value) < 9:
        raise WkbError(f"{len(value)} bytes are too short for a geometry")
    srid = int.from_bytes(value[:4], "little")
    body = _Reader(value, 4).geometry()
    body["srid"] = srid
    return geojson_text(body)
