"""Superset's SQL, as captured by the scripted run (scripts/superset/run.py), into replay fixtures:
tests/fixtures/pgwire/superset/*.sql, replayed against a real ``dpsql serve`` by
tests/test_server_superset.py.

    python scripts/superset/fixtures.py RUN_DIR      # RUN_DIR/statements.jsonl and RUN_DIR/results.json

A fixture is the private statements (those the server sends through dpsql's pipeline) of one
step of the run, in the format of tests/fixtures/pgwire (tests/pgwire_catalog.py), with two
header lines of its own::

    -- charges: N            the charges a fresh analyst's replay of the whole file costs (the target)
    -- options: -c ...       libpq options of the replay's connection (error columns on)
    -- refused: DPxxx        before a statement: the code it is refused with, nothing charged (written
                             only where a refusal is the target: the Samples pane's count and raw rows; where
                             dpsql refuses today what it should answer, the fixture holds the target)

Connection chatter (BEGIN, version(), SHOW ...) is left out: tests/fixtures/pgwire/ keeps the
catalog's statements.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "pgwire" / "superset"

#: fixture -> (the step of results.json, what it is, the target charges of one replay by a fresh analyst)
FIXTURES: dict[str, tuple[str, str, int]] = {
    "pagination_rowcount": ("pagination", "Superset 6.1 table chart with server pagination: the page query (ORDER BY, LIMIT 5), "
                            "then SELECT COUNT(*) FROM (<the same aggregate without ORDER BY, LIMIT 50000>) AS "
                            "rowcount_qry; target: one release, the count being post-processing of the aggregate's "
                            "noisy answer the page query released", 1),
    "series_limit": ("series_limit", "Superset 6.1 time series (month of opened by naics2) with a series limit of 5: "
                     "the table joined to its top-5 subquery (mme_inner__): one release, the outer query without "
                     "its join, the top 5 read off its released cells (the same WHERE, COUNT(*) in both)", 1),
    "series_limit_virtual": ("virtual_series_limit", "Superset 6.1 time series with a series limit of 5 on a SQL Lab "
                             "virtual dataset (a row-level SELECT of establishments): FROM (<virtual sql>) AS "
                             "virtual_table JOIN (SELECT ... FROM (<virtual sql>) AS virtual_table ... LIMIT 5): one "
                             "release, the top 5 read off its released cells", 1),
    "series_limit_group_others": ("group_others", "Superset 6.1 time series with a series limit of 5 and \"group "
                                  "others\" on (group_others_when_limit_reached): a LEFT JOIN to the top-5 subquery and "
                                  "the series column as CASE WHEN series_limit.naics2__ IS NOT NULL THEN naics2 ELSE "
                                  "'Others' END in SELECT and GROUP BY: one release (the series limit's own), the top 5 "
                                  "read off its cells, each month's Others row the sum of the other keys' released "
                                  "cells", 1),
    "filter_values_public_key": ("filter_values", "Superset 6.1 native filter's value list, GET "
                                 "/api/v1/datasource/table/<id>/column/naics2/values/: SELECT DISTINCT of a key with a "
                                 "public keyset (free)", 0),
    "filter_values_private_key": ("filter_values_private_key", "Superset 6.1 native filter's value list of a private key "
                                  "(county): SELECT DISTINCT through partition selection (one release)", 1),
    "error_columns_virtual": ("error_columns_chart", "Superset 6.1 as an analyst with error columns on: POST "
                              "/api/v1/dataset/ of a virtual dataset of an aggregate runs its SQL with LIMIT 1 (one "
                              "release; the columns synced, avg_age_moe95 and persons_moe95 included), then a Table "
                              "chart in raw records mode over it reads them: SELECT ... avg_age_moe95 ... FROM "
                              "(<virtual sql>) AS virtual_table LIMIT 1000, the release shown again (free), as is SQL Lab's run of "
                              "the same aggregate (ORDER BY state LIMIT 1001)", 1),
    "samples_pane": ("samples", "Superset 6.1 Explore's Samples pane, POST /datasource/samples: a COUNT(*) of the "
                     "dataset, refused (DP128: the pane shows it only with the sample's rows, which a private table "
                     "never shows), so Superset stops there and shows the refusal; the sample's rows (as captured "
                     "before DP128: raw rows of a private table, refused DP201) are no longer sent; nothing charged", 0),
}


def private(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in entries if e["way"] == "private" and not e["sql"].lower().lstrip().startswith(("set ", "show "))]


#: libpq options of a fixture's connection (``-- options:``, replayed with them)
OPTIONS = {"error_columns_virtual": "-c dpsql.error_columns=on"}

#: the fixtures whose refusals are the target (raw rows of a private table are never answered)
REFUSALS_ARE_TARGET = {"samples_pane"}


def write(name: str, what: str, charges: int, entries: list[dict[str, Any]]) -> None:
    out = [f"-- {what}", "-- captured by scripts/superset/run.py (apache-superset 6.1.0, psycopg2) against dpsql serve "
           "on the demo database", f"-- charges: {charges}"] + ([f"-- options: {OPTIONS[name]}"] if name in OPTIONS else [])
    for e in entries:
        out.append("")
        if name in REFUSALS_ARE_TARGET and e.get("error", "").startswith("DP"):
            out.append(f"-- refused: {e['error']}")
        if e["params"]:
            out.append("-- params: " + json.dumps(e["params"]))
        out.append(e["sql"].strip().rstrip(";").rstrip())
        out.append(";")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.sql").write_text("\n".join(out) + "\n")
    print(f"{(OUT / f'{name}.sql').relative_to(ROOT)}: {len(entries)} statements")


def main(argv: list[str]) -> int:
    run = Path(argv[0])
    log = [json.loads(line) for line in (run / "statements.jsonl").read_text().splitlines()]
    results = json.loads((run / "results.json").read_text())
    for name, (step, what, charges) in FIXTURES.items():
        if step == "series_limit":
            entries = [e for e in private(log) if "mme_inner__" in e["sql"] and "virtual_table" not in e["sql"]][:1]
        elif step == "error_columns_chart":  # the dataset's creation (in build) and the chart's loads
            entries = [e for e in private(log) if "avg_age" in e["sql"]]
        else:
            first, last = results[step]["statements"]
            entries = private(log[first:last])
        # a statement answered again within the step (reused) is the client's repeat: keep one of each
        seen: set[str] = set()
        kept = [e for e in entries if not (e["sql"] in seen or seen.add(e["sql"]))]  # type: ignore[func-returns-value]
        if not kept:
            print(f"{name}: no statement captured in step {step!r}", file=sys.stderr)
            continue
        write(name, what, charges, kept)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
