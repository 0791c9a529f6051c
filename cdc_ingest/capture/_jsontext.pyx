# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, embedsignature=True
"""MySQL binary JSON -> the JSON text MySQL shows, compiled.

``json_text`` returns exactly what the reference, :func:`cdc_ingest.capture.mysql_json.json_text`
(whose docstring describes the text), returns for the same bytes, and raises what it raises:
``JsonBinaryError`` for a truncated document or an unknown type, ``KeyError`` for a literal
byte other than 0-2, ``UnicodeDecodeError`` for a key or string that is not UTF-8, and reads as
leniently (a key or string running past the end is cut there; the byte size of a container is
not read). tests/unit/test_json_text_compiled.py runs both on random documents.

The walk writes UTF-8 into one growing C buffer, decoded into a str once at the end. Doubles
are printed from CPython's own repr digits by the reference's rules; opaque values (DECIMAL,
temporal, base64) and the error of an infinite or NaN double go through the reference's Python
helpers.
"""

import struct

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint64_t
from libc.stdio cimport snprintf
from libc.string cimport memcpy

from cdc_ingest.capture.mysql_json import JsonBinaryError, double_text
from cdc_ingest.capture.mysql_json import _opaque as opaque_text


cdef extern from "Python.h":
    int Py_EnterRecursiveCall(const char *where)  # nonzero: RecursionError raised
    void Py_LeaveRecursiveCall()

# binary JSON types (see mysql_json)
DEF LARGE_OBJECT = 0x01
DEF SMALL_ARRAY = 0x02
DEF LARGE_ARRAY = 0x03
DEF LITERAL = 0x04
DEF INT16 = 0x05
DEF UINT16 = 0x06
DEF INT32 = 0x07
DEF UINT32 = 0x08
DEF INT64 = 0x09
DEF UINT64 = 0x0A
DEF DOUBLE = 0x0B
DEF STRING = 0x0C
DEF OPAQUE = 0x0F
# The reference recurses through three Python frames per container (_value, _container,
# _entries); counting as many against the interpreter's recursion limit makes a document
# nested too deep (or a container that contains itself) a RecursionError here too.
DEF FRAMES_PER_LEVEL = 3
DEF HUGE = 1 << 60  # a length past any buffer (7-bit length groups beyond 63 bits)

_StructError = struct.error

include "_jsontext_out.pxi"


cdef struct Doc:
    const uint8_t *p
    Py_ssize_t n


cdef inline int _need(Doc *d, Py_ssize_t at, Py_ssize_t size) except -1:
    """What indexing or ``struct.unpack_from`` past the end raises in the reference."""
    if at + size > d.n:
        raise IndexError("binary JSON read past its end")
    return 0


cdef inline uint64_t _le(const uint8_t *p, int size) noexcept:
    cdef uint64_t v = 0
    cdef int i
    for i in range(size - 1, -1, -1):
        v = (v << 8) | p[i]
    return v


cdef Py_ssize_t _varlen(Doc *d, Py_ssize_t *at) except -1:
    """A length of 7 bits per byte, low bits first; ``at`` moves past it."""
    cdef Py_ssize_t length = 0, shift = 0
    cdef bint huge = False
    cdef uint8_t byte
    while True:
        _need(d, at[0], 1)
        byte = d.p[at[0]]
        at[0] += 1
        if byte & 0x7F:
            if shift >= 56:
                huge = True
            else:
                length |= <Py_ssize_t>(byte & 0x7F) << shift
        if not byte & 0x80:
            return HUGE if huge else length
        shift += 7


cdef inline Py_ssize_t _clamp(Doc *d, Py_ssize_t at) noexcept:
    return at if at < d.n else d.n


cdef int _integer(Out *o, uint64_t magnitude, bint negative) except -1:
    """An integer in decimal, as ``str(int)`` prints it."""
    cdef char buf[24]
    cdef int at = 24
    while True:
        at -= 1
        buf[at] = <char>(48 + magnitude % 10)
        magnitude //= 10
        if not magnitude:
            break
    if negative:
        at -= 1
        buf[at] = b'-'
    return _put(o, buf + at, 24 - at)


cdef int _number(Out *o, int kind, const uint8_t *p) except -1:
    cdef int64_t signed
    cdef uint64_t raw
    cdef double value
    if kind == UINT16 or kind == UINT32 or kind == UINT64:
        return _integer(o, _le(p, 2 if kind == UINT16 else 4 if kind == UINT32 else 8), False)
    if kind == DOUBLE:
        raw = _le(p, 8)
        memcpy(&value, &raw, 8)
        return _double(o, value)
    if kind == INT16:
        signed = <int16_t>_le(p, 2)
    elif kind == INT32:
        signed = <int32_t>_le(p, 4)
    else:
        signed = <int64_t>_le(p, 8)
    if signed < 0:  # the magnitude of INT64_MIN too: unsigned negation wraps to 2**63
        return _integer(o, <uint64_t>0 - <uint64_t>signed, True)
    return _integer(o, <uint64_t>signed, False)


cdef int _value(Doc *d, Out *o, int kind, Py_ssize_t at) except -1:
    """The text of one value of type ``kind`` whose data starts at ``at``."""
    cdef Py_ssize_t length
    cdef uint8_t byte
    if kind <= LARGE_ARRAY:
        return _container(d, o, kind, at)
    if kind == LITERAL:
        _need(d, at, 1)
        byte = d.p[at]
        if byte == 0:
            return _put(o, b"null", 4)
        if byte == 1:
            return _put(o, b"true", 4)
        if byte == 2:
            return _put(o, b"false", 5)
        raise KeyError(byte)
    if INT16 <= kind <= DOUBLE:
        _need(d, at, 2 if kind <= UINT16 else 4 if kind <= UINT32 else 8)
        return _number(o, kind, d.p + at)
    if kind == STRING:
        length = _varlen(d, &at)
        return _quoted(o, d.p + at, _clamp(d, at + length) - at, True)
    if kind == OPAQUE:
        _need(d, at, 1)
        byte = d.p[at]
        at += 1
        length = _varlen(d, &at)
        raw = PyBytes_FromStringAndSize(<const char *>d.p + at, _clamp(d, at + length) - at)
        return _text(o, opaque_text(byte, raw))
    raise JsonBinaryError(f"unknown binary JSON type {kind:#x} at byte {at - 1}")


cdef int _container(Doc *d, Out *o, int kind, Py_ssize_t start) except -1:
    """An object or array at ``start`` (its element count): keys are read, and checked, before
    any value, as the reference does."""
    cdef int size = 4 if kind == LARGE_OBJECT or kind == LARGE_ARRAY else 2
    cdef bint is_object = kind <= LARGE_OBJECT
    cdef Py_ssize_t count, i, at, keys, key_at, key_end, value_kind
    cdef int entered = 0
    try:
        while entered < FRAMES_PER_LEVEL:
            if Py_EnterRecursiveCall(b" while decoding binary JSON"):
                return -1
            entered += 1
        _need(d, start, size)
        count = <Py_ssize_t>_le(d.p + start, size)
        at = keys = start + 2 * size  # after the element count and the byte size
        if is_object:
            for i in range(count):
                _need(d, at, size + 2)
                key_at = _clamp(d, start + <Py_ssize_t>_le(d.p + at, size))
                key_end = _clamp(d, key_at + <Py_ssize_t>_le(d.p + at + size, 2))
                _check_utf8(d.p + key_at, key_end - key_at)
                at += size + 2
        _put(o, b"{" if is_object else b"[", 1)
        for i in range(count):
            if i:
                _put(o, b", ", 2)
            if is_object:
                key_at = _clamp(d, start + <Py_ssize_t>_le(d.p + keys, size))
                key_end = _clamp(d, key_at + <Py_ssize_t>_le(d.p + keys + size, 2))
                _quoted(o, d.p + key_at, key_end - key_at, False)
                _put(o, b": ", 2)
                keys += size + 2
            _need(d, at, 1)
            value_kind = d.p[at]
            if (value_kind == LITERAL or value_kind == INT16 or value_kind == UINT16
                    or (size == 4 and (value_kind == INT32 or value_kind == UINT32))):
                _value(d, o, value_kind, at + 1)
            else:
                _need(d, at + 1, size)
                _value(d, o, value_kind, start + <Py_ssize_t>_le(d.p + at + 1, size))
            at += 1 + size
        return _put(o, b"}" if is_object else b"]", 1)
    finally:
        while entered:
            Py_LeaveRecursiveCall()
            entered -= 1


cdef bytes _open(Doc *d, object data):
    """``data`` as bytes, ``d`` over them (the caller keeps the bytes while it reads)."""
    cdef bytes raw = data if type(data) is bytes else bytes(data)
    d.p = <const uint8_t *>PyBytes_AS_STRING(raw)
    d.n = PyBytes_GET_SIZE(raw)
    return raw


cdef bytes _open_container(Doc *d, object data, int kind, Py_ssize_t start):
    """:func:`_open` for a container of type ``kind`` at ``start``, both checked."""
    if not 0 <= kind <= LARGE_ARRAY:
        raise ValueError(f"not a container type: {kind}")
    if start < 0:
        raise IndexError("binary JSON read past its end")
    return _open(d, data)


def json_text(data):
    """The JSON text of one binary JSON value (``null`` for an empty value)."""
    cdef Doc d
    cdef Out o
    cdef char first[256]
    if not data:
        return "null"
    data = _open(&d, data)
    o.buf, o.len, o.cap, o.heap = first, 0, 256, False
    try:
        _value(&d, &o, d.p[0], 1)
        return PyUnicode_DecodeUTF8(o.buf, o.len, NULL)
    except (IndexError, _StructError) as exc:
        raise JsonBinaryError(f"truncated binary JSON ({len(data)} bytes)") from exc
    finally:
        if o.heap:
            PyMem_Free(o.buf)


def container_text(int kind, data, Py_ssize_t start):
    """The JSON text of the object or array of type ``kind`` whose element count is at byte
    ``start`` of ``data`` (an unread container of :func:`mysql_json.json_tree`), as the
    reference's ``_container`` renders it. A malformed container raises; the caller then
    reads it with the reference for the reference's own error."""
    cdef Doc d
    cdef Out o
    cdef char first[256]
    data = _open_container(&d, data, kind, start)
    o.buf, o.len, o.cap, o.heap = first, 0, 256, False
    try:
        _container(&d, &o, kind, start)
        return PyUnicode_DecodeUTF8(o.buf, o.len, NULL)
    finally:
        if o.heap:
            PyMem_Free(o.buf)


def container_entries(int kind, data, Py_ssize_t start):
    """One level of the container of type ``kind`` at byte ``start``, as the reference's
    ``_entries`` with ``_shallow`` reads it (``mysql_json.expand``): its keys (None for an
    array) and its values, a scalar as its text and a container as ``(its type, where it
    starts)``, not read. A malformed container raises; the caller then reads it with the
    reference for the reference's own error."""
    cdef Doc d
    cdef Out o
    cdef char first[256]
    cdef int size = 4 if kind == LARGE_OBJECT or kind == LARGE_ARRAY else 2
    cdef bint is_object = kind <= LARGE_OBJECT
    cdef Py_ssize_t count, i, at, key_at, key_end, value_kind, value_at
    data = _open_container(&d, data, kind, start)
    _need(&d, start, size)
    count = <Py_ssize_t>_le(d.p + start, size)
    at = start + 2 * size
    keys = None
    if is_object:
        keys = []
        for i in range(count):
            _need(&d, at, size + 2)
            key_at = _clamp(&d, start + <Py_ssize_t>_le(d.p + at, size))
            key_end = _clamp(&d, key_at + <Py_ssize_t>_le(d.p + at + size, 2))
            keys.append(PyUnicode_DecodeUTF8(<const char *>d.p + key_at, key_end - key_at, NULL))
            at += size + 2
    values = []
    o.buf, o.len, o.cap, o.heap = first, 0, 256, False
    try:
        for i in range(count):
            _need(&d, at, 1)
            value_kind = d.p[at]
            if (value_kind == LITERAL or value_kind == INT16 or value_kind == UINT16
                    or (size == 4 and (value_kind == INT32 or value_kind == UINT32))):
                value_at = at + 1
            else:
                _need(&d, at + 1, size)
                value_at = start + <Py_ssize_t>_le(d.p + at + 1, size)
            if value_kind <= LARGE_ARRAY:
                values.append((value_kind, value_at))
            else:
                o.len = 0
                _value(&d, &o, value_kind, value_at)
                values.append(PyUnicode_DecodeUTF8(o.buf, o.len, NULL))
            at += 1 + size
        return keys, values
    finally:
        if o.heap:
            PyMem_Free(o.buf)
