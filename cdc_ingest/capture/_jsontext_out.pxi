# Included by _jsontext.pyx: the growing UTF-8 buffer the text is written into, and the
# leaves written as bytes (strings escaped as json.encoder.encode_basestring does, doubles as
# mysql_json.double_text prints them). It uses memcpy, snprintf and double_text as
# _jsontext.pyx imports them.

from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.math cimport isfinite
from libc.stdlib cimport atoi


cdef extern from "Python.h":
    char *PyOS_double_to_string(double val, char format_code, int precision, int flags,
                                int *ptype) except NULL
    int Py_DTSF_ADD_DOT_0
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL

cdef const char *_HEX = b"0123456789abcdef"

cdef struct Out:
    char *buf
    Py_ssize_t len
    Py_ssize_t cap
    bint heap


cdef int _grow(Out *o, Py_ssize_t need) except -1:
    cdef Py_ssize_t cap = o.cap * 2
    cdef char *buf
    if cap < o.len + need:
        cap = o.len + need
    if o.heap:
        buf = <char *>PyMem_Realloc(o.buf, cap)
    else:
        buf = <char *>PyMem_Malloc(cap)
        if buf != NULL:
            memcpy(buf, o.buf, o.len)
    if buf == NULL:
        raise MemoryError()
    o.buf, o.cap, o.heap = buf, cap, True
    return 0


cdef inline int _put(Out *o, const char *s, Py_ssize_t n) except -1:
    if o.len + n > o.cap:
        _grow(o, n)
    memcpy(o.buf + o.len, s, n)
    o.len += n
    return 0


cdef bint _utf8_valid(const uint8_t *s, Py_ssize_t n) noexcept:
    """Whether ``s`` is UTF-8 as Python's strict decoder takes it (no surrogates, no overlong
    forms, nothing past U+10FFFF)."""
    cdef Py_ssize_t i = 0
    cdef uint8_t c, lo, hi
    cdef int extra, k
    while i < n:
        c = s[i]
        if c < 0x80:
            i += 1
            continue
        lo, hi = 0x80, 0xBF
        if 0xC2 <= c <= 0xDF:
            extra = 1
        elif 0xE0 <= c <= 0xEF:
            extra = 2
            if c == 0xE0:
                lo = 0xA0
            elif c == 0xED:
                hi = 0x9F
        elif 0xF0 <= c <= 0xF4:
            extra = 3
            if c == 0xF0:
                lo = 0x90
            elif c == 0xF4:
                hi = 0x8F
        else:
            return False
        if i + extra >= n:
            return False
        if not lo <= s[i + 1] <= hi:
            return False
        for k in range(2, extra + 1):
            if not 0x80 <= s[i + k] <= 0xBF:
                return False
        i += extra + 1
    return True


cdef int _check_utf8(const uint8_t *s, Py_ssize_t n) except -1:
    """Raise the reference's UnicodeDecodeError for bytes that are not UTF-8."""
    if not _utf8_valid(s, n):
        PyUnicode_DecodeUTF8(<const char *>s, n, NULL)  # raises (else our check was wrong)
    return 0


cdef int _quoted(Out *o, const uint8_t *s, Py_ssize_t n, bint check) except -1:
    """``s`` as json.encoder.encode_basestring writes it (ensure_ascii=False): the quote, the
    backslash and control characters escaped (\\b \\f \\n \\r \\t short, others \\u00xx)."""
    cdef Py_ssize_t i
    cdef uint8_t c, high = 0
    cdef char *w
    if o.len + 6 * n + 2 > o.cap:
        _grow(o, 6 * n + 2)
    w = o.buf + o.len
    w[0] = b'"'
    w += 1
    for i in range(n):
        c = s[i]
        high |= c
        if c >= 0x20 and c != 0x22 and c != 0x5C:
            w[0] = <char>c
            w += 1
            continue
        w[0] = b'\\'
        if c == 0x22 or c == 0x5C:
            w[1] = <char>c
        elif c == 0x08 or c == 0x09 or c == 0x0A or c == 0x0C or c == 0x0D:
            w[1] = b"btn?fr"[c - 0x08]
        else:
            memcpy(w + 1, b"u00", 3)
            w[4] = _HEX[c >> 4]
            w[5] = _HEX[c & 15]
            w += 4
        w += 2
    w[0] = b'"'
    o.len = w + 1 - o.buf
    if check and high & 0x80:
        _check_utf8(s, n)
    return 0


cdef int _double(Out *o, double value) except -1:
    """``mysql_json.double_text``: the shortest round-trip digits (repr's), plain notation for
    a decimal point at -14..15 (or further while every digit is before it), else d.ddde<exp>."""
    cdef char *text
    cdef char digits[40]
    cdef char tail[16]
    cdef Py_ssize_t nd = 0, whole = -1, i, point
    cdef int exponent = 0, lead, m
    cdef bint negative
    cdef const char *q
    if not isfinite(value):
        double_text(value)  # raises JsonBinaryError
        raise AssertionError("double_text printed a non-finite double")
    text = PyOS_double_to_string(value, b'r', 0, Py_DTSF_ADD_DOT_0, NULL)
    negative = text[0] == b'-'
    q = text + 1 if negative else text
    while q[0] != 0 and q[0] != b'e' and nd < 40:
        if q[0] == b'.':
            whole = nd
        else:
            digits[nd] = q[0]
            nd += 1
        q += 1
    if q[0] == b'e':
        exponent = atoi(q + 1)
    PyMem_Free(text)
    if negative:
        _put(o, b"-", 1)
    if whole < 0:
        whole = nd
    lead = 0
    while lead < nd and digits[lead] == b'0':
        lead += 1
    if lead == nd:
        return _put(o, b"0.0", 3)
    point = whole + exponent - lead
    while digits[nd - 1] == b'0':
        nd -= 1
    nd -= lead
    q = digits + lead
    if -14 <= point <= 15 or nd > point > 15:
        if point <= 0:
            _put(o, b"0.", 2)
            for i in range(-point):
                _put(o, b"0", 1)
            return _put(o, q, nd)
        if point >= nd:
            _put(o, q, nd)
            for i in range(point - nd):
                _put(o, b"0", 1)
            return _put(o, b".0", 2)
        _put(o, q, point)
        _put(o, b".", 1)
        return _put(o, q + point, nd - point)
    _put(o, q, 1)
    if nd > 1:
        _put(o, b".", 1)
        _put(o, q + 1, nd - 1)
    m = snprintf(tail, 16, b"e%d", <int>(point - 1))
    return _put(o, tail, m)


cdef int _text(Out *o, object text) except -1:
    cdef Py_ssize_t n
    cdef const char *s = PyUnicode_AsUTF8AndSize(text, &n)
    return _put(o, s, n)
