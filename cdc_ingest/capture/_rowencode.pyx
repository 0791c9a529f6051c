# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, embedsignature=True
"""Compiled changelog encoding: decoded rows -> changelog records, produced straight to Kafka.

:class:`RowEncoder` is the compiled twin of :class:`cdc_ingest.capture.encode.TableEncoder`
(same arguments, same bytes; capture uses it with the compiled decoder, ``_rowdecode.pyx``).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdio cimport snprintf
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from cdc_ingest.model.changelog import value_tail

cdef extern from "Python.h":
    object PyBytes_FromStringAndSize_NULL "PyBytes_FromStringAndSize" (void *v, Py_ssize_t n)
    char *PyBytes_AS_STRING_W "PyBytes_AS_STRING" (object o)


cdef inline Py_ssize_t _copy(char *out, Py_ssize_t at, bytes piece):
    cdef Py_ssize_t n = PyBytes_GET_SIZE(piece)
    memcpy(out + at, PyBytes_AS_STRING(piece), n)
    return at + n


cdef inline Py_ssize_t _copy_or_null(char *out, Py_ssize_t at, bytes piece):
    if piece is None:
        memcpy(out + at, b"null", 4)
        return at + 4
    return _copy(out, at, piece)


cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object o, Py_ssize_t *size) except NULL
    long long PyLong_AsLongLongAndOverflow(object o, int *overflow) except? -1


# bytes a JSON string must escape: control characters, quote, backslash
cdef inline bint _plain(const unsigned char *s, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    for i in range(n):
        if s[i] < 0x20 or s[i] == 0x22 or s[i] == 0x5c:
            return False
    return True


include "_writing.pxi"


cdef class RowEncoder:
    """Changelog messages of one table layout's rows, produced straight to Kafka.

    The compiled twin of :class:`cdc_ingest.capture.encode.TableEncoder` (same arguments,
    same bytes). A row's JSON object is written here from the decoded values: null, booleans,
    integers of up to 64 bits and strings with nothing to escape directly; any other value
    (floats, DECIMAL and JSON fragments, strings to escape, wider integers) through orjson,
    so each value reads exactly as orjson writes it. Records go to librdkafka through the
    producer's own ``produce``; a message it refuses (a full queue, an error) goes again
    through ``send``, which waits for room or reports the error.
    """

    cdef tuple names
    cdef Py_ssize_t ncols
    cdef Py_ssize_t key1        # the one key column's index, or -1 for a wider key
    cdef bytes key1_head        # b'{"<name>":'
    cdef object key_of          # wider keys: row -> key bytes
    cdef bytes head_i, head_u, head_d
    cdef object dumps
    cdef public object plan     # the KeyPlan, for callers that need key dicts
    cdef list fields            # b'{"<first>":', then b',"<name>":' for each next column
    cdef char *buf              # where a row's JSON is written
    cdef Py_ssize_t cap

    def __cinit__(self, tuple names, Py_ssize_t key1, bytes key1_head, key_of,
                  bytes head_i, bytes head_u, bytes head_d, dumps, plan):
        self.names = names
        self.ncols = len(names)
        self.key1 = key1
        self.key1_head = key1_head
        self.key_of = key_of
        self.head_i = head_i
        self.head_u = head_u
        self.head_d = head_d
        self.dumps = dumps
        self.plan = plan
        self.fields = [(b"{" if i == 0 else b",") + dumps(name) + b":"
                       for i, name in enumerate(names)]
        self.cap = 4096
        self.buf = <char *>malloc(self.cap)
        if self.buf == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.buf)

    cdef inline int _room(self, Py_ssize_t at, Py_ssize_t more) except -1:
        if at + more <= self.cap:
            return 0
        return _grow(&self.buf, &self.cap, at + more)

    cdef Py_ssize_t _put(self, Py_ssize_t at, const char *s, Py_ssize_t n) except -1:
        self._room(at, n)
        memcpy(self.buf + at, s, n)
        return at + n

    cdef Py_ssize_t _put_value(self, Py_ssize_t at, object v) except -1:
        """``v`` as orjson writes it, at ``at`` in the buffer; returns the new end."""
        cdef int overflow = 0
        cdef long long i
        cdef Py_ssize_t n
        cdef const char *s
        cdef bytes out
        if v is None:
            return self._put(at, "null", 4)
        if v is True:
            return self._put(at, "true", 4)
        if v is False:
            return self._put(at, "false", 5)
        if type(v) is int:
            i = PyLong_AsLongLongAndOverflow(v, &overflow)
            if not overflow:
                self._room(at, 24)
                return at + snprintf(self.buf + at, 24, "%lld", i)
        elif type(v) is str:
            try:
                s = PyUnicode_AsUTF8AndSize(v, &n)
            except UnicodeError:
                s = NULL  # lone surrogates: orjson raises its own error
            if s != NULL:
                if _plain(<const unsigned char *>s, n):
                    self._room(at, n + 2)
                    self.buf[at] = b'"'
                    memcpy(self.buf + at + 1, s, n)
                    self.buf[at + 1 + n] = b'"'
                    return at + n + 2
                self._room(at, 6 * n + 2)
                return _escaped(self.buf, at, <const unsigned char *>s, n)
        out = self.dumps(v)
        return self._put(at, PyBytes_AS_STRING(out), PyBytes_GET_SIZE(out))

    cdef bytes _key(self, list row):
        cdef Py_ssize_t at
        if self.key1 < 0:
            return self.key_of(row)
        at = self._put(0, PyBytes_AS_STRING(self.key1_head), PyBytes_GET_SIZE(self.key1_head))
        at = self._put_value(at, row[self.key1])
        at = self._put(at, "}", 1)
        return PyBytes_FromStringAndSize(self.buf, at)

    cdef bytes _row_json(self, list row):
        cdef Py_ssize_t i, at = 0
        cdef bytes field
        if len(row) != self.ncols:
            raise ValueError(f"row has {len(row)} values for {self.ncols} columns")
        for i in range(self.ncols):
            field = <bytes>self.fields[i]
            at = self._put(at, PyBytes_AS_STRING(field), PyBytes_GET_SIZE(field))
            at = self._put_value(at, row[i])
        if self.ncols == 0:
            at = self._put(at, "{", 1)
        at = self._put(at, "}", 1)
        return PyBytes_FromStringAndSize(self.buf, at)

    cdef bytes _value(self, bytes head, bytes key, bytes before, bytes after, bytes tail,
                      long long no):
        """head key ,"before":B,"after":A tail no "}  (B/A null when None)."""
        cdef char digits[24]
        cdef int nd = snprintf(digits, 24, "%lld", no)
        cdef Py_ssize_t size = (PyBytes_GET_SIZE(head) + PyBytes_GET_SIZE(key) + 19
                                + (PyBytes_GET_SIZE(before) if before is not None else 4)
                                + (PyBytes_GET_SIZE(after) if after is not None else 4)
                                + PyBytes_GET_SIZE(tail) + nd + 2)
        cdef bytes out = PyBytes_FromStringAndSize_NULL(NULL, size)
        cdef char *p = PyBytes_AS_STRING_W(out)
        cdef Py_ssize_t at = _copy(p, 0, head)
        at = _copy(p, at, key)
        memcpy(p + at, b',"before":', 10)
        at = _copy_or_null(p, at + 10, before)
        memcpy(p + at, b',"after":', 9)
        at = _copy_or_null(p, at + 9, after)
        at = _copy(p, at, tail)
        memcpy(p + at, digits, nd)
        at += nd
        p[at] = b'"'
        p[at + 1] = b'}'
        return out

    cdef _emit(self, send, produce, topic, bytes value, bytes key, long long ts_ms):
        if produce is not None:
            try:
                produce(topic, value, key, timestamp=ts_ms)
                return
            except Exception:
                pass  # send produces it again, waiting for room or reporting the error
        send(topic, value, key, ts_ms)

    def produce_rows(self, send, topic, str kind, list rows, long long first_no,
                     str pos_prefix, long long ts_ms, keep, produce=None, table_delta=None):
        """See :meth:`cdc_ingest.capture.encode.TableEncoder.produce_rows`."""
        cdef bytes tail = value_tail(ts_ms, pos_prefix, table_delta)
        cdef long long no = first_no - 1
        cdef Py_ssize_t produced = 0
        cdef int k = 0 if kind == "I" else (2 if kind == "D" else 1)
        cdef bytes key, old_key, row_json, old_json, value
        cdef list messages
        cdef int halves = 3
        for pair in rows:
            before = (<tuple>pair)[0]
            after = (<tuple>pair)[1]
            no += 1
            if keep is not None:
                halves = keep(before, after)
                if not halves:
                    continue
            if k == 0:
                key = self._key(after)
                value = self._value(self.head_i, key, None, self._row_json(after), tail, no)
            elif k == 2:
                key = self._key(before)
                value = self._value(self.head_d, key, self._row_json(before), None, tail, no)
            else:
                old_key = self._key(before)
                key = self._key(after)
                old_json = self._row_json(before)
                row_json = self._row_json(after)
                if old_key == key:
                    value = self._value(self.head_u, key, old_json, row_json, tail, no)
                else:
                    # a key change: -D of the old key, then +I of the new one; keep may
                    # leave out either half (KEEP_OLD = 1, KEEP_NEW = 2)
                    if halves & 1:
                        value = self._value(self.head_d, old_key, old_json, None, tail, no)
                        self._emit(send, produce, topic, value, old_key, ts_ms)
                    if halves & 2:
                        value = self._value(self.head_i, key, None, row_json, tail, no)
                        self._emit(send, produce, topic, value, key, ts_ms)
                    produced += 1
                    continue
            self._emit(send, produce, topic, value, key, ts_ms)
            produced += 1
        return produced
