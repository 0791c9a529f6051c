# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, embedsignature=True
"""Compiled twin of :class:`cdc_ingest.verify.rowbytes.RowBytes` for a batch of row packets.

Each column has a code chosen in Python (:func:`cdc_ingest.verify.rowbytes.plan_of`, the
same decision that picks the Python plan): a fast form is written here only where the field's
bytes pass the very check the Python plan's regular expression makes; every other field, and
every column of code ``C_OTHER``, goes through the column's Python fragment (the ordinary
conversion). So the bytes are the Python ``RowBytes``'s; the unit tests hold the two to the
same bytes field by field. The JSON string writer is verify's own copy (not capture's: verify
checks capture), held to orjson by the tests.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

DEF C_OTHER = 0     # the Python fragment
DEF C_INT = 1       # 0|-?[1-9][0-9]*, as it is
DEF C_BOOL = 2      # "0": false; an integer: true
DEF C_DECIMAL = 3   # -?(0|[1-9][0-9]*)\.[0-9]{scale} (scale 0: an integer), as it is
DEF C_DATETIME = 4  # a date (day 01..28), " HH:MM:SS", fsp fraction digits; quoted
DEF C_DATE = 5      # a date (day 01..28); quoted
DEF C_UTF8 = 6      # strict UTF-8 text as orjson writes the str

cdef const char *_HEX = b"0123456789abcdef"


cdef inline bint _digits(const unsigned char *s, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    for i in range(n):
        if s[i] < 48 or s[i] > 57:
            return False
    return True


cdef inline bint _int(const unsigned char *s, Py_ssize_t n) noexcept:
    """0|-?[1-9][0-9]*"""
    if n == 1 and s[0] == 48:
        return True
    if n > 0 and s[0] == 45:
        s += 1
        n -= 1
    return n > 0 and 49 <= s[0] <= 57 and _digits(s + 1, n - 1)


cdef inline bint _decimal(const unsigned char *s, Py_ssize_t n, int scale) noexcept:
    """-?(?:0|[1-9][0-9]*)\\.[0-9]{scale}"""
    cdef Py_ssize_t whole = n - scale - 1
    if scale == 0:
        return _int(s, n)
    if whole < 1 or s[whole] != 46 or not _digits(s + whole + 1, scale):
        return False
    if s[0] == 45:
        s += 1
        whole -= 1
    if whole == 1 and s[0] == 48:
        return True
    return whole > 0 and 49 <= s[0] <= 57 and _digits(s + 1, whole - 1)


cdef inline bint _date(const unsigned char *s) noexcept:
    """(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-(?:0[1-9]|1[0-2])
    -(?:0[1-9]|1[0-9]|2[0-8]) on 10 bytes."""
    if not (_digits(s, 4) and s[4] == 45 and _digits(s + 5, 2) and s[7] == 45
            and _digits(s + 8, 2)):
        return False
    if s[0] == 48 and s[1] == 48 and s[2] == 48 and s[3] == 48:
        return False
    if not ((s[5] == 48 and s[6] != 48) or (s[5] == 49 and s[6] <= 50)):
        return False
    return (s[8] == 48 and s[9] != 48) or s[8] == 49 or (s[8] == 50 and s[9] <= 56)


cdef inline bint _datetime(const unsigned char *s, Py_ssize_t n, int fsp) noexcept:
    """date " (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]" and (fsp > 0) "\\.[0-9]{fsp}"."""
    if n != (19 if fsp == 0 else 20 + fsp) or not _date(s) or s[10] != 32:
        return False
    if not (_digits(s + 11, 2) and s[13] == 58 and _digits(s + 14, 2) and s[16] == 58
            and _digits(s + 17, 2)):
        return False
    if s[11] > 50 or (s[11] == 50 and s[12] > 51) or s[14] > 53 or s[17] > 53:
        return False
    return fsp == 0 or (s[19] == 46 and _digits(s + 20, fsp))


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


cdef inline Py_ssize_t _escaped(char *o, Py_ssize_t at, const unsigned char *s,
                                Py_ssize_t n) noexcept:
    """``s`` as orjson writes the str it decodes to (room for 6n+2 bytes at ``at``)."""
    cdef Py_ssize_t i
    cdef unsigned char c
    o[at] = 34
    at += 1
    for i in range(n):
        c = s[i]
        if c >= 0x20 and c != 0x22 and c != 0x5c:
            o[at] = <char>c
            at += 1
        elif c == 0x22 or c == 0x5c:
            o[at] = 92
            o[at + 1] = <char>c
            at += 2
        elif c == 0x08 or c == 0x09 or c == 0x0a or c == 0x0c or c == 0x0d:
            o[at] = 92
            o[at + 1] = b"btn?fr"[c - 0x08]
            at += 2
        else:
            memcpy(o + at, b"\\u00", 4)
            o[at + 4] = _HEX[c >> 4]
            o[at + 5] = _HEX[c & 15]
            at += 6
    o[at] = 34
    return at + 1


class PacketError(Exception):
    """A row packet shorter than its fields say."""


cdef class PacketBytes:
    """``(codes, params, suffixes, others, labels, key, value)``: per column its code, the
    scale or fsp, whether a datetime ends in Z, its Python fragment and ``b'"name":'``; the
    key columns' and the value columns' indexes. Called with a list of row packets: the
    rows' (keys, values) JSON bytes, two lists."""

    cdef Py_ssize_t ncols
    cdef int *codes
    cdef int *params
    cdef int *zulu
    cdef list others, labels
    cdef Py_ssize_t *keyix
    cdef Py_ssize_t *valix
    cdef Py_ssize_t nkey, nval
    cdef Py_ssize_t *off     # each column's text in buf: start, length
    cdef Py_ssize_t *size
    cdef char *buf
    cdef Py_ssize_t cap
    cdef char *out
    cdef Py_ssize_t ocap

    def __cinit__(self, list codes, list params, list suffixes, list others, list labels,
                  list key, list value):
        cdef Py_ssize_t i
        self.ncols = len(codes)
        self.nkey, self.nval = len(key), len(value)
        self.codes = <int *>malloc(sizeof(int) * (self.ncols + 1))
        self.params = <int *>malloc(sizeof(int) * (self.ncols + 1))
        self.zulu = <int *>malloc(sizeof(int) * (self.ncols + 1))
        self.off = <Py_ssize_t *>malloc(sizeof(Py_ssize_t) * (self.ncols + 1))
        self.size = <Py_ssize_t *>malloc(sizeof(Py_ssize_t) * (self.ncols + 1))
        self.keyix = <Py_ssize_t *>malloc(sizeof(Py_ssize_t) * (self.nkey + 1))
        self.valix = <Py_ssize_t *>malloc(sizeof(Py_ssize_t) * (self.nval + 1))
        self.cap, self.ocap = 4096, 4096
        self.buf = <char *>malloc(self.cap)
        self.out = <char *>malloc(self.ocap)
        if (self.codes == NULL or self.params == NULL or self.zulu == NULL or self.off == NULL
                or self.size == NULL or self.keyix == NULL or self.valix == NULL
                or self.buf == NULL or self.out == NULL):
            raise MemoryError()
        for i in range(self.ncols):
            self.codes[i], self.params[i], self.zulu[i] = codes[i], params[i], suffixes[i]
        for i in range(self.nkey):
            self.keyix[i] = key[i]
        for i in range(self.nval):
            self.valix[i] = value[i]
        self.others, self.labels = others, labels

    def __dealloc__(self):
        free(self.codes)
        free(self.params)
        free(self.zulu)
        free(self.off)
        free(self.size)
        free(self.keyix)
        free(self.valix)
        free(self.buf)
        free(self.out)

    cdef int _room(self, Py_ssize_t want) except -1:
        cdef char *grown
        if want <= self.cap:
            return 0
        while self.cap < want:
            self.cap *= 2
        grown = <char *>realloc(self.buf, self.cap)
        if grown == NULL:
            raise MemoryError()
        self.buf = grown
        return 0

    cdef int _oroom(self, Py_ssize_t want) except -1:
        cdef char *grown
        if want <= self.ocap:
            return 0
        while self.ocap < want:
            self.ocap *= 2
        grown = <char *>realloc(self.out, self.ocap)
        if grown == NULL:
            raise MemoryError()
        self.out = grown
        return 0

    cdef Py_ssize_t _field(self, Py_ssize_t col, Py_ssize_t at, const unsigned char *s,
                           Py_ssize_t n) except -1:
        """Column ``col``'s text for field ``s`` written at ``at`` of buf; the new end."""
        cdef int code = self.codes[col]
        cdef bytes text
        cdef Py_ssize_t size
        if code == C_INT or code == C_DECIMAL:
            if _decimal(s, n, self.params[col]) if code == C_DECIMAL else _int(s, n):
                self._room(at + n)
                memcpy(self.buf + at, s, n)
                return at + n
        elif code == C_BOOL:
            if n == 1 and s[0] == 48:
                self._room(at + 5)
                memcpy(self.buf + at, b"false", 5)
                return at + 5
            if _int(s, n):
                self._room(at + 4)
                memcpy(self.buf + at, b"true", 4)
                return at + 4
        elif code == C_DATETIME or code == C_DATE:
            if (_datetime(s, n, self.params[col]) if code == C_DATETIME
                    else n == 10 and _date(s)):
                self._room(at + n + 3)
                self.buf[at] = 34
                memcpy(self.buf + at + 1, s, n)
                at += n + 1
                if self.zulu[col]:
                    self.buf[at] = 90
                    at += 1
                self.buf[at] = 34
                return at + 1
        elif code == C_UTF8:
            if _utf8(s, n):
                self._room(at + 6 * n + 2)
                return _escaped(self.buf, at, s, n)
        text = self.others[col](PyBytes_FromStringAndSize(<const char *>s, n))
        size = PyBytes_GET_SIZE(text)
        self._room(at + size)
        memcpy(self.buf + at, PyBytes_AS_STRING(text), size)
        return at + size

    cdef bytes _object(self, Py_ssize_t *ix, Py_ssize_t count):
        """``{"name":text,...}`` of the columns ``ix``."""
        cdef Py_ssize_t i, c, at = 1, want = 2
        cdef bytes label
        for i in range(count):
            want += PyBytes_GET_SIZE(self.labels[ix[i]]) + self.size[ix[i]] + 1
        self._oroom(want)
        self.out[0] = 123
        for i in range(count):
            c = ix[i]
            if i:
                self.out[at] = 44
                at += 1
            label = self.labels[c]
            memcpy(self.out + at, PyBytes_AS_STRING(label), PyBytes_GET_SIZE(label))
            at += PyBytes_GET_SIZE(label)
            memcpy(self.out + at, self.buf + self.off[c], self.size[c])
            at += self.size[c]
        self.out[at] = 125
        return PyBytes_FromStringAndSize(self.out, at + 1)

    def __call__(self, list packets):
        cdef list keys = [], values = []
        cdef bytes packet
        cdef const unsigned char *p
        cdef Py_ssize_t n, at, end, col, size, width, k
        for packet in packets:
            p = <const unsigned char *>PyBytes_AS_STRING(packet)
            n = PyBytes_GET_SIZE(packet)
            at = 0
            end = 0
            for col in range(self.ncols):
                if at >= n:
                    raise PacketError("a row packet ends before its fields")
                size = p[at]
                if size < 251:
                    at += 1
                elif size == 251:
                    at += 1
                    self._room(end + 4)
                    memcpy(self.buf + end, b"null", 4)
                    self.off[col], self.size[col] = end, 4
                    end += 4
                    continue
                else:
                    width = 2 if size == 252 else (3 if size == 253 else 8)
                    if at + 1 + width > n:
                        raise PacketError("a row packet ends before its fields")
                    size = 0
                    for k in range(width - 1, -1, -1):
                        size = (size << 8) | p[at + 1 + k]
                    at += 1 + width
                if size < 0 or at + size > n:
                    raise PacketError("a row packet ends before its fields")
                self.off[col] = end
                end = self._field(col, end, p + at, size)
                self.size[col] = end - self.off[col]
                at += size
            keys.append(self._object(self.keyix, self.nkey))
            values.append(self._object(self.valix, self.nval))
        return keys, values


# -- the row packets of a result set, framed from the socket's bytes ----------------------

DEF MAX_PACKET = 0xFFFFFF


cdef class PacketFramer:
    """Cuts the socket's bytes after a SELECT's column definitions into row packets'
    payloads (:attr:`rows`, taken by :meth:`take`) until the result set's EOF or error
    packet (:attr:`last`), checking the sequence numbers from ``seq`` as PyMySQL does; a
    payload of 16 MiB or more (packets of 0xFFFFFF bytes, then a shorter one) is joined."""

    cdef public int seq
    cdef public object last
    cdef list rows
    cdef list pieces
    cdef Py_ssize_t have, need

    def __cinit__(self, int seq):
        self.seq = seq
        self.last = None
        self.rows = []
        self.pieces = None

    def take(self):
        """The payloads framed so far (and forget them)."""
        rows, self.rows = self.rows, []
        return rows

    cdef int _expect(self, int seq) except -1:
        if seq != self.seq:
            raise PacketError(f"packet sequence number wrong - got {seq} expected {self.seq}")
        self.seq = (self.seq + 1) % 256
        return 0

    cdef int _payload(self, bytes payload) except -1:
        """0: a row; 1: the result set's end (EOF); 2: an error (ERR)."""
        cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(payload)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(payload)
        if n > 0 and p[0] == 0xFF:
            self.last = payload
            return 2
        if n > 0 and p[0] == 0xFE and n < 9:
            self.last = payload
            return 1
        self.rows.append(payload)
        return 0

    def feed(self, bytes data):
        """Frame the complete packets of what came so far (``data``: the next bytes from
        the socket); 0: more to come, 1: the end, 2: the server sent an error (``last``)."""
        cdef bytes buf
        cdef const unsigned char *p
        cdef Py_ssize_t n, at = 0, length, scan, want = 0
        cdef int state = 0
        cdef list parts
        if self.pieces is not None:
            self.pieces.append(data)
            self.have += PyBytes_GET_SIZE(data)
            if self.have < self.need:
                return 0
            buf = b"".join(self.pieces)
            self.pieces = None
        else:
            buf = data
        p = <const unsigned char *>PyBytes_AS_STRING(buf)
        n = PyBytes_GET_SIZE(buf)
        while state == 0 and at < n:
            if n - at < 4:
                want = at + 4
                break
            length = p[at] | (p[at + 1] << 8) | (p[at + 2] << 16)
            if length < MAX_PACKET:
                if n - at - 4 < length:
                    want = at + 4 + length
                    break
                self._expect(p[at + 3])
                state = self._payload(PyBytes_FromStringAndSize(<const char *>p + at + 4,
                                                                length))
                at += 4 + length
                continue
            scan = at
            while True:
                if n - scan < 4:
                    want = scan + 4
                    break
                length = p[scan] | (p[scan + 1] << 8) | (p[scan + 2] << 16)
                if n - scan - 4 < length:
                    want = scan + 4 + length
                    break
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
            state = self._payload(b"".join(parts))
        if at < n:
            if state != 0:
                raise PacketError(f"{n - at} bytes came after the result set's last packet")
            self.pieces = [buf[at:]]
            self.have = n - at
            self.need = want - at
        return state
