"""Fields of the policy file: the checks every section's loader shares (a table, a known set of
fields, an identifier, an integer), each refusal a :class:`PolicyFileError` naming file, field
and reason."""

from __future__ import annotations

from typing import Any

from dpsql.errors import PolicyFileError


def err(where: str, fieldname: str, reason: str) -> PolicyFileError:
    return PolicyFileError(f"{where}: field '{fieldname}' {reason}")


def only(doc: dict[str, Any], allowed: set[str], where: str, prefix: str) -> None:
    for k in doc:
        if k not in allowed:
            name = f"{prefix}.{k}" if prefix else k
            raise err(where, name, f"is not a known field (expected one of: {', '.join(sorted(allowed))})")


def table(value: Any, where: str, fieldname: str, required: bool = False) -> dict[str, Any]:
    if value is None and required:
        raise err(where, fieldname, "is required")
    if not isinstance(value, dict):
        raise err(where, fieldname, "must be a table")
    return value


def is_int(value: Any) -> bool:  # a TOML integer (not a bool)
    return isinstance(value, int) and not isinstance(value, bool)


def ident(name: str, where: str, fieldname: str) -> None:
    if not name or not (name[0].isalpha() or name[0] == "_") or not all(c.isalnum() or c == "_" for c in name):
        raise err(where, fieldname, f"{name!r} is not a plain identifier (letters, digits, underscore)")
