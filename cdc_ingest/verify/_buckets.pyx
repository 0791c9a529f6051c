# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, embedsignature=True
"""Compiled parts of :mod:`cdc_ingest.verify.buckets`: CRC-32 as ``zlib.crc32``, records
appended to bucket buffers and read back, and one bucket's join. The Python twins there
(``spread``, ``records``, ``join_bucket``, ``count_records``) are what the unit tests hold
these to."""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcmp, memcpy

cdef unsigned int _CRC[256]


cdef void _crc_table() noexcept:
    cdef unsigned int c, i, k
    for i in range(256):
        c = i
        for k in range(8):
            c = (c >> 1) ^ 0xEDB88320u if c & 1 else c >> 1
        _CRC[i] = c


_crc_table()


cdef inline unsigned int _crc32(const unsigned char *s, Py_ssize_t n, unsigned int seed) noexcept:
    """zlib.crc32(s, seed)"""
    cdef unsigned int c = seed ^ 0xFFFFFFFFu
    cdef Py_ssize_t i
    for i in range(n):
        c = _CRC[(c ^ s[i]) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFFu


def crc32(bytes data, unsigned int seed=0):
    """zlib.crc32 (the tests hold the two equal)."""
    return _crc32(<const unsigned char *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), seed)


cdef inline void _put32(char *o, long long v) noexcept:
    o[0] = <char>(v & 0xFF)
    o[1] = <char>((v >> 8) & 0xFF)
    o[2] = <char>((v >> 16) & 0xFF)
    o[3] = <char>((v >> 24) & 0xFF)


def spread(list keys, list values, list buffers, unsigned int seed):
    """Each pair appended to ``buffers[crc32(key, seed) % len(buffers)]`` (bytearrays, a
    power of two of them) as a record: key size (u32), value size (i32, -1: None), key,
    value."""
    cdef Py_ssize_t i, kn, vn, old, mask = len(buffers) - 1
    cdef bytes key
    cdef object value
    cdef bytearray buf
    cdef char *o
    if len(keys) != len(values):
        raise ValueError("keys and values differ in number")
    for i in range(len(keys)):
        key = keys[i]
        value = values[i]
        kn = PyBytes_GET_SIZE(key)
        vn = -1 if value is None else PyBytes_GET_SIZE(<bytes>value)
        buf = buffers[_crc32(<const unsigned char *>PyBytes_AS_STRING(key), kn, seed) & mask]
        old = len(buf)
        PyByteArray_Resize(buf, old + 8 + kn + (vn if vn > 0 else 0))
        o = PyByteArray_AS_STRING(buf) + old
        _put32(o, kn)
        _put32(o + 4, vn)
        memcpy(o + 8, PyBytes_AS_STRING(key), kn)
        if vn > 0:
            memcpy(o + 8 + kn, PyBytes_AS_STRING(<bytes>value), vn)


cdef inline long long _get32(const unsigned char *s) noexcept:
    return <long long>(s[0] | (s[1] << 8) | (s[2] << 16) | (<unsigned int>s[3] << 24))


def records(bytes data):
    """The (keys, values) of :func:`spread`'s records in ``data``."""
    cdef list keys = [], values = []
    cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t at = 0, n = PyBytes_GET_SIZE(data)
    cdef long long kn, vn
    while at < n:
        if at + 8 > n:
            raise ValueError("a record is cut short")
        kn = _get32(s + at)
        vn = _get32(s + at + 4)
        if vn >= 0x80000000:
            vn -= 0x100000000
        at += 8
        if at + kn + (vn if vn > 0 else 0) > n:
            raise ValueError("a record is cut short")
        keys.append(PyBytes_FromStringAndSize(<const char *>s + at, kn))
        at += kn
        if vn < 0:
            values.append(None)
        else:
            values.append(PyBytes_FromStringAndSize(<const char *>s + at, vn))
            at += vn
    return keys, values


# -- one bucket joined (verify/buckets.py's join, in C) -----------------------------------

cdef struct Entry:  # 48 bytes
    const unsigned char *key
    const unsigned char *topic   # the key's last topic value (NULL: none, or deleted)
    const unsigned char *row     # the first table row's value
    unsigned int klen
    unsigned int hash
    unsigned int tlen
    unsigned int rlen
    unsigned int rows            # table rows with the key
    unsigned int order           # when the key was first seen


cdef inline unsigned long long _fnv(const unsigned char *s, Py_ssize_t n) noexcept:
    cdef unsigned long long h = 14695981039346656037ULL
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ s[i]) * 1099511628211ULL
    return h


cdef class _Keys:
    """An open-addressing table of the keys of one bucket (its records stay in the bytes
    objects it was given, kept alive by the caller)."""
    cdef Entry *slots
    cdef Py_ssize_t mask, used

    def __cinit__(self, Py_ssize_t expected):
        cdef Py_ssize_t size = 16
        while size < expected + expected // 2 + 16:
            size *= 2
        self.slots = <Entry *>calloc(size, sizeof(Entry))
        if self.slots == NULL:
            raise MemoryError()
        self.mask = size - 1
        self.used = 0

    def __dealloc__(self):
        free(self.slots)

    cdef Entry *find(self, const unsigned char *key, Py_ssize_t n) noexcept:
        cdef unsigned long long full = _fnv(key, n)
        cdef unsigned int h = <unsigned int>(full >> 32)
        cdef Py_ssize_t i = <Py_ssize_t>(full & <unsigned long long>self.mask)
        cdef Entry *e
        while True:
            e = &self.slots[i]
            if e.key == NULL:
                e.key, e.klen, e.hash, e.order = key, <unsigned int>n, h, <unsigned int>self.used
                self.used += 1
                return e
            if e.hash == h and e.klen == n and memcmp(e.key, key, n) == 0:
                return e
            i = (i + 1) & self.mask


cdef Py_ssize_t _count(bytes data) except -1:
    cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t at = 0, n = PyBytes_GET_SIZE(data), count = 0
    cdef long long kn, vn
    while at < n:
        if at + 8 > n:
            raise ValueError("a record is cut short")
        kn = _get32(s + at)
        vn = _get32(s + at + 4)
        if vn >= 0x80000000:
            vn -= 0x100000000
        at += 8 + kn + (vn if vn > 0 else 0)
        if at > n:
            raise ValueError("a record is cut short")
        count += 1
    return count


def count_records(list chunks):
    """How many records the chunks hold."""
    cdef bytes data
    cdef Py_ssize_t count = 0
    for data in chunks:
        count += _count(data)
    return count


def join_bucket(list table, list topic):
    """One bucket's join: ``table`` and ``topic`` are its two sides' chunks of records (in
    the order added). The topic folded (the last record of a key wins, a None value deletes
    it); a key of exactly one table row whose value is the same bytes as the topic's is
    equal. Returns (equal, the table keys not equal once each, the topic's live pairs not
    equal as (keys, values)), keys in the order first seen. Memory: the chunks and 48 to 96
    bytes a record."""
    cdef Py_ssize_t expected = 0, at, n, equal = 0, i
    cdef long long kn, vn
    cdef const unsigned char *s
    cdef bytes data
    cdef Entry *e
    cdef list unmatched = [], keys = [], values = []
    for data in table + topic:
        expected += _count(data)
    cdef _Keys found = _Keys(expected)
    for side in range(2):
        for data in (topic if side == 0 else table):
            s = <const unsigned char *>PyBytes_AS_STRING(data)
            n = PyBytes_GET_SIZE(data)
            at = 0
            while at < n:
                kn = _get32(s + at)
                vn = _get32(s + at + 4)
                if vn >= 0x80000000:
                    vn -= 0x100000000
                e = found.find(s + at + 8, kn)
                at += 8 + kn
                if side == 0:
                    e.topic = NULL if vn < 0 else s + at
                    e.tlen = <unsigned int>(vn if vn > 0 else 0)
                else:
                    if e.rows == 0:
                        e.row, e.rlen = s + at, <unsigned int>(vn if vn > 0 else 0)
                    e.rows += 1 if vn >= 0 else 2  # a row without a value is never equal
                at += vn if vn > 0 else 0
    cdef Entry **order = <Entry **>malloc(sizeof(Entry *) * (found.used + 1))
    if order == NULL:
        raise MemoryError()
    try:
        for i in range(found.mask + 1):
            if found.slots[i].key != NULL:
                order[found.slots[i].order] = &found.slots[i]
        for i in range(found.used):
            e = order[i]
            if (e.rows == 1 and e.topic != NULL and e.tlen == e.rlen
                    and memcmp(e.topic, e.row, e.tlen) == 0):
                equal += 1
                continue
            if e.rows:
                unmatched.append(PyBytes_FromStringAndSize(<const char *>e.key, e.klen))
            if e.topic != NULL:
                keys.append(PyBytes_FromStringAndSize(<const char *>e.key, e.klen))
                values.append(PyBytes_FromStringAndSize(<const char *>e.topic, e.tlen))
    finally:
        free(order)
    return equal, unmatched, (keys, values)
