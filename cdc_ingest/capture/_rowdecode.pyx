# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, embedsignature=True
"""Compiled row-image decoding: the per-table plan runs in C.

A :class:`RowPlan` holds one opcode per column, built in Python from the table's TableMap
(:func:`cdc_ingest.capture.decoder.compile_plan`). Common types (integers, floats, strings,
DECIMAL, temporal types, ENUM) are decoded here without touching the interpreter; rare ones
call the same pure-Python helpers the reference decoder uses. The values are exactly those of
the reference decoder (:func:`cdc_ingest.capture.decoder.compile_decoder`); a test runs both.
Its twin on the way out, the compiled encoder, is ``_rowencode.pyx``.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.float cimport PyFloat_FromDouble
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stdio cimport snprintf
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy



cdef extern from "time.h" nogil:
    ctypedef long time_t
    struct tm:
        int tm_sec
        int tm_min
        int tm_hour
        int tm_mday
        int tm_mon
        int tm_year
    tm *gmtime_r(const time_t *timep, tm *result)


cdef extern from "Python.h":
    object PyUnicode_FromStringAndSize(const char *u, Py_ssize_t size)


# Opcodes, mirrored in decoder.py (OPS): keep the numbers in step.
DEF OP_I8 = 1
DEF OP_U8 = 2
DEF OP_I16 = 3
DEF OP_U16 = 4
DEF OP_I24 = 5
DEF OP_U24 = 6
DEF OP_I32 = 7
DEF OP_U32 = 8
DEF OP_I64 = 9
DEF OP_U64 = 10
DEF OP_BOOL = 11
DEF OP_DOUBLE = 12
DEF OP_UTF8 = 13        # a: length-prefix width (1-4)
DEF OP_DECIMAL = 14     # a: precision, b: scale
DEF OP_DATE = 15
DEF OP_DATETIME2 = 16   # a: fsp
DEF OP_TIMESTAMP2 = 17  # a: fsp
DEF OP_TIME2 = 18       # a: fsp
DEF OP_YEAR = 19
DEF OP_ENUM = 20        # a: byte size; obj: labels tuple
DEF OP_PY_FIXED = 21    # a: byte size; obj: f(raw, off) -> value
DEF OP_PY_VAR = 22      # obj: f(raw, off) -> (value, new off)
DEF OP_PY_PAYLOAD = 23  # a: length-prefix width; obj: f(bytes) -> value

cdef int _DIG2BYTES[10]
_DIG2BYTES[:] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4]
cdef uint32_t _POW10[10]
_POW10[:] = [1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000]


class RowDecodeError(ValueError):
    """A row image this plan cannot read; ``column`` is the index of the column it was on."""

    def __init__(self, column, message):
        super().__init__(message)
        self.column = column


cdef inline uint64_t _be(const unsigned char *p, int n):
    cdef uint64_t v = 0
    cdef int i
    for i in range(n):
        v = (v << 8) | p[i]
    return v


cdef inline uint64_t _le(const unsigned char *p, int n):
    cdef uint64_t v = 0
    cdef int i
    for i in range(n - 1, -1, -1):
        v = (v << 8) | p[i]
    return v


cdef inline int _put2(char *out, int v):
    out[0] = <char>(48 + (v // 10) % 10)
    out[1] = <char>(48 + v % 10)
    return 2


cdef inline int _put4(char *out, int v):
    out[0] = <char>(48 + (v // 1000) % 10)
    out[1] = <char>(48 + (v // 100) % 10)
    out[2] = <char>(48 + (v // 10) % 10)
    out[3] = <char>(48 + v % 10)
    return 4


cdef inline int _put_digits(char *out, uint64_t v, int width):
    """``v`` zero-padded to ``width`` digits (the rightmost ``width`` if it has more)."""
    cdef int i
    for i in range(width - 1, -1, -1):
        out[i] = <char>(48 + v % 10)
        v //= 10
    return width


cdef int _fraction(const unsigned char *p, int fsp, char *out, int *used, int *all_zero):
    """TIME2/DATETIME2/TIMESTAMP2 fractional seconds as ``.ddd`` into out; returns length.

    -1 when the stored value has more digits than its width (never written by MySQL): the
    caller then lets the reference helper format it.
    """
    cdef uint64_t v
    cdef char digits[6]
    cdef int i
    if fsp == 0:
        used[0] = 0
        all_zero[0] = 1
        return 0
    if fsp <= 2:
        v = p[0]
        used[0] = 1
        if v > 99:
            return -1
        _put_digits(digits, v, 2)
    elif fsp <= 4:
        v = _be(p, 2)
        used[0] = 2
        if v > 9999:
            return -1
        _put_digits(digits, v, 4)
    else:
        v = _be(p, 3)
        used[0] = 3
        if v > 999999:
            return -1
        _put_digits(digits, v, 6)
    out[0] = b'.'
    all_zero[0] = 1
    for i in range(fsp):
        out[1 + i] = digits[i]
        if digits[i] != b'0':
            all_zero[0] = 0
    return 1 + fsp


cdef class RowPlan:
    """One table layout's decoding plan (see the module docstring)."""

    cdef int ncols
    cdef int nbytes
    cdef int *ops
    cdef int *a
    cdef int *b
    cdef tuple objs
    cdef object fragment
    cdef object _raw  # the buffer being decoded, for the reference fallbacks

    def __cinit__(self, ops, a, b, objs, fragment):
        cdef int n = len(ops)
        cdef int i
        self.ncols = n
        self.nbytes = (n + 7) // 8
        self.ops = <int *>malloc(sizeof(int) * (n + 1))
        self.a = <int *>malloc(sizeof(int) * (n + 1))
        self.b = <int *>malloc(sizeof(int) * (n + 1))
        if self.ops == NULL or self.a == NULL or self.b == NULL:
            raise MemoryError()
        for i in range(n):
            self.ops[i] = ops[i]
            self.a[i] = a[i]
            self.b[i] = b[i]
        self.objs = tuple(objs)
        self.fragment = fragment

    def __dealloc__(self):
        free(self.ops)
        free(self.a)
        free(self.b)

    def decode(self, bytes raw, Py_ssize_t off):
        """One row image at ``off`` -> (values, offset after it)."""
        cdef Py_ssize_t end = PyBytes_GET_SIZE(raw)
        self._raw = raw
        try:
            row = self._row(raw, &off, end)
        finally:
            self._raw = None
        return row, off

    def decode_event(self, bytes raw, Py_ssize_t off, Py_ssize_t end, int kind):
        """Every row of a rows event body: a list of (before, after) pairs.

        ``kind``: 0 insert (after images), 1 update (before and after), 2 delete (before).
        """
        cdef list rows = []
        cdef Py_ssize_t size = PyBytes_GET_SIZE(raw)
        if end > size:
            raise RowDecodeError(-1, f"rows event ends at {end} past its {size} bytes")
        self._raw = raw
        try:
            while off < end:
                first = self._row(raw, &off, end)
                if kind == 1:
                    second = self._row(raw, &off, end)
                    rows.append((first, second))
                elif kind == 0:
                    rows.append((None, first))
                else:
                    rows.append((first, None))
        finally:
            self._raw = None
        return rows

    cdef list _row(self, bytes raw, Py_ssize_t *offp, Py_ssize_t end):
        cdef const unsigned char *buf = <const unsigned char *>PyBytes_AS_STRING(raw)
        cdef Py_ssize_t off = offp[0]
        cdef const unsigned char *nulls = buf + off
        cdef list row = PyList_New(self.ncols)
        cdef int i, op, width, used, zero, n2
        cdef Py_ssize_t n, need
        cdef object v
        if off + self.nbytes > end:
            raise RowDecodeError(0, "row image truncated in its null bitmap")
        off += self.nbytes
        for i in range(self.ncols):
            if nulls[i >> 3] & (1 << (i & 7)):
                v = None
            else:
                op = self.ops[i]
                try:
                    v = self._value(raw, buf, &off, end, i, op)
                except RowDecodeError:
                    raise
                except Exception as exc:
                    raise RowDecodeError(i, repr(exc)) from exc
            Py_INCREF(v)
            PyList_SET_ITEM(row, i, v)
        offp[0] = off
        return row

    cdef object _value(self, bytes raw, const unsigned char *buf, Py_ssize_t *offp,
                       Py_ssize_t end, int i, int op):
        cdef Py_ssize_t off = offp[0]
        cdef const unsigned char *p = buf + off
        cdef Py_ssize_t n
        cdef int size, width, used, zero, k
        cdef int64_t sv
        cdef uint64_t uv
        cdef double d
        cdef char text[96]
        cdef object v
        if op <= OP_BOOL:
            size = 1
            if op == OP_I16 or op == OP_U16:
                size = 2
            elif op == OP_I24 or op == OP_U24:
                size = 3
            elif op == OP_I32 or op == OP_U32:
                size = 4
            elif op == OP_I64 or op == OP_U64:
                size = 8
            if off + size > end:
                raise RowDecodeError(i, "row image truncated")
            uv = _le(p, size)
            offp[0] = off + size
            if op == OP_BOOL:
                return uv != 0
            if op == OP_U8 or op == OP_U16 or op == OP_U24 or op == OP_U32 or op == OP_U64:
                return PyLong_FromUnsignedLongLong(uv)
            if size < 8 and uv >> (8 * size - 1):
                sv = <int64_t>(uv | (~<uint64_t>0 << (8 * size)))
            else:
                sv = <int64_t>uv
            return PyLong_FromLongLong(sv)
        if op == OP_DOUBLE:
            if off + 8 > end:
                raise RowDecodeError(i, "row image truncated")
            memcpy(&d, p, 8)
            offp[0] = off + 8
            return PyFloat_FromDouble(d)
        if op == OP_UTF8 or op == OP_PY_PAYLOAD:
            width = self.a[i]
            if off + width > end:
                raise RowDecodeError(i, "row image truncated")
            n = <Py_ssize_t>_le(p, width)
            if off + width + n > end:
                raise RowDecodeError(i, f"value of {n} bytes runs past the row image")
            offp[0] = off + width + n
            if op == OP_UTF8:
                return PyUnicode_DecodeUTF8(<const char *>(p + width), n, "strict")
            return self.objs[i](PyBytes_FromStringAndSize(<const char *>(p + width), n))
        if op == OP_DECIMAL:
            return self._decimal(p, offp, end, i)
        if op == OP_DATETIME2:
            return self._datetime2(p, offp, end, i)
        if op == OP_TIMESTAMP2:
            return self._timestamp2(p, offp, end, i)
        if op == OP_DATE:
            if off + 3 > end:
                raise RowDecodeError(i, "row image truncated")
            uv = _le(p, 3)
            if uv >> 9 > 9999:
                return self._reference(i, offp)
            offp[0] = off + 3
            if (uv >> 5) & 15 == 0 or uv & 31 == 0:
                return None
            k = _put4(text, <int>(uv >> 9))
            text[4] = b'-'
            _put2(text + 5, <int>((uv >> 5) & 15))
            text[7] = b'-'
            _put2(text + 8, <int>(uv & 31))
            return PyUnicode_FromStringAndSize(text, 10)
        if op == OP_TIME2:
            return self._time2(p, offp, end, i)
        if op == OP_YEAR:
            if off + 1 > end:
                raise RowDecodeError(i, "row image truncated")
            offp[0] = off + 1
            return PyLong_FromLongLong(p[0] + 1900 if p[0] else 0)
        if op == OP_ENUM:
            size = self.a[i]
            if off + size > end:
                raise RowDecodeError(i, "row image truncated")
            uv = _le(p, size)
            offp[0] = off + size
            labels = self.objs[i]
            if 0 < uv <= <uint64_t>PyTuple_GET_SIZE(labels):
                return <object>PyTuple_GET_ITEM(labels, uv - 1)
            return ""
        if op == OP_PY_FIXED:
            size = self.a[i]
            if off + size > end:
                raise RowDecodeError(i, "row image truncated")
            v = self.objs[i](raw, off)
            offp[0] = off + size
            return v
        if op == OP_PY_VAR:
            v, new_off = self.objs[i](raw, off)
            if new_off > end:
                raise RowDecodeError(i, "row image truncated")
            offp[0] = new_off
            return v
        raise RowDecodeError(i, f"unknown opcode {op}")

    cdef object _reference(self, int i, Py_ssize_t *offp, Py_ssize_t size=-1):
        """A value outside what MySQL writes: the reference helper formats it.

        ``objs[i]`` is ``f(raw, off) -> (value, new off)``, or for DECIMAL (``size`` given)
        ``f(bytes) -> value``.
        """
        cdef Py_ssize_t off = offp[0]
        raw = self._raw
        if size >= 0:
            offp[0] = off + size
            return self.objs[i](raw[off:off + size])
        v, new_off = self.objs[i](raw, off)
        offp[0] = new_off
        return v

    cdef object _decimal(self, const unsigned char *p, Py_ssize_t *offp, Py_ssize_t end, int i):
        cdef int precision = self.a[i], scale = self.b[i]
        cdef int intg = precision - scale
        cdef int lead = _DIG2BYTES[intg % 9], trail = _DIG2BYTES[scale % 9]
        cdef int size = (intg // 9) * 4 + lead + (scale // 9) * 4 + trail
        cdef unsigned char buf[40]
        cdef char text[96]
        cdef int k, pos = 0, t = 0, g, started = 0, negative, nonzero = 0
        cdef uint32_t group
        cdef Py_ssize_t off = offp[0]
        if size > 40:
            raise RowDecodeError(i, f"DECIMAL({precision},{scale}) is wider than MySQL allows")
        if off + size > end:
            raise RowDecodeError(i, "row image truncated")
        memcpy(buf, p, size)
        negative = not (buf[0] & 0x80)
        buf[0] ^= 0x80
        if negative:
            for k in range(size):
                buf[k] ^= 0xFF
        t = 1  # text[0] is kept for the sign
        if lead:
            group = <uint32_t>_be(buf, lead)
            pos = lead
            if group >= _POW10[intg % 9]:
                return self._reference(i, offp, size)
            if group:
                t += snprintf(text + t, 12, "%u", group)
                started = 1
                nonzero = 1
        for g in range(intg // 9):
            group = <uint32_t>_be(buf + pos, 4)
            pos += 4
            if group > 999999999:
                return self._reference(i, offp, size)
            if started:
                t += _put_digits(text + t, group, 9)
            elif group:
                t += snprintf(text + t, 12, "%u", group)
                started = 1
            if group:
                nonzero = 1
        if not started:
            text[t] = b'0'
            t += 1
        if scale:
            text[t] = b'.'
            t += 1
            for g in range(scale // 9):
                group = <uint32_t>_be(buf + pos, 4)
                pos += 4
                if group > 999999999:
                    return self._reference(i, offp, size)
                t += _put_digits(text + t, group, 9)
                if group:
                    nonzero = 1
            if trail:
                group = <uint32_t>_be(buf + pos, trail)
                if group >= _POW10[scale % 9]:
                    return self._reference(i, offp, size)
                t += _put_digits(text + t, group, scale % 9)
                if group:
                    nonzero = 1
        offp[0] = off + size
        if negative and nonzero:
            text[0] = b'-'
            return self.fragment(PyUnicode_FromStringAndSize(text, t))
        return self.fragment(PyUnicode_FromStringAndSize(text + 1, t - 1))

    cdef object _datetime2(self, const unsigned char *p, Py_ssize_t *offp, Py_ssize_t end,
                           int i):
        cdef int fsp = self.a[i], used, zero, t
        cdef Py_ssize_t off = offp[0]
        cdef int64_t packed
        cdef int64_t ymd, ym, hms
        cdef int year, month, day
        cdef char text[40]
        if off + 5 + (fsp + 1) // 2 > end:
            raise RowDecodeError(i, "row image truncated")
        packed = <int64_t>_be(p, 5) - 0x8000000000
        ymd = packed >> 17
        ym = ymd >> 5
        year = <int>(ym // 13)
        month = <int>(ym % 13)
        day = <int>(ymd & 31)
        hms = packed & 0x1FFFF
        t = _fraction(p + 5, fsp, text + 19, &used, &zero)
        if t < 0 or packed < 0 or year > 9999:
            return self._reference(i, offp)
        offp[0] = off + 5 + used
        if month == 0 or day == 0:
            return None
        _put4(text, year)
        text[4] = b'-'
        _put2(text + 5, month)
        text[7] = b'-'
        _put2(text + 8, day)
        text[10] = b' '
        _put2(text + 11, <int>(hms >> 12))
        text[13] = b':'
        _put2(text + 14, <int>((hms >> 6) & 63))
        text[16] = b':'
        _put2(text + 17, <int>(hms & 63))
        return PyUnicode_FromStringAndSize(text, 19 + t)

    cdef object _timestamp2(self, const unsigned char *p, Py_ssize_t *offp, Py_ssize_t end,
                            int i):
        cdef int fsp = self.a[i], used, zero, t
        cdef Py_ssize_t off = offp[0]
        cdef time_t seconds
        cdef tm parts
        cdef char text[40]
        if off + 4 + (fsp + 1) // 2 > end:
            raise RowDecodeError(i, "row image truncated")
        seconds = <time_t>_be(p, 4)
        t = _fraction(p + 4, fsp, text + 19, &used, &zero)
        if t < 0:
            return self._reference(i, offp)
        offp[0] = off + 4 + used
        if seconds == 0 and zero:
            return None
        if gmtime_r(&seconds, &parts) == NULL:
            raise RowDecodeError(i, f"TIMESTAMP {seconds} out of range")
        _put4(text, parts.tm_year + 1900)
        text[4] = b'-'
        _put2(text + 5, parts.tm_mon + 1)
        text[7] = b'-'
        _put2(text + 8, parts.tm_mday)
        text[10] = b' '
        _put2(text + 11, parts.tm_hour)
        text[13] = b':'
        _put2(text + 14, parts.tm_min)
        text[16] = b':'
        _put2(text + 17, parts.tm_sec)
        text[19 + t] = b'Z'
        return PyUnicode_FromStringAndSize(text, 20 + t)

    cdef object _time2(self, const unsigned char *p, Py_ssize_t *offp, Py_ssize_t end, int i):
        cdef int fsp = self.a[i], size, t = 0
        cdef Py_ssize_t off = offp[0]
        cdef int64_t packed, intpart, frac = 0, hms, micros, hours
        cdef char text[40]
        size = 6 if fsp >= 5 else (4 if fsp in (1, 2) else (5 if fsp in (3, 4) else 3))
        if off + size > end:
            raise RowDecodeError(i, "row image truncated")
        if fsp >= 5:
            packed = <int64_t>_be(p, 6) - 0x800000000000
        else:
            intpart = <int64_t>_be(p, 3) - 0x800000
            if fsp == 1 or fsp == 2:
                frac = p[3]
                if intpart < 0 and frac:
                    intpart += 1
                    frac -= 0x100
                frac *= 10000
            elif fsp == 3 or fsp == 4:
                frac = <int64_t>_be(p + 3, 2)
                if intpart < 0 and frac:
                    intpart += 1
                    frac -= 0x10000
                frac *= 100
            packed = intpart * (1 << 24) + frac
        if (packed if packed >= 0 else -packed) % (1 << 24) > 999999:
            return self._reference(i, offp)
        offp[0] = off + size
        if packed < 0:
            text[0] = b'-'
            t = 1
            packed = -packed
        hms = packed >> 24
        micros = packed % (1 << 24)
        hours = (hms >> 12) % (1 << 10)
        if hours >= 100:
            t += snprintf(text + t, 8, "%d", <int>hours)
        else:
            t += _put2(text + t, <int>hours)
        text[t] = b':'
        t += 1
        t += _put2(text + t, <int>((hms >> 6) % 64))
        text[t] = b':'
        t += 1
        t += _put2(text + t, <int>(hms % 64))
        if fsp:
            text[t] = b'.'
            t += 1
            _put_digits(text + t, <uint64_t>micros, 6)
            t += fsp
        return PyUnicode_FromStringAndSize(text, t)
