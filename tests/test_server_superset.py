"""The SQL Apache Superset 6.1 sends, replayed against a real ``dpsql serve`` (issues 32 and 33).

The fixtures (tests/fixtures/pgwire/superset/*.sql) were captured by the scripted Superset run
(scripts/superset/run.py --fixtures, through scripts/superset/serve_recording.py): server
pagination's page query and its ``rowcount_qry``, a time series with a series limit
(``mme_inner__``) on a table and on a SQL Lab virtual dataset (``virtual_table``), the same with
"group others" on (a LEFT JOIN and ``CASE WHEN ... THEN naics2 ELSE 'Others' END``), a filter's
value list of a public and of a private key, Explore's Samples pane, and a raw records Table chart
on a virtual dataset of an aggregate reading its ± columns (replayed with the file's ``-- options:
-c dpsql.error_columns=on``). Each is replayed through
libpq's extended protocol (psycopg's ``exec_params``, values bound as text, as psycopg2
interpolates them) by an analyst of its own, and must be:

* answered (or, for a statement marked ``-- refused: DPxxx``, refused with that code);
* charged exactly the file's ``-- charges: N``, one per release (``rowcount_qry`` counts the rows
  of a release; a series limit whose ranking is read off its outer answer is one), and nothing
  charged and then thrown away by a refusal;
* free the second time: replaying the same statements again (a dashboard reload) adds no charge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "pgwire" / "superset").glob("*.sql"))


def load(path: Path) -> tuple[int, list[tuple[str, list[Any], str | None]]]:
    """(the charges of one replay, [(statement, parameters, the code it is refused with or None)])."""
    charges: int | None = None
    statements: list[tuple[str, list[Any], str | None]] = []
    sql: list[str] = []
    params: list[Any] = []
    refused: str | None = None
    for line in path.read_text().splitlines():
        if line.strip() == ";":
            statements.append(("\n".join(sql).strip(), params, refused))
            sql, params, refused = [], [], None
        elif not sql and line.startswith("-- charges: "):
            charges = int(line.split(": ", 1)[1])
        elif not sql and line.startswith("-- refused: "):
            refused = line.split(": ", 1)[1].strip()
        elif not sql and line.startswith("-- params: "):
            params = json.loads(line.split(": ", 1)[1])
        elif not sql and line.startswith("--"):
            continue
        elif sql or line.strip():
            sql.append(line)
    assert charges is not None and statements and not "".join(sql).strip(), f"{path.name}: malformed fixture"
    return charges, statements


def _text(value: Any) -> bytes | None:
    return None if value is None else str(value).encode()


def replay(conn: Any, path: Path, statements: list[tuple[str, list[Any], str | None]]) -> None:
    from psycopg import pq

    for sql, params, refused in statements:
        result = conn.pgconn.exec_params(sql.encode(), [_text(v) for v in params])
        message = (result.error_message or b"").decode()
        if refused:
            assert result.status == pq.ExecStatus.FATAL_ERROR and refused in message, (
                f"{path.name}: expected {refused}, got {pq.ExecStatus(result.status).name} {message}\n{sql}")
        else:
            assert result.status == pq.ExecStatus.TUPLES_OK and result.ntuples > 0, (
                f"{path.name}: {pq.ExecStatus(result.status).name} {message}\n{sql}")


def test_every_captured_shape_is_here() -> None:
    assert {p.stem for p in FIXTURES} == {"pagination_rowcount", "series_limit", "series_limit_virtual",
                                          "filter_values_public_key", "filter_values_private_key", "samples_pane",
                                          "series_limit_group_others",
                                          "error_columns_virtual"}


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_superset_sql_is_answered_with_one_charge_per_release(path: Path, dpsql_server: Any) -> None:
    charges, statements = load(path)
    user = "ss_" + path.stem.replace("_", "")[:20]
    dpsql_server.add_user(user, cli=False)
    options = [ln.split(": ", 1)[1] for ln in path.read_text().splitlines() if ln.startswith("-- options: ")]
    with dpsql_server.connect(user, **({"options": options[0]} if options else {})) as conn:
        replay(conn, path, statements)
        assert len(dpsql_server.charges(user)) == charges, dpsql_server.charges(user)
        replay(conn, path, statements)  # the dashboard reloaded: the answers already released, free
    assert len(dpsql_server.charges(user)) == charges, dpsql_server.charges(user)
    dpsql_server.check_ledger()


def test_samples_pane_costs_nothing_through_psycopg2(dpsql_server: Any) -> None:
    """Explore's Samples pane as Superset 6 runs it through psycopg2 (views/datasource/utils.py:
    get_samples): the count first, and the sample's rows only if the count succeeded. The count
    is refused before anything is charged (DP128), so the pane costs nothing, however often it
    is opened; the pane's message is dpsql's refusal with its hint."""
    psycopg2 = pytest.importorskip("psycopg2")
    _, statements = load(Path(__file__).parent / "fixtures" / "pgwire" / "superset" / "samples_pane.sql")
    (count, _, _), (rows, _, _) = statements
    user = "ss_samples_psycopg2"
    dpsql_server.add_user(user, cli=False)
    con = psycopg2.connect(dpsql_server.dsn(user))
    con.autocommit = True
    try:
        cur = con.cursor()
        for _ in range(3):  # the pane opened three times
            with pytest.raises(psycopg2.Error) as err:
                cur.execute(count)
            assert "DP128" in str(err.value) and "Samples pane" in str(err.value)
            assert 'label it otherwise' in (err.value.diag.message_hint or "")
        cur.execute("SELECT COUNT(*) AS count FROM main.establishments LIMIT 50000")  # a count labelled as a chart does
        assert cur.fetchone()[0] > 0
        cur.execute("SELECT COUNT(*) AS count FROM main.establishments LIMIT 50000")
        assert len(dpsql_server.charges(user)) == 1  # that count only: the pane's cost nothing
        with pytest.raises(psycopg2.Error) as err:  # the rows, had Superset sent them: refused as ever
            cur.execute(rows)
        assert "DP201" in str(err.value)
        assert len(dpsql_server.charges(user)) == 1
    finally:
        con.close()
    dpsql_server.check_ledger()
