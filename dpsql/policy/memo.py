"""A policy file loaded once per process while its bytes stay the same (issue 34).

Every session reads its policy file; validating it (TOML, every table, measure, key and keyset,
the range keysets' instants) took ~10 ms of the ~14 ms a session added to opening DuckDB, for
the same file each time (a wire server opens a session per connection, a BI tool a connection
per query). :func:`load_policy` reads the file's bytes every time, as the loader does, and
returns the policy validated from those very bytes: kept per path (as given) and SHA-256 of the
content, so an edited policy is validated afresh on the next open, whatever its modification
time says (an edit within the file system's time granularity, or a copy that keeps the mtime,
is still seen). A policy naming Parquet files is not kept: loading it checks that those files
exist, an input outside the policy's bytes.

The kept :class:`~dpsql.policy.model.Policy` is shared by the process's sessions. It is frozen;
nothing in dpsql changes it in place (a face that amends it makes a new one with
``dataclasses.replace``), which ``tests/test_policy_memo.py`` relies on.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from dpsql.policy.loader import default_policy_path, load_policy as _load_file
from dpsql.policy.model import Policy

__all__ = ["default_policy_path", "load_policy"]

#: (path as given, SHA-256 of the bytes) -> the policy validated from them; a few files per process
_KEPT: dict[tuple[str, str], Policy] = {}
_SIZE = 8
_LOCK = threading.Lock()


def load_policy(path: str | Path) -> Policy:
    """:func:`dpsql.policy.loader.load_policy`, validated once per content of the file.

    Raises:
        PolicyFileError: as the loader (a missing, unreadable or invalid file is never kept).
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError:
        return _load_file(p)  # the loader's own error
    key = (str(p), hashlib.sha256(raw).hexdigest())
    with _LOCK:
        kept = _KEPT.get(key)
    if kept is not None:
        return kept
    policy = _load_file(p)
    if policy.digest == key[1] and not policy.parquet:  # the bytes validated are the bytes keyed
        with _LOCK:
            if len(_KEPT) >= _SIZE:
                _KEPT.clear()
            _KEPT[key] = policy
    return policy
