"""A scripted Apache Superset 6 run against ``dpsql serve`` (issue 33): a 4-chart dashboard loaded
10 times, the Samples pane, server pagination, a filter's value list, and what each cost in dpsql's
ledger. Not part of CI: it installs Superset, takes several minutes, and needs the network to PyPI
the first time.

    python3 scripts/superset/run.py                 # everything, in a fresh /tmp/superset-run
    python3 scripts/superset/run.py --browser       # also headless Chromium: dashboard loads and
                                                    #   screenshots into docs/images/
    python3 scripts/superset/run.py --fixtures      # also rewrite tests/fixtures/pgwire/superset/

What it does, in order (docs/bi.md, "A scripted Superset run", has the numbers it printed):

1. Superset 6 in its own venv (``--venv``, default /work/superset-venv: ``pip install
   apache-superset psycopg2-binary``, plus what Superset 6.1.0's wheel leaves out or mis-pins:
   ``rich`` and ``cachetools`` (``superset`` fails to import without them: ModuleNotFoundError) and
   ``flask-caching==2.3.1`` (2.5.1 breaks ``superset db upgrade``: TypeError in
   ``_memoize_make_cache_key``)), SQLite metadata in the run's folder, no result cache
   (scripts/superset/superset_config.py: every load reaches dpsql), ``superset db upgrade``,
   ``fab create-admin``, ``init``, ``superset run``.
2. ``dpsql serve`` on the demo database, through scripts/superset/serve_recording.py (the real
   server, which also logs each statement it receives and its outcome), with two analysts:
   ``analyst`` and ``analyst_pm`` (``dpsql user add analyst_pm --error-columns on``: every answer
   carries ``<column>_moe95``).
3. Through Superset's REST API only: a database ``postgresql+psycopg2://analyst@…/demo`` (and one
   for ``analyst_pm``), the dataset ``establishments``, a virtual dataset (:data:`VIRTUAL_SQL`) with a
   series-limit chart of its own (not on the dashboard), four charts (a table by state with
   AVG(employees), a bar chart by naics2, a monthly time series of ``opened`` by naics2 with a
   series limit of 5, a big number), one dashboard holding them; for ``analyst_pm`` a virtual
   dataset of an aggregate (:data:`PM_VIRTUAL_SQL`: its ``_moe95`` columns synced from the answer)
   and a Table chart in raw records mode over it that shows them.
4. The dashboard loaded ``--loads`` times through ``/api/v1/chart/data`` (each chart's saved
   query context, ``force``; the charges of each chart on each load), then the virtual dataset's
   chart twice, the Samples pane, the table chart with server pagination (the
   page query and its ``rowcount_qry``), a filter's value list, ``analyst_pm``'s charts (the raw
   records chart twice); after each step the analyst's charges are read from the server's ledger
   with ``dpsql ledger --state DIR --analyst …``. With ``--browser`` the raw records chart is
   also opened in Chromium and screenshot (docs/images/superset_chart_error_columns.png).
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PASSWORD = "pw-superset-run"
PACKAGES = ["apache-superset", "psycopg2-binary", "rich", "cachetools", "flask-caching==2.3.1"]


def say(text: str) -> None:
    print(text, flush=True)


# ------------------------------------------------------------------------------------ processes
class Run:
    def __init__(self, work: Path, venv: Path) -> None:
        self.work, self.venv = work, venv
        self.procs: list[subprocess.Popen[bytes]] = []
        self.home = work / "dpsql-home"
        self.state = self.home / "server"
        self.log = work / "statements.jsonl"
        self.dpsql_env = dict(os.environ, DPSQL_HOME=str(self.home), PYTHONPATH=str(ROOT))
        self.superset_env = dict(os.environ, SUPERSET_RUN_DIR=str(work), SUPERSET_CONFIG_PATH=str(HERE / "superset_config.py"),
                                 FLASK_APP="superset", SUPERSET_SECRET_KEY="dpsql-superset-run-not-a-secret")
        self.superset_env.pop("PYTHONPATH", None)

    def dpsql(self, *args: str, stdin: str = "") -> str:
        done = subprocess.run([sys.executable, "-m", "dpsql", *args], input=stdin, capture_output=True, text=True,
                              env=self.dpsql_env, cwd=self.work, timeout=600)
        if done.returncode:
            raise SystemExit(f"dpsql {' '.join(args)}: {done.stdout}{done.stderr}")
        return done.stdout

    def superset(self, *args: str) -> None:
        with open(self.work / "superset-setup.log", "a") as log:
            done = subprocess.run([str(self.venv / "bin" / "superset"), *args], stdout=log, stderr=subprocess.STDOUT,
                                  env=self.superset_env, cwd=self.work, timeout=1200)
        if done.returncode:
            raise SystemExit(f"superset {' '.join(args)} failed: see {self.work / 'superset-setup.log'}")

    def start(self, argv: list[str], env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
        out = open(self.work / f"{name}.log", "wb")
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.work, start_new_session=True)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()

    def charges(self, analyst: str) -> list[dict[str, Any]]:
        """The analyst's charges in the server's ledger, as ``dpsql ledger --state`` prints them."""
        report = json.loads(self.dpsql("ledger", "--state", str(self.state), "--analyst", analyst, "--json"))
        return report["charges"]


def install(venv: Path) -> None:
    if (venv / "bin" / "superset").exists():
        return
    say(f"installing Superset into {venv} (a few minutes)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *PACKAGES], check=True)


def serve(run: Run) -> int:
    for user, extra in (("analyst", []), ("analyst_pm", ["--error-columns", "on"])):
        run.dpsql("user", "add", user, *extra, stdin=PASSWORD + "\n")
    proc = run.start([sys.executable, str(HERE / "serve_recording.py"), str(run.log), "--port", "0"], run.dpsql_env, "dpsql-serve")
    deadline = time.time() + 300
    while time.time() < deadline:
        found = re.search(r"listening on [\w.]+:(\d+)", (run.work / "dpsql-serve.log").read_text(errors="replace"))
        if found:
            return int(found[1])
        if proc.poll() is not None:
            raise SystemExit("dpsql serve stopped: " + (run.work / "dpsql-serve.log").read_text())
        time.sleep(0.5)
    raise SystemExit("dpsql serve did not start in 300 s")


def superset_up(run: Run, port: int) -> str:
    run.superset("db", "upgrade")
    run.superset("fab", "create-admin", "--username", "admin", "--firstname", "Ada", "--lastname", "Admin",
                 "--email", "admin@example.org", "--password", "admin")
    run.superset("init")
    run.start([str(run.venv / "bin" / "superset"), "run", "-h", "127.0.0.1", "-p", str(port), "--with-threads"],
              run.superset_env, "superset")
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as r:
                if r.status == 200:
                    return base
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(1)
    raise SystemExit("superset did not start in 300 s")


# ------------------------------------------------------------------------------------ REST API
class Api:
    """Superset's REST API as admin: a JWT for /api/v1/, and a logged-in session (cookie) for the
    views that take only a session, such as Explore's Samples pane (/datasource/samples)."""

    def __init__(self, base: str) -> None:
        self.base, self.token = base, ""
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        form = urllib.parse.urlencode({"username": "admin", "password": "admin"}).encode()
        self.opener.open(urllib.request.Request(base + "/login/", data=form, method="POST"), timeout=120).read()
        self.token = self.call("POST", "/api/v1/security/login", {"username": "admin", "password": "admin",
                                                                  "provider": "db", "refresh": True})["access_token"]

    def call(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201)) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {self.token}"} if self.token else {})})
        try:
            with self.opener.open(req, timeout=300) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        answer = json.loads(text) if text.strip().startswith(("{", "[")) else {"text": text}
        if status not in ok:
            return {"_status": status, **(answer if isinstance(answer, dict) else {"body": answer})}
        return answer


def metric(aggregate: str, column: str | None) -> dict[str, Any]:
    if column is None:
        return {"expressionType": "SQL", "sqlExpression": "COUNT(*)", "label": "COUNT(*)"}
    return {"expressionType": "SIMPLE", "column": {"column_name": column}, "aggregate": aggregate,
            "label": f"{aggregate}({column})"}


def charts(dataset: int) -> list[dict[str, Any]]:
    """The four charts: (name, viz_type, form_data, query_context) as Superset 6's frontend builds them."""
    ds = {"id": dataset, "type": "table"}
    avg, count = metric("AVG", "employees"), metric("COUNT", None)
    table_fd = {"datasource": f"{dataset}__table", "viz_type": "table", "query_mode": "aggregate",
                "groupby": ["state"], "metrics": [avg], "row_limit": 10, "order_desc": True, "timeseries_limit_metric": avg}
    table_q = {"columns": ["state"], "metrics": [avg], "orderby": [[avg, False]], "row_limit": 10, "filters": [],
               "extras": {"having": "", "where": ""}, "post_processing": []}
    bar_fd = {"datasource": f"{dataset}__table", "viz_type": "echarts_timeseries_bar", "x_axis": "naics2",
              "metrics": [count], "groupby": [], "row_limit": 100, "order_desc": True}
    bar_q = {"columns": [{"columnType": "BASE_AXIS", "sqlExpression": "naics2", "label": "naics2", "expressionType": "SQL"}],
             "metrics": [count], "orderby": [[count, False]], "row_limit": 100, "series_columns": [], "filters": [],
             "extras": {"having": "", "where": ""},
             "post_processing": [{"operation": "pivot", "options": {"index": ["naics2"], "columns": [],
                                                                     "aggregates": {"COUNT(*)": {"operator": "mean"}},
                                                                     "drop_missing_columns": False}},
                                 {"operation": "flatten"}]}
    axis = {"timeGrain": "P1M", "columnType": "BASE_AXIS", "sqlExpression": "opened", "label": "opened",
            "expressionType": "SQL"}
    line_fd = {"datasource": f"{dataset}__table", "viz_type": "echarts_timeseries_line", "x_axis": "opened",
               "time_grain_sqla": "P1M", "metrics": [count], "groupby": ["naics2"], "limit": 5,
               "timeseries_limit_metric": count, "order_desc": True, "row_limit": 10000,
               "adhoc_filters": [{"clause": "WHERE", "subject": "opened", "operator": "TEMPORAL_RANGE",
                                  "comparator": "2015-01-01 : 2016-01-01", "expressionType": "SIMPLE"}]}
    line_q = {"columns": [axis, "naics2"], "metrics": [count], "orderby": [[count, False]], "row_limit": 10000,
              "series_columns": ["naics2"], "series_limit": 5, "series_limit_metric": count, "order_desc": True,
              "filters": [{"col": "opened", "op": "TEMPORAL_RANGE", "val": "2015-01-01 : 2016-01-01"}],
              "extras": {"having": "", "where": ""},
              "post_processing": [{"operation": "pivot", "options": {"index": ["opened"], "columns": ["naics2"],
                                                                      "aggregates": {"COUNT(*)": {"operator": "mean"}},
                                                                      "drop_missing_columns": False}},
                                  {"operation": "flatten"}]}
    # labelled "count", not "COUNT(*)": COUNT(*) AS "COUNT(*)" with a LIMIT and no grouping is the
    # Samples pane's row count, refused (DP128, dpsql/sql/samples_pane.py)
    total = {"expressionType": "SQL", "sqlExpression": "COUNT(*)", "label": "count"}
    big_fd = {"datasource": f"{dataset}__table", "viz_type": "big_number_total", "metric": total}
    big_q = {"columns": [], "metrics": [total], "row_limit": 10000, "filters": [], "extras": {"having": "", "where": ""},
             "post_processing": []}
    out = []
    for name, fd, q in (("Average employees by state", table_fd, table_q), ("Establishments by sector", bar_fd, bar_q),
                        ("Openings per month, top 5 sectors", line_fd, line_q), ("Establishments", big_fd, big_q)):
        qc = {"datasource": ds, "force": True, "queries": [q], "form_data": fd, "result_format": "json",
              "result_type": "full"}
        out.append({"name": name, "viz_type": fd["viz_type"], "form_data": fd, "query_context": qc})
    return out


def table_chart(dataset: int, aggregate: str, column: str, name: str) -> dict[str, Any]:
    m = metric(aggregate, column)
    fd = {"datasource": f"{dataset}__table", "viz_type": "table", "query_mode": "aggregate", "groupby": ["state"],
          "metrics": [m, metric("COUNT", None)], "row_limit": 10, "order_desc": True, "timeseries_limit_metric": m}
    q = {"columns": ["state"], "metrics": [m, metric("COUNT", None)], "orderby": [[m, False]], "row_limit": 10,
         "filters": [], "extras": {"having": "", "where": ""}, "post_processing": []}
    return {"name": name, "viz_type": "table", "form_data": fd,
            "query_context": {"datasource": {"id": dataset, "type": "table"}, "force": True, "queries": [q], "form_data": fd,
                              "result_format": "json", "result_type": "full"}}


#: a SQL Lab virtual dataset: a plain row-level SELECT of one private table (columns, WHERE)
VIRTUAL_SQL = "SELECT naics2, state, opened, employees FROM establishments WHERE employees > 0"


def virtual(api: Api, db: int) -> tuple[int, dict[str, Any]]:
    """The virtual dataset and a monthly series chart with a series limit of 5 on it. Superset's
    POST of a virtual dataset runs its SQL (``LIMIT 1``) for the columns, which dpsql refuses (raw
    rows): the dataset is made on a table (``devices``, charted nowhere else) and then given its
    SQL, its name and its columns by a PUT, which runs nothing."""
    ds = api.call("POST", "/api/v1/dataset/", {"database": db, "schema": "main", "table_name": "devices"})
    if "id" not in ds:
        raise SystemExit(f"POST /api/v1/dataset/ (devices): {ds}")
    columns = [{"column_name": "naics2", "type": "VARCHAR", "groupby": True, "filterable": True},
               {"column_name": "state", "type": "VARCHAR", "groupby": True, "filterable": True},
               {"column_name": "opened", "type": "DATE", "is_dttm": True, "groupby": True, "filterable": True},
               {"column_name": "employees", "type": "BIGINT"}]
    put = api.call("PUT", f"/api/v1/dataset/{ds['id']}", {"table_name": "establishments_with_employees",
                                                          "sql": VIRTUAL_SQL, "columns": columns})
    if "_status" in put:
        raise SystemExit(f"PUT /api/v1/dataset/{ds['id']}: {put}")
    line = next(c for c in charts(ds["id"]) if c["viz_type"] == "echarts_timeseries_line")
    line = dict(line, name="Openings per month, top 5 sectors (virtual dataset)")
    chart = api.call("POST", "/api/v1/chart/", {"slice_name": line["name"], "viz_type": line["viz_type"],
                                                "datasource_id": ds["id"], "datasource_type": "table",
                                                "params": json.dumps(line["form_data"]),
                                                "query_context": json.dumps(line["query_context"])})
    if "id" not in chart:
        raise SystemExit(f"POST /api/v1/chart/ (virtual): {chart}")
    return ds["id"], {**line, "id": chart["id"]}


#: analyst_pm's virtual dataset of an aggregate (SQL Lab, "Save as dataset"); with error columns on,
#: Superset syncs its ± columns from the answer's description, and a Table chart in raw records
#: mode reads them as columns of the derived table (docs/sql.md, "SQL over released answers")
PM_VIRTUAL_SQL = "SELECT state, AVG(age) AS avg_age, COUNT(*) AS persons FROM persons GROUP BY state"
PM_COLUMNS = ["state", "avg_age", "avg_age_moe95", "persons", "persons_moe95"]


def virtual_moe(api: Api, db: int) -> tuple[int, dict[str, Any], list[str]]:
    """analyst_pm's virtual dataset (:data:`PM_VIRTUAL_SQL`, created with its SQL: Superset runs it
    with ``LIMIT 1`` for the columns, an aggregate dpsql answers) and a Table chart in raw records
    mode over it showing :data:`PM_COLUMNS`. Returns (dataset, chart, the dataset's synced columns)."""
    ds = api.call("POST", "/api/v1/dataset/", {"database": db, "schema": "main", "table_name": "persons_by_state",
                                               "sql": PM_VIRTUAL_SQL})
    if "id" not in ds:
        raise SystemExit(f"POST /api/v1/dataset/ (persons_by_state, virtual): {ds}")
    synced = [c["column_name"] for c in api.call("GET", f"/api/v1/dataset/{ds['id']}")["result"]["columns"]]
    two = {"d3NumberFormat": ",.2f"}
    fd = {"datasource": f"{ds['id']}__table", "viz_type": "table", "query_mode": "raw", "all_columns": PM_COLUMNS,
          "order_by_cols": [], "row_limit": 1000, "server_pagination": False, "show_cell_bars": False,
          "column_config": {"avg_age": two, "avg_age_moe95": two}}
    # no "metrics": with them (even []) Superset groups by every column; the raw records chart sends none
    q = {"columns": PM_COLUMNS, "orderby": [], "row_limit": 1000, "filters": [],
         "extras": {"having": "", "where": ""}, "post_processing": []}
    name = "persons by state: average age and count, each with its ± (virtual dataset, error columns on)"
    qc = {"datasource": {"id": ds["id"], "type": "table"}, "force": True, "queries": [q], "form_data": fd,
          "result_format": "json", "result_type": "full"}
    chart = api.call("POST", "/api/v1/chart/", {"slice_name": name, "viz_type": "table", "datasource_id": ds["id"],
                                                "datasource_type": "table", "params": json.dumps(fd),
                                                "query_context": json.dumps(qc)})
    if "id" not in chart:
        raise SystemExit(f"POST /api/v1/chart/ (persons_by_state): {chart}")
    return ds["id"], {"name": name, "viz_type": "table", "form_data": fd, "query_context": qc, "id": chart["id"]}, synced


def build(api: Api, dsn: str, dsn_pm: str, run: Run | None = None) -> dict[str, Any]:
    made: dict[str, Any] = {}
    for key, name, uri in (("db", "dpsql demo", dsn), ("db_pm", "dpsql demo (error columns)", dsn_pm)):
        db = api.call("POST", "/api/v1/database/", {"database_name": name, "sqlalchemy_uri": uri, "expose_in_sqllab": True,
                                                    "allow_run_async": False})
        if "id" not in db:
            raise SystemExit(f"POST /api/v1/database/: {db}")
        made[key] = db["id"]
    # Superset's SQLite metadata holds one dataset per table name (UNIQUE (table_name)): the analyst
    # with error columns charts another private table, persons
    for key, db, table in (("dataset", made["db"], "establishments"), ("dataset_pm", made["db_pm"], "persons")):
        ds = api.call("POST", "/api/v1/dataset/", {"database": db, "schema": "main", "table_name": table})
        if "id" not in ds:
            raise SystemExit(f"POST /api/v1/dataset/: {ds}")
        made[key] = ds["id"]
    made["dataset_virtual"], made["chart_virtual"] = virtual(api, made["db"])
    made["charts"] = []
    for c in charts(made["dataset"]):
        body = {"slice_name": c["name"], "viz_type": c["viz_type"], "datasource_id": made["dataset"],
                "datasource_type": "table", "params": json.dumps(c["form_data"]),
                "query_context": json.dumps(c["query_context"])}
        chart = api.call("POST", "/api/v1/chart/", body)
        if "id" not in chart:
            raise SystemExit(f"POST /api/v1/chart/: {chart}")
        made["charts"].append({**c, "id": chart["id"]})
    pm = table_chart(made["dataset_pm"], "AVG", "age", "persons: average age by state (error columns on)")
    chart = api.call("POST", "/api/v1/chart/", {"slice_name": pm["name"], "viz_type": "table", "datasource_id": made["dataset_pm"],
                                                "datasource_type": "table", "params": json.dumps(pm["form_data"]),
                                                "query_context": json.dumps(pm["query_context"])})
    if "id" not in chart:
        raise SystemExit(f"POST /api/v1/chart/: {chart}")
    made["chart_pm"] = {**pm, "id": chart["id"]}
    n0 = len(run.charges("analyst_pm")) if run is not None else 0
    made["dataset_pm_virtual"], made["chart_pm_virtual"], made["dataset_pm_virtual_columns"] = virtual_moe(api, made["db_pm"])
    made["dataset_pm_virtual_charges"] = len(run.charges("analyst_pm")) - n0 if run is not None else None
    saved = api.call("POST", "/api/v1/saved_query/", {"db_id": made["db_pm"], "schema": "main", "label": "persons by state, with error columns",
                                                      "sql": "SELECT state, AVG(age) AS avg_age, COUNT(*) AS persons\nFROM persons\n"
                                                             "GROUP BY state\nORDER BY state"})
    if "id" not in saved:
        raise SystemExit(f"POST /api/v1/saved_query/: {saved}")
    made["saved_query"] = saved["id"]
    position: dict[str, Any] = {"DASHBOARD_VERSION_KEY": "v2", "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID", "children": ["GRID_ID"]},
                                "GRID_ID": {"type": "GRID", "id": "GRID_ID", "children": ["ROW-1", "ROW-2"], "parents": ["ROOT_ID"]}}
    for row, pair in (("ROW-1", made["charts"][:2]), ("ROW-2", made["charts"][2:])):
        position[row] = {"type": "ROW", "id": row, "children": [f"CHART-{c['id']}" for c in pair],
                         "parents": ["ROOT_ID", "GRID_ID"], "meta": {"background": "BACKGROUND_TRANSPARENT"}}
        for c in pair:
            position[f"CHART-{c['id']}"] = {"type": "CHART", "id": f"CHART-{c['id']}", "children": [],
                                            "parents": ["ROOT_ID", "GRID_ID", row],
                                            "meta": {"chartId": c["id"], "width": 6, "height": 50, "sliceName": c["name"]}}
    dash = api.call("POST", "/api/v1/dashboard/", {"dashboard_title": "dpsql: establishments", "published": True,
                                                   "position_json": json.dumps(position)})
    if "id" not in dash:
        raise SystemExit(f"POST /api/v1/dashboard/: {dash}")
    made["dashboard"] = dash["id"]
    for c in made["charts"]:
        linked = api.call("PUT", f"/api/v1/chart/{c['id']}", {"dashboards": [made["dashboard"]]})
        if "_status" in linked:
            raise SystemExit(f"PUT /api/v1/chart/{c['id']}: {linked}")
    return made


def load(api: Api, chart: dict[str, Any]) -> dict[str, Any]:
    """One chart's data as a dashboard load asks for it: its saved query context, forced past any cache."""
    answer = api.call("POST", "/api/v1/chart/data", chart["query_context"])
    results = answer.get("result") or []
    errors = [e.get("message", "") for e in answer.get("errors", [])] + [r.get("error") for r in results if r.get("error")]
    return {"status": answer.get("_status", 200), "rows": sum(r.get("rowcount", 0) for r in results),
            "errors": [e for e in errors if e] or ([answer.get("message")] if answer.get("_status") else [])}


# ------------------------------------------------------------------------------------ the run
def measure(run: Run, api: Api, made: dict[str, Any], loads: int) -> dict[str, Any]:
    out: dict[str, Any] = {"loads": []}

    def logged() -> int:
        return len(run.log.read_text().splitlines()) if run.log.exists() else 0

    def spent(analyst: str = "analyst") -> tuple[int, float]:
        charges = run.charges(analyst)
        return len(charges), sum(float(c["rho"]) for c in charges)

    before = spent()
    out["first_load_statements"] = [logged()]
    for i in range(loads):
        results = []
        for c in made["charts"]:
            n0 = len(run.charges("analyst"))
            results.append({**load(api, c), "charges": len(run.charges("analyst")) - n0})
        if i == 0:
            out["first_load_statements"].append(logged())
        n, rho = spent()
        out["loads"].append({"load": i + 1, "charges_so_far": n - before[0], "rho_so_far": rho - before[1],
                             "charts": results})
        say(f"load {i + 1:2d}: charges so far {n - before[0]}, rho so far {rho - before[1]:.4g}; "
            + "; ".join(f"{c['name']}: {r['rows']} rows" + (f" ERROR {r['errors'][0][:120]}" if r["errors"] else "")
                        for c, r in zip(made["charts"], results)))

    def step(name: str, method: str, path: str, body: Any = None) -> None:
        n0, r0, first = *spent(), logged()
        answer = api.call(method, path, body)
        n1, r1 = spent()
        text = json.dumps(answer)[:300]
        out[name] = {"charges": n1 - n0, "rho": r1 - r0, "status": answer.get("_status", 200) if isinstance(answer, dict) else 200,
                     "answer": text, "statements": [first, logged()]}
        say(f"{name}: {n1 - n0} charges, rho {r1 - r0:.4g}; HTTP {out[name]['status']}: {text[:200]}")

    step("virtual_series_limit", "POST", "/api/v1/chart/data", made["chart_virtual"]["query_context"])
    step("virtual_series_limit_again", "POST", "/api/v1/chart/data", made["chart_virtual"]["query_context"])
    line = made["charts"][2]["query_context"]  # the series-limit chart with "group others" on (Superset 6)
    others = dict(line, queries=[dict(q, group_others_when_limit_reached=True) for q in line["queries"]],
                  form_data=dict(line["form_data"], group_others_when_limit_reached=True))
    step("group_others", "POST", "/api/v1/chart/data", others)
    step("group_others_again", "POST", "/api/v1/chart/data", others)
    ds = made["dataset"]
    step("samples", "POST", f"/datasource/samples?datasource_id={ds}&datasource_type=table&force=true&page=1&per_page=50", {})
    table = made["charts"][0]["query_context"]
    page = dict(table["queries"][0], row_limit=5, row_offset=0)
    paginated = dict(table, queries=[page, dict(page, is_rowcount=True, row_limit=None, row_offset=None, orderby=[],
                                                 post_processing=[])],
                     form_data=dict(table["form_data"], server_pagination=True, server_page_length=5))
    step("pagination", "POST", "/api/v1/chart/data", paginated)
    step("pagination_again", "POST", "/api/v1/chart/data", paginated)
    step("filter_values", "GET", f"/api/v1/datasource/table/{ds}/column/naics2/values/")
    step("filter_values_again", "GET", f"/api/v1/datasource/table/{ds}/column/naics2/values/")
    step("filter_values_private_key", "GET", f"/api/v1/datasource/table/{ds}/column/county/values/")
    n0 = len(run.charges("analyst_pm"))
    answer = api.call("POST", "/api/v1/chart/data", made["chart_pm"]["query_context"])
    first = (answer.get("result") or [{}])[0]
    out["error_columns"] = {"colnames": first.get("colnames"), "rows": (first.get("data") or [])[:3],
                            "charges": len(run.charges("analyst_pm")) - n0}
    say(f"table chart as analyst_pm (error columns on): columns {out['error_columns']['colnames']}")
    loads_pm = []
    for _ in range(2):  # the chart, then a refresh
        n0 = len(run.charges("analyst_pm"))
        answer = api.call("POST", "/api/v1/chart/data", made["chart_pm_virtual"]["query_context"])
        first = (answer.get("result") or [{}])[0]
        loads_pm.append({"status": answer.get("_status", 200), "colnames": first.get("colnames"),
                         "rows": (first.get("data") or [])[:3], "rowcount": first.get("rowcount"),
                         "error": first.get("error") or answer.get("message"),
                         "charges": len(run.charges("analyst_pm")) - n0})
    out["error_columns_chart"] = {"dataset_columns": made["dataset_pm_virtual_columns"],
                                  "dataset_charges": made["dataset_pm_virtual_charges"], "loads": loads_pm}
    say(f"raw-records table chart on analyst_pm's virtual dataset: dataset columns {made['dataset_pm_virtual_columns']} "
        f"(creating it: {made['dataset_pm_virtual_charges']} charges); loads: {loads_pm}")
    return out


def summary(r: dict[str, Any]) -> str:
    """What the run measured, in the words docs/bi.md records."""
    loads = r["loads"]
    refused = sorted({f"{c_name}: {m[0]}" for load in loads for c_name, c in zip(r["chart_names"], load["charts"])
                      for e in c["errors"] for m in [re.search(r"DP\d{3}", e)] if m})
    lines = ["SUMMARY (charges of analyst in the server's ledger, read with dpsql ledger --state DIR --analyst analyst)",
             f"  dashboard of 4 charts, {len(loads)} loads through /api/v1/chart/data: {loads[-1]['charges_so_far']} "
             f"charges (rho {loads[-1]['rho_so_far']:g}); after load 1: {loads[0]['charges_so_far']}, loads 2-{len(loads)}: "
             f"{loads[-1]['charges_so_far'] - loads[0]['charges_so_far']}; refused on every load: {', '.join(refused) or 'none'}"]
    per_chart = [sum(load["charts"][i].get("charges", 0) for load in loads) for i in range(len(r["chart_names"]))]
    lines.append("  each chart over the loads: " + "; ".join(f"{n}: {c} charge(s), load 1: {loads[0]['charts'][i].get('charges')}"
                                                         for i, (n, c) in enumerate(zip(r["chart_names"], per_chart))))
    if "browser" in r:
        lines.append(f"  the same dashboard, {len(loads)} loads in headless Chromium: "
                     f"{r['browser']['charges_total_after'] - r['browser']['charges_before']} more charges")
    for key, what in (("virtual_series_limit", "series-limit chart on a virtual dataset"),
                      ("virtual_series_limit_again", "  again"),
                      ("group_others", "the series-limit chart with \"group others\" (after the dashboard's loads)"),
                      ("group_others_again", "  again"), ("samples", "Explore's Samples pane"), ("pagination", "table chart with server pagination"),
                      ("pagination_again", "  the same page again"), ("filter_values", "filter values of naics2 (public keyset)"),
                      ("filter_values_again", "  again"), ("filter_values_private_key", "filter values of county (private key)")):
        step = r[key]
        error = re.search(r"DP\d{3}", step["answer"])
        lines.append(f"  {what}: {step['charges']} charges (rho {step['rho']:g}), HTTP {step['status']}"
                     + (f", {error[0]}" if error and step["status"] != 200 else ""))
    lines.append(f"  analyst_pm (--error-columns on), table chart through /api/v1/chart/data: columns "
                 f"{r['error_columns']['colnames']}, first rows {r['error_columns'].get('rows')}")
    c = r["error_columns_chart"]
    lines.append(f"  analyst_pm's virtual dataset ({PM_VIRTUAL_SQL}): synced columns {c['dataset_columns']}, "
                 f"{c['dataset_charges']} charges to create it")
    for i, load in enumerate(c["loads"]):
        lines.append(f"  {'  again' if i else 'its raw-records table chart through /api/v1/chart/data'}: "
                     f"{load['charges']} charges, HTTP {load['status']}, columns {load['colnames']}"
                     + (f", first rows {load['rows']}" if not i else "") + (f", error {load['error']}" if load["error"] else ""))
    if "browser" in r:
        lines.append(f"  that chart in headless Chromium (Explore, screenshot): {r['browser']['pm_charges_after'] - r['browser']['pm_charges_before']} "
                     f"more charges; analyst_pm's charges in all: {r['browser']['pm_charges_after']}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path, default=Path("/tmp/superset-run"), help="the run's folder, emptied first")
    p.add_argument("--venv", type=Path, default=Path("/work/superset-venv"), help="Superset's own virtualenv")
    p.add_argument("--loads", type=int, default=10, help="how many times the dashboard is loaded")
    p.add_argument("--superset-port", type=int, default=8088)
    p.add_argument("--browser", action="store_true", help="also load the dashboard in headless Chromium and take screenshots")
    p.add_argument("--fixtures", action="store_true", help="rewrite tests/fixtures/pgwire/superset/ from the statements seen")
    args = p.parse_args(argv)
    install(args.venv)
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    run = Run(args.work, args.venv)
    try:
        port = serve(run)
        say(f"dpsql serve on 127.0.0.1:{port} (statements logged to {run.log})")
        base = superset_up(run, args.superset_port)
        say(f"superset on {base}")
        api = Api(base)
        made = build(api, f"postgresql+psycopg2://analyst:{PASSWORD}@127.0.0.1:{port}/demo",
                     f"postgresql+psycopg2://analyst_pm:{PASSWORD}@127.0.0.1:{port}/demo", run)
        say(f"database {made['db']}, dataset {made['dataset']}, charts {[c['id'] for c in made['charts']]}, "
            f"dashboard {made['dashboard']}")
        results = measure(run, api, made, args.loads)
        results["chart_names"] = [c["name"] for c in made["charts"]]
        if args.browser:
            results["browser"] = {"charges_before": len(run.charges("analyst")),
                                  "pm_charges_before": len(run.charges("analyst_pm"))}
            done = subprocess.run([str(args.venv / "bin" / "python"), str(HERE / "browser.py"), base,
                                   str(made["dashboard"]), str(made["saved_query"]), str(ROOT / "docs" / "images"),
                                   str(args.loads), str(made["chart_pm_virtual"]["id"])],
                                  capture_output=True, text=True, timeout=1800)
            results["browser"]["pm_charges_after"] = len(run.charges("analyst_pm"))
            say(done.stdout + done.stderr)
            n = len(run.charges("analyst"))
            results["browser"].update(stdout=done.stdout, charges_total_after=n)
            say(f"after the browser's loads: {n} charges in all for analyst")
        results["ledger_analyst"] = run.dpsql("ledger", "--state", str(run.state), "--analyst", "analyst")
        say(results["ledger_analyst"])
        say(summary(results))
        (args.work / "results.json").write_text(json.dumps({"made": made, **results}, indent=1, default=str))
        if args.fixtures:
            subprocess.run([sys.executable, str(HERE / "fixtures.py"), str(args.work)], check=True)
    finally:
        run.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
