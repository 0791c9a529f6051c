"""MySQL GEOMETRY values (4-byte SRID + WKB) as a GeoJSON-style JSON string.

The text is ``{"coordinates":...,"type":"Point","srid":0}``, the form Flink CDC's MySQL
pipeline connector emits, so downstream readers of either tool see the same thing: its
coordinates as Esri's GeoJSON writer and Jackson spell them (``[1,1]``, ``[1.5,-2.25]``,
``1.0E-5``; cdc_ingest.model.java_numbers).
"""

from __future__ import annotations

import struct
from typing import Any

from cdc_ingest.model.java_numbers import geojson_text

_NAMES = {
    1: "Point",
    2: "LineString",
    3: "Polygon",
    4: "MultiPoint",
    5: "MultiLineString",
    6: "MultiPolygon",
    7: "GeometryCollection",
}


class _Reader:
    def __init__(self, data: bytes, off: int) -> None:
        self.data = data
        self.off = off
        self.fmt = "<"

    def uint(self) -> int:
        (value,) = struct.unpack_from(self.fmt + "I", self.data, self.off)
        self.off += 4
        return int(value)

    def point(self) -> list[float]:
        x, y = struct.unpack_from(self.fmt + "dd", self.data, self.off)
        self.off += 16
        return [x, y]

    def points(self) -> list[list[float]]:
        return [self.point() for _ in range(self.uint())]

    def geometry(self) -> dict[str, Any]:
        self.fmt = "<" if self.data[self.off] == 1 else ">"
        self.off += 1
        kind = self.uint()
        name = _NAMES.get(kind)
        if name is None:
            raise ValueError(f"unknown WKB geometry type {kind}")
        if kind == 1:
            return {"coordinates": self.point(), "type": name}
        if kind == 2:
            return {"coordinates": self.points(), "type": name}
        if kind == 3:
            return {"coordinates": [self.points() for _ in range(self.uint())], "type": name}
        parts = [self.geometry() for _ in range(self.uint())]
        if kind == 7:
            return {"geometries": parts, "type": name}
        return {"coordinates": [p["coordinates"] for p in parts], "type": name}


def geometry_dict(value: bytes) -> dict[str, Any]:
    """A GEOMETRY value (SRID + WKB) as a GeoJSON-style dict with its ``srid``."""
    srid = int.from_bytes(value[0:4], "little")
    body = _Reader(value, 4).geometry()
    body["srid"] = srid
    return body


def geometry_json(value: bytes) -> str:
    return geojson_text(geometry_dict(value))
