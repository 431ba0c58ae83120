# The LIBSVM/svmlight text parser behind pybudget._svmlight.parse: whole lines in, the
# labels and the CSR arrays out, in C (strtod in the C locale for the numbers,
# _c_numbers.h), so that reading a file needs neither Python objects per token nor
# scikit-learn (whose import costs a Dask worker seconds).  Errors are returned as
# (line, offset, message) for the caller to word.
from libc.string cimport memchr

import numpy as np


cdef extern from "_c_numbers.h":
    int pb_c_numbers_init()
    double pb_strtod(const char* s, char** end) nogil


if not pb_c_numbers_init():
    raise MemoryError("cannot make the C locale that numbers are read in")

ctypedef fused value_t:
    float
    double

cdef inline bint is_space(char c) noexcept nogil:
    # ('\n' ends a line before it is looked at; '\r' of CRLF files is a space here)
    return c == c' ' or c == c'\t' or c == c'\r' or c == c'\v' or c == c'\f'


def parse_lines(bytes text, bint zero_based, dtype):
    """Parses text: whole lines; '#' starts a comment; blank lines are skipped.  Columns
    are the indices minus one unless zero_based; each line's indices must increase; a
    "qid:..." token after the label is skipped, as scikit-learn's reader does.  Returns
    ((labels, row lengths, int64 indices, values of dtype, largest column + 1), None),
    or (None, (line number from 1, offset of the bad token in text, message)) at the
    first bad line."""
    cdef Py_ssize_t lines, colons
    lines, colons = _count(text)       # (bounds on the rows and the non-zeros)
    labels, lengths = np.empty(lines), np.empty(lines, dtype=np.int64)
    indices, values = np.empty(colons, dtype=np.int64), np.empty(colons, dtype=dtype)
    if values.dtype == np.float32:
        rows, nnz, width, error = _parse[float](text, zero_based, labels, lengths, indices,
                                                values)
    else:
        rows, nnz, width, error = _parse[double](text, zero_based, labels, lengths,
                                                 indices, values)
    if error is not None:
        return None, (rows, nnz, error)
    # (views: the arrays' tails, for the colons of comments and qid tokens, are not
    # worth a copy; the caller joins the blocks)
    return (labels[:rows], lengths[:rows], indices[:nnz], values[:nnz], width), None


cdef tuple _count(const unsigned char[::1] text):
    cdef Py_ssize_t i, n = text.shape[0], lines = 1, colons = 0
    with nogil:
        for i in range(n):
            lines += text[i] == c'\n'
            colons += text[i] == c':'
    return lines, colons


cdef tuple _parse(bytes text, bint zero_based, double[::1] labels, long long[::1] row_nnz,
                  long long[::1] indices, value_t[::1] values):
    """parse_lines into arrays of at least as many rows as text has lines and as many
    non-zeros as it has colons: (rows, nnz, largest column + 1, None), or (line,
    offset, 0, message) at the first bad line."""
    cdef const char* s = text          # (a bytes object ends in a NUL: pb_strtod stops)
    cdef const char* end = s + len(text)
    cdef const char* eol
    cdef const char* hash
    cdef const char* p
    cdef const char* tok = s
    cdef const char* first = s
    cdef char* q
    cdef Py_ssize_t rows = 0, nnz = 0, line = 0, start
    cdef long long idx, prev, width = 0, shift = 0 if zero_based else 1
    cdef long long limit = 922337203685477579     # (10 * limit + 9 fits in 64 bits)
    cdef int error = 0
    cdef bint negative
    with nogil:
        while s < end:
            line += 1
            eol = <const char*>memchr(s, c'\n', end - s)
            if eol == NULL:
                eol = end
            hash = <const char*>memchr(s, c'#', eol - s)
            if hash != NULL:
                eol = hash
            p = s
            s = _next_line(eol, end)
            while p < eol and is_space(p[0]):
                p += 1
            if p == eol:
                continue
            tok = p
            labels[rows] = pb_strtod(p, &q)
            if q == p or (q < eol and not is_space(q[0])) or q > eol:
                error = 1
                break
            p = q
            start = nnz
            prev = -1
            while True:
                while p < eol and is_space(p[0]):
                    p += 1
                if p == eol:
                    break
                tok = p
                if nnz == start and eol - p >= 4 and p[0] == c'q' and p[1] == c'i' \
                        and p[2] == c'd' and p[3] == c':':
                    while p < eol and not is_space(p[0]):
                        p += 1
                    continue
                negative = p[0] == c'-'
                if p[0] == c'+' or p[0] == c'-':
                    p += 1
                if p == eol or not (c'0' <= p[0] <= c'9'):
                    error = 2
                    break
                idx = 0
                while p < eol and c'0' <= p[0] <= c'9':
                    if idx > limit:
                        error = 3
                        break
                    idx = idx * 10 + (p[0] - c'0')
                    p += 1
                if error:
                    break
                if p == eol or p[0] != c':':
                    error = 2
                    break
                if negative or idx < shift:
                    error = 4 if negative else 6
                    break
                idx -= shift
                if idx <= prev:
                    error = 5
                    break
                p += 1
                if p == eol or is_space(p[0]):
                    error = 2
                    break
                values[nnz] = <value_t>pb_strtod(p, &q)
                if q == p or (q < eol and not is_space(q[0])) or q > eol:
                    error = 2
                    break
                p = q
                indices[nnz] = idx
                nnz += 1
                prev = idx
            if error:
                break
            if prev + 1 > width:
                width = prev + 1
            row_nnz[rows] = nnz - start
            rows += 1
    if not error:
        return rows, nnz, width, None
    message = {1: "the label is not a number",
               2: "not index:value (an integer index, a number)",
               3: "a feature index is too large",
               4: "a feature index is negative",
               5: "feature indices must increase along a line (sorted and unique)",
               6: "feature index 0"}[error]
    return line, tok - first, 0, message


cdef inline const char* _next_line(const char* eol, const char* end) noexcept nogil:
    """The start of the line after eol (its end or the start of its comment), or end."""
    cdef const char* nl = <const char*>memchr(eol, c'\n', end - eol)
    return end if nl == NULL else nl + 1
