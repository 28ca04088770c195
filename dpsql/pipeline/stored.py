"""The compact stored form of a large released answer (issue 34; :mod:`dpsql.pipeline.reuse`).

A release of :data:`LARGE` cells or more is kept as bytes, not JSON text: a JSON header (the same
document as the small answers' JSON, pipeline/reuse.py) whose columns of 64-bit integers or floats
are not written out value by value but as ``["bytes", form, dtype, n, how, words]``, their values
following the header as little-endian machine words (numpy's ``tobytes``), in the header's order.
``form`` is ``"array"`` (a numpy column of the release) or ``"list"`` (a list of Python ints or
floats, the keys: read back with ``tolist``, the same values and types); ``how`` is ``None`` (n
words of type ``words`` follow: ``dtype`` itself or, for integers, the narrowest of 16, 32 or 64
bits that holds every value, read back as 64-bit integers), ``"range"`` (0, 1, ..., n - 1: the
row column) or the one number every cell has (one σ or MOE for every cell), and then no word
follows. JSON text of 100,000 rows cost ~65 ms of an answer, the check that each value is JSON's
own type ~15 ms, and SQLite's time grows faster than the bytes (~20 ms for 2.4 MB, ~2 for 0.6); a
column's dtype already proves its values are 64-bit numbers, and its bytes are its exact values.

The store is read back by later sessions and processes, so :func:`unpack` trusts nothing in it:
no pickle (``numpy.frombuffer`` of fixed numeric dtypes only; it can build no object), every
length is checked against the bytes there are and against the most cells an answer may have
(``domain.MAX_CELLS``: a forged count allocates nothing), nothing may be left over, and anything else raises
``ValueError`` — the statement is then released afresh and charged, never a crash.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from dpsql.pipeline.domain import MAX_CELLS

#: cells from which an answer is kept in this form (below it, JSON text costs less than numpy)
LARGE = 1000
MAGIC = b"dpsql-cells\x00v1\x00"
_LENGTH = struct.Struct("<Q")
_DTYPES = {"<i8": int, "<f8": float}  # the only dtypes written and read, and a repeated value's type
#: how a column of 64-bit integers may be stored: as 16-, 32- or 64-bit words, each value's range
_NARROW = {"<i2": (-2**15, 2**15 - 1), "<i4": (-2**31, 2**31 - 1), "<i8": (-2**63, 2**63 - 1)}


def column(v: Any, payload: list[bytes]) -> list[Any] | None:
    """``v``'s header entry, its words appended to ``payload``; None when ``v`` is not a column of
    64-bit numbers (it is then written as JSON, as before)."""
    import numpy as np

    form = "list" if type(v) is list else "array"
    if form == "list":
        kinds = set(map(type, v))
        if kinds not in ({int}, {float}):
            return None
        try:
            v = np.array(v, dtype=np.int64 if kinds == {int} else np.float64)
        except OverflowError:  # an int past int64: JSON carries it
            return None
    elif type(v) is not np.ndarray or v.ndim != 1:
        return None
    dtype = v.dtype.str
    if dtype not in _DTYPES:
        return None
    n = len(v)
    if n and dtype == "<i8" and v[0] == 0 and v[-1] == n - 1 and (n == 1 or bool((np.diff(v) == 1).all())):
        return ["bytes", form, dtype, n, "range"]
    if n > 1 and v[0] != 0 and bool((v == v[0]).all()):  # not 0: 0.0 == -0.0; NaN never equals itself
        return ["bytes", form, dtype, n, v[0].item()]
    if dtype == "<i8":  # the narrowest integers that hold every value (SQLite's time grows faster than the bytes)
        lo, hi = int(v.min()), int(v.max())
        dtype = next(t for t, (a, b) in _NARROW.items() if a <= lo and hi <= b)
    payload.append(v.astype(dtype, copy=False).tobytes())
    return ["bytes", form, "<i8" if dtype in _NARROW else dtype, n, None, dtype]


def pack(doc: dict[str, Any], payload: list[bytes]) -> bytes:
    """The stored bytes: the header ``doc`` (JSON) and the columns' words."""
    header = json.dumps(doc).encode()
    return b"".join((MAGIC, _LENGTH.pack(len(header)), header, *payload))


def unpack(blob: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the header, the columns stored as words by name), or ``ValueError`` when ``blob`` is not
    exactly what :func:`pack` writes (module docstring)."""
    import numpy as np

    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + _LENGTH.size:
        raise ValueError("not a stored answer")
    start = len(MAGIC) + _LENGTH.size
    (size,) = _LENGTH.unpack_from(blob, len(MAGIC))
    if size > len(blob) - start:
        raise ValueError("header past the end")
    doc = json.loads(blob[start:start + size])
    at, out = start + size, {}
    for name, c in doc["cells"].items():
        if c[0] != "bytes":
            continue
        _, form, dtype, n, how, *words = c
        if form not in ("array", "list") or dtype not in _DTYPES or type(n) is not int or not 0 <= n <= MAX_CELLS:
            raise ValueError("a column of another form")
        native = np.int64 if dtype == "<i8" else np.float64
        if how is None:
            if words not in ([dtype], *([[t] for t in _NARROW] if dtype == "<i8" else [])):
                raise ValueError("words of another type")
            width = int(words[0][2:])
            if n * width > len(blob) - at:
                raise ValueError("a column past the end")
            v = np.frombuffer(blob, dtype=words[0], count=n, offset=at).astype(native)  # a copy, writable
            at += n * width
        elif how == "range" and dtype == "<i8":
            v = np.arange(n, dtype=native)
        elif type(how) is _DTYPES[dtype]:
            v = np.full(n, how, dtype=native)
        else:
            raise ValueError("a repeated value of another type")
        out[name] = v.tolist() if form == "list" else v
    if at != len(blob):
        raise ValueError("bytes left over")
    return doc, out
