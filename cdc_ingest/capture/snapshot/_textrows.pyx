# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, embedsignature=True
"""Compiled reading of a SELECT's text-protocol rows: packets -> changelog key and row JSON.

The snapshot's twin of PyMySQL's row reading plus :meth:`TableInfo.row` and orjson
(``cdc_ingest.capture.snapshot.textrows`` feeds it the socket's bytes). Each column has a
kind, chosen in Python (:func:`cdc_ingest.capture.snapshot.values.text_kind`); the common
kinds are written here straight from the field's bytes, exactly as PyMySQL's value after the
snapshot's conversion reads in orjson. A field a fast kind cannot prove it writes exactly
(non-ASCII digits, invalid UTF-8, a short date) and every other kind go through the
column's Python conversion, the same one the pure-Python path runs. The unit tests hold
both paths to the same bytes; the integration tests do the same against both servers.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_SetItem
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

# Column kinds (keep in step with cdc_ingest.capture.snapshot.values)
DEF K_GENERIC = 0    # the column's Python conversion: field bytes -> JSON bytes
DEF K_INT = 1        # int(text): the canonical integer
DEF K_BOOL = 2       # int(text) != 0
DEF K_STR = 3        # UTF-8 text as a JSON string
DEF K_DATE = 4       # DATE / DATETIME text, a zero date is null
DEF K_TIMESTAMP = 5  # the same with "Z"
DEF K_DECIMAL = 6    # DECIMAL: its text without leading zeros is the JSON number

DEF MAX_PACKET = 0xFFFFFF
DEF NEED_MORE = 0
DEF AT_EOF = 1
DEF AT_ERROR = 2

include "../_writing.pxi"


class PacketError(Exception):
    """The server's bytes are not the row packets the result set promised."""


cdef inline bint _int_text(const unsigned char *s, Py_ssize_t n) noexcept:
    """An optional minus, then one or more ASCII digits."""
    cdef Py_ssize_t i = 1 if n > 0 and s[0] == b'-' else 0
    if i >= n:
        return False
    while i < n:
        if s[i] < b'0' or s[i] > b'9':
            return False
        i += 1
    return True


cdef inline bint _decimal_text(const unsigned char *s, Py_ssize_t n) noexcept:
    """An optional minus, one or more ASCII digits, then maybe a point and digits."""
    cdef Py_ssize_t i = 1 if n > 0 and s[0] == b'-' else 0
    cdef Py_ssize_t digits = 0
    while i < n and b'0' <= s[i] <= b'9':
        i += 1
        digits += 1
    if digits == 0:
        return False
    if i < n and s[i] == b'.':
        i += 1
        while i < n and b'0' <= s[i] <= b'9':
            i += 1
    return i == n


cdef inline bint _utf8(const unsigned char *s, Py_ssize_t n) noexcept:
    """Strict UTF-8, as Python's decoder takes it (no overlongs, surrogates, > U+10FFFF)."""
    cdef Py_ssize_t i = 0
    cdef unsigned char c, lo, hi
    cdef int more, j
    while i < n:
        c = s[i]
        if c < 0x80:
            i += 1
            continue
        lo, hi = 0x80, 0xBF
        if 0xC2 <= c <= 0xDF:
            more = 1
        elif c == 0xE0:
            more, lo = 2, 0xA0
        elif 0xE1 <= c <= 0xEC or c == 0xEE or c == 0xEF:
            more = 2
        elif c == 0xED:
            more, hi = 2, 0x9F
        elif c == 0xF0:
            more, lo = 3, 0x90
        elif 0xF1 <= c <= 0xF3:
            more = 3
        elif c == 0xF4:
            more, hi = 3, 0x8F
        else:
            return False
        if i + more >= n:
            return False
        if s[i + 1] < lo or s[i + 1] > hi:
            return False
        for j in range(2, more + 1):
            if s[i + j] < 0x80 or s[i + j] > 0xBF:
                return False
        i += more + 1
    return True


cdef class TextRows:
    """Parses one result set's row packets into ``rows[key] = (key, row)``, both JSON bytes.

    ``kinds``/``generic``: per SELECT column, its kind and (for K_GENERIC, or a field a fast
    kind refuses) its conversion ``bytes -> JSON bytes``; ``out``: the row's columns, each
    ``(b'"name":', column index or -1 for null)``; ``key``: the same for the key columns;
    ``seq``: the first row packet's sequence number.
    :meth:`feed` takes the socket's bytes as they come.
    """

    cdef Py_ssize_t ncols
    cdef int *kinds
    cdef list generic
    cdef list out_names, key_names
    cdef Py_ssize_t *out_src
    cdef Py_ssize_t *key_src
    cdef Py_ssize_t nout, nkey
    cdef public int seq          # the next packet's sequence number
    cdef public object last      # the EOF or ERR packet's payload
    cdef public Py_ssize_t count  # rows parsed
    cdef list pieces             # a packet not complete yet, as it came (None: none)
    cdef Py_ssize_t have, need   # its bytes so far, and how many it must have to go on
    cdef dict rows               # where the rows go
    cdef const unsigned char **fptr  # a row's fields: start, length (-1: NULL)
    cdef Py_ssize_t *flen
    cdef char *vbuf              # the current row's values, as JSON
    cdef Py_ssize_t vcap
    cdef Py_ssize_t *voff
    cdef Py_ssize_t *vlen
    cdef char *obuf              # the key, then the row, being written
    cdef Py_ssize_t ocap

    def __cinit__(self, list kinds, list generic, list out, list key, int seq, dict rows):
        cdef Py_ssize_t i
        self.ncols = len(kinds)
        self.nout, self.nkey = len(out), len(key)
        self.kinds = <int *>malloc(sizeof(int) * (self.ncols + 1))
        self.out_src = <Py_ssize_t *>malloc(sizeof(Py_ssize_t) * (self.nout + 1))
        self.key_src = <Py_ssize_t *>malloc(sizeof(Py_ssize_t) * (self.nkey + 1))
        self.fptr = <const unsigned char **>malloc(sizeof(char *) * (self.ncols + 1))
        self.flen = <Py_ssize_t *>malloc(sizeof(Py_ssize_t) * (self.ncols + 1))
        self.voff = <Py_ssize_t *>malloc(sizeof(Py_ssize_t) * (self.ncols + 1))
        self.vlen = <Py_ssize_t *>malloc(sizeof(Py_ssize_t) * (self.ncols + 1))
        self.vcap = self.ocap = 4096
        self.vbuf = <char *>malloc(self.vcap)
        self.obuf = <char *>malloc(self.ocap)
        if (self.kinds == NULL or self.out_src == NULL or self.key_src == NULL
                or self.fptr == NULL or self.flen == NULL or self.voff == NULL
                or self.vlen == NULL or self.vbuf == NULL or self.obuf == NULL):
            raise MemoryError()
        for i in range(self.ncols):
            self.kinds[i] = kinds[i]
        self.generic = generic
        self.out_names = [name for name, _ in out]
        self.key_names = [name for name, _ in key]
        for i in range(self.nout):
            self.out_src[i] = out[i][1]
        for i in range(self.nkey):
            self.key_src[i] = key[i][1]
            if self.key_src[i] < 0:
                raise ValueError("a key column must be selected")
        self.seq = seq
        self.rows = rows
        self.last = None
        self.count = 0
        self.pieces = None

    def __dealloc__(self):
        free(self.kinds)
        free(self.out_src)
        free(self.key_src)
        free(self.fptr)
        free(self.flen)
        free(self.voff)
        free(self.vlen)
        free(self.vbuf)
        free(self.obuf)

    # -- writing -----------------------------------------------------------------------

    cdef inline int _vroom(self, Py_ssize_t want) except -1:
        return 0 if want <= self.vcap else _grow(&self.vbuf, &self.vcap, want)

    cdef inline int _oroom(self, Py_ssize_t want) except -1:
        return 0 if want <= self.ocap else _grow(&self.obuf, &self.ocap, want)

    cdef Py_ssize_t _generic(self, Py_ssize_t col, Py_ssize_t at,
                             const unsigned char *s, Py_ssize_t n) except -1:
        cdef bytes raw = PyBytes_FromStringAndSize(<const char *>s, n)
        cdef bytes value = self.generic[col](raw)
        cdef Py_ssize_t m = PyBytes_GET_SIZE(value)
        self._vroom(at + m)
        memcpy(self.vbuf + at, PyBytes_AS_STRING(value), m)
        return at + m

    cdef Py_ssize_t _value(self, Py_ssize_t col, Py_ssize_t at,
                           const unsigned char *s, Py_ssize_t n) except -1:
        """Column ``col``'s field (``n`` -1: NULL) as JSON at ``at`` in vbuf; the new end."""
        cdef int kind = self.kinds[col]
        cdef Py_ssize_t i, start
        cdef unsigned char c
        cdef char *o
        if n < 0:
            self._vroom(at + 4)
            memcpy(self.vbuf + at, b"null", 4)
            return at + 4
        if kind == K_INT and _int_text(s, n):
            self._vroom(at + n)
            o = self.vbuf
            i = 0
            if s[0] == b'-':
                i = 1
            start = i
            while i < n - 1 and s[i] == b'0':
                i += 1
            if n - i > 18:  # perhaps beyond 64 bits, which orjson refuses: as Python does
                return self._generic(col, at, s, n)
            if s[i] == b'0':  # zero: no sign
                o[at] = b'0'
                return at + 1
            if start:
                o[at] = b'-'
                at += 1
            memcpy(o + at, s + i, n - i)
            return at + n - i
        if kind == K_BOOL and _int_text(s, n):
            self._vroom(at + 5)
            for i in range(n):
                if s[i] != b'0' and s[i] != b'-':
                    memcpy(self.vbuf + at, b"true", 4)
                    return at + 4
            memcpy(self.vbuf + at, b"false", 5)
            return at + 5
        if kind == K_STR and _utf8(s, n):
            self._vroom(at + 6 * n + 2)
            return _escaped(self.vbuf, at, s, n)
        if (kind == K_DATE or kind == K_TIMESTAMP) and n >= 10:
            for i in range(n):
                c = s[i]
                if not (b'0' <= c <= b'9' or c == b'-' or c == b':' or c == b' '
                        or c == b'.'):
                    return self._generic(col, at, s, n)
            self._vroom(at + n + 3)
            if (s[5] == b'0' and s[6] == b'0') or (s[8] == b'0' and s[9] == b'0'):
                memcpy(self.vbuf + at, b"null", 4)
                return at + 4
            o = self.vbuf
            o[at] = b'"'
            memcpy(o + at + 1, s, n)
            at += n + 1
            if kind == K_TIMESTAMP:
                o[at] = b'Z'
                at += 1
            o[at] = b'"'
            return at + 1
        if kind == K_DECIMAL and _decimal_text(s, n):
            self._vroom(at + n)
            o = self.vbuf
            i = 0
            if s[0] == b'-':
                o[at] = b'-'
                at += 1
                i = 1
            while i < n - 1 and s[i] == b'0' and s[i + 1] != b'.':
                i += 1
            memcpy(o + at, s + i, n - i)
            return at + n - i
        return self._generic(col, at, s, n)

    cdef Py_ssize_t _object(self, Py_ssize_t at, list names, Py_ssize_t *src,
                            Py_ssize_t count) except -1:
        """``{"name":value,...}`` at ``at`` in obuf from the row's values; the new end."""
        cdef Py_ssize_t i, c, m
        cdef bytes name
        self._oroom(at + 1)
        self.obuf[at] = b'{'
        at += 1
        for i in range(count):
            name = <bytes>names[i]
            m = PyBytes_GET_SIZE(name)
            c = src[i]
            self._oroom(at + m + 5 + (self.vlen[c] if c >= 0 else 4))
            if i:
                self.obuf[at] = b','
                at += 1
            memcpy(self.obuf + at, PyBytes_AS_STRING(name), m)
            at += m
            if c < 0:
                memcpy(self.obuf + at, b"null", 4)
                at += 4
            else:
                memcpy(self.obuf + at, self.vbuf + self.voff[c], self.vlen[c])
                at += self.vlen[c]
        self.obuf[at] = b'}'
        return at + 1

    # -- parsing -----------------------------------------------------------------------

    cdef int _row(self, const unsigned char *p, Py_ssize_t n) except -1:
        cdef Py_ssize_t i = 0, col, length, at = 0, kend
        cdef unsigned char c
        cdef bytes key, row
        for col in range(self.ncols):
            if i >= n:
                raise PacketError(f"a row packet has {col} of {self.ncols} fields")
            c = p[i]
            i += 1
            if c == 0xFB:
                length = -1
            elif c < 0xFB:
                length = c
            elif c == 0xFC and i + 2 <= n:
                length = p[i] | (p[i + 1] << 8)
                i += 2
            elif c == 0xFD and i + 3 <= n:
                length = p[i] | (p[i + 1] << 8) | (p[i + 2] << 16)
                i += 3
            elif c == 0xFE and i + 8 <= n:
                length = 0
                for kend in range(7, -1, -1):
                    length = (length << 8) | p[i + kend]
                i += 8
            else:
                raise PacketError("a row packet's field length is cut short")
            if length > n - i:
                raise PacketError("a row packet's field runs past its end")
            self.fptr[col] = p + i
            self.flen[col] = length
            if length > 0:
                i += length
        if i != n:
            raise PacketError(f"a row packet has {n - i} bytes after its {self.ncols} fields")
        for col in range(self.ncols):
            self.voff[col] = at
            at = self._value(col, at, self.fptr[col], self.flen[col])
            self.vlen[col] = at - self.voff[col]
        kend = self._object(0, self.key_names, self.key_src, self.nkey)
        key = PyBytes_FromStringAndSize(self.obuf, kend)
        at = self._object(0, self.out_names, self.out_src, self.nout)
        row = PyBytes_FromStringAndSize(self.obuf, at)
        PyDict_SetItem(self.rows, key, (key, row))
        self.count += 1
        return 0

    cdef int _payload(self, const unsigned char *p, Py_ssize_t n) except -1:
        """One whole payload: a row, or the result set's end (EOF) or an error."""
        if n > 0 and p[0] == 0xFF:
            self.last = PyBytes_FromStringAndSize(<const char *>p, n)
            return AT_ERROR
        if n > 0 and p[0] == 0xFE and n < 9:
            self.last = PyBytes_FromStringAndSize(<const char *>p, n)
            return AT_EOF
        self._row(p, n)
        return NEED_MORE

    cdef int _expect(self, int seq) except -1:
        if seq != self.seq:
            raise PacketError(f"packet sequence number wrong - got {seq} expected {self.seq}")
        self.seq = (self.seq + 1) % 256
        return 0

    def feed(self, bytes data):
        """Parse the complete packets of what has come so far (``data`` is the next bytes
        from the socket) into the rows; 0: more to come, 1: the end (``last`` is the EOF
        packet), 2: the server sent an error (``last``). A packet not complete yet waits,
        in pieces, until all its bytes are there: a long row is joined once, not per read."""
        cdef bytes buf
        cdef const unsigned char *p
        cdef Py_ssize_t n, at = 0, length, scan, total, want = 0
        cdef int state = NEED_MORE
        cdef list parts
        if self.pieces is not None:
            self.pieces.append(data)
            self.have += PyBytes_GET_SIZE(data)
            if self.have < self.need:
                return NEED_MORE
            buf = b"".join(self.pieces)
            self.pieces = None
        else:
            buf = data
        p = <const unsigned char *>PyBytes_AS_STRING(buf)
        n = PyBytes_GET_SIZE(buf)
        while state == NEED_MORE and at < n:
            if n - at < 4:
                want = at + 4
                break
            length = p[at] | (p[at + 1] << 8) | (p[at + 2] << 16)
            if length < MAX_PACKET:
                if n - at - 4 < length:
                    want = at + 4 + length
                    break
                self._expect(p[at + 3])
                state = self._payload(p + at + 4, length)
                at += 4 + length
                continue
            # a payload of 16 MiB or more: packets of MAX_PACKET, then a shorter one
            scan, total = at, 0
            while True:
                if n - scan < 4:
                    want = scan + 4
                    break
                length = p[scan] | (p[scan + 1] << 8) | (p[scan + 2] << 16)
                if n - scan - 4 < length:
                    want = scan + 4 + length
                    break
                total += length
                scan += 4 + length
                if length < MAX_PACKET:
                    break
            if want:
                break
            parts = []
            while at < scan:
                length = p[at] | (p[at + 1] << 8) | (p[at + 2] << 16)
                self._expect(p[at + 3])
                parts.append(PyBytes_FromStringAndSize(<const char *>p + at + 4, length))
                at += 4 + length
            whole = b"".join(parts)
            state = self._payload(<const unsigned char *>PyBytes_AS_STRING(whole), total)
        if at < n:
            if state != NEED_MORE:
                raise PacketError(f"{n - at} bytes came after the result set's last packet")
            self.pieces = [buf[at:]]
            self.have = n - at
            self.need = want - at
        return state
