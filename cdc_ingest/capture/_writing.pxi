# Included by _rowdecode.pyx and snapshot/_textrows.pyx: growing a write buffer, and a JSON
# string as orjson writes it.

cdef const char *_HEX = b"0123456789abcdef"


cdef inline Py_ssize_t _escaped(char *o, Py_ssize_t at, const unsigned char *s,
                                Py_ssize_t n) noexcept:
    """``s`` (UTF-8 of a str) as orjson writes it, at ``at`` (room for 6n+2 bytes): quote,
    backslash and control characters escaped, \\b \\t \\n \\f \\r short, the rest \\u00xx,
    everything else as it is. Returns the new end."""
    cdef Py_ssize_t i
    cdef unsigned char c
    o[at] = b'"'
    at += 1
    for i in range(n):
        c = s[i]
        if c >= 0x20 and c != 0x22 and c != 0x5c:
            o[at] = <char>c
            at += 1
        elif c == 0x22 or c == 0x5c:
            o[at] = b'\\'
            o[at + 1] = <char>c
            at += 2
        elif c == 0x08 or c == 0x09 or c == 0x0a or c == 0x0c or c == 0x0d:
            o[at] = b'\\'
            o[at + 1] = b"btn?fr"[c - 0x08]
            at += 2
        else:
            memcpy(o + at, b"\\u00", 4)
            o[at + 4] = _HEX[c >> 4]
            o[at + 5] = _HEX[c & 15]
            at += 6
    o[at] = b'"'
    return at + 1


cdef inline int _grow(char **buf, Py_ssize_t *cap, Py_ssize_t want) except -1:
    """Make the malloc'd ``*buf`` of ``*cap`` bytes hold at least ``want``, doubling."""
    cdef char *grown
    cdef Py_ssize_t size = cap[0]
    if want <= size:
        return 0
    while size < want:
        size *= 2
    grown = <char *>realloc(buf[0], size)
    if grown == NULL:
        raise MemoryError()
    buf[0] = grown
    cap[0] = size
    return 0
