"""The durable ledger: charges survive restarts, crashes (kill -9), racing processes and
threads; it is a wall in both currencies (rho and delta); a ledger that cannot record refuses."""

from __future__ import annotations

import io
import json
import os
import queue
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path

import pytest

import dpsql
from dpsql.privacy.accounting import guarantee
from dpsql.errors import BudgetExceededError, BudgetValueError, LedgerError
from dpsql.ledger.book import Charge, Ledger, ledger_path
from dpsql.policy.loader import load_policy
from dpsql.privacy.budget import fmt_up, parse_rho
from dpsql.faces.repl import Repl
from dpsql.faces.repl import commands


def set_budget(policy: Path, total: str, default: str = "0.1", extra: str = "") -> Path:
    text = policy.read_text()
    text = text.replace("default_rho = 0.1", f"default_rho = {default}").replace("total_rho = 10.0", f"total_rho = {total}{extra}")
    assert f"total_rho = {total}" in text
    policy.write_text(text)
    return policy


def ledger_file(policy: Path) -> Path:
    return ledger_path(load_policy(policy))


def test_restarting_does_not_restore_budget(demo):
    with dpsql.connect(*demo) as con:
        con.execute("SELECT COUNT(*) FROM establishments")
        con.execute("SELECT SUM(payann) FROM establishments WHERE state = 'CA'")
        assert con.session.ledger.spent == Fraction(2, 10)
    with dpsql.connect(*demo) as con:
        assert con.session.ledger.spent == Fraction(2, 10)
        assert con.budget["remaining"] == "9.8"


def test_history_records_every_field(demo):
    with dpsql.connect(*demo, analyst="ada") as con:
        cur = con.execute("SELECT naics2, SUM(payann), COUNT(*) FROM establishments GROUP BY naics2")
        (charge,) = con.session.ledger.history()
        assert charge.id == cur.receipt.charge_id
        assert charge.analyst == "ada" and charge.session == con.session.session_id
        assert charge.query.startswith("SELECT naics2") and charge.mechanism == "discrete_gaussian"
        assert charge.rho == Fraction(1, 10) and charge.delta == 0
        assert charge.dataset == str(demo[0])
        scales = {t["scale"] for t in charge.policy_terms}
        assert scales == {"|A(r)|^2", "1"}
        assert time.time() - charge.time < 60


def test_budget_is_per_analyst_and_dataset_cap_binds_all(demo):
    set_budget(demo[1], total="0.3", extra="\ndataset_rho = 0.5")
    with dpsql.connect(*demo, analyst="a") as a, dpsql.connect(*demo, analyst="b") as b:
        for c in (a, b):
            c.execute("SET dpsql.reuse = off")  # each query a fresh, charged release (pipeline/reuse.py)
        for _ in range(3):
            a.execute("SELECT COUNT(*) FROM establishments")
        with pytest.raises(dpsql.BudgetExceededError):
            a.execute("SELECT COUNT(*) FROM establishments")
        b.execute("SELECT COUNT(*) FROM establishments")
        b.execute("SELECT COUNT(*) FROM establishments")
        with pytest.raises(dpsql.BudgetExceededError, match="for the data set"):
            b.execute("SELECT COUNT(*) FROM establishments")  # b has 0.1 of its own left, the data set none
        assert a.session.ledger.spent == Fraction(3, 10) and b.session.ledger.spent == Fraction(2, 10)


CHILD = r"""
import sys, dpsql

def say(line):  # one write of a whole line: a kill cannot cut it (print writes each piece apart
    sys.stdout.write(line + "\n")  # when PYTHONUNBUFFERED is set)
    sys.stdout.flush()

db, policy, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = dpsql.connect(db, policy, analyst="racer")
con.execute("SET dpsql.reuse = off")  # every query a fresh, charged release: the race is for the budget
say("OPEN")  # the ledger is open and the first query is about to run
for i in range(n):
    try:
        cur = con.cursor().execute("SELECT naics2, SUM(payann) FROM establishments WHERE employees > ? GROUP BY naics2", [i])
        rows = cur.fetchall()
        say(f"RELEASED {cur.receipt.charge_id} {len(rows)}")
    except dpsql.BudgetExceededError:
        say("REFUSED")
"""


def check_consistent(ledger: Path) -> list[tuple]:
    db = sqlite3.connect(ledger)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        charges = db.execute("SELECT id, analyst, rho, delta FROM charges").fetchall()
        totals = {a: (r, d) for a, r, d in db.execute("SELECT analyst, rho, delta FROM totals").fetchall()}
    finally:
        db.close()
    by_analyst: dict[str, tuple[Fraction, Fraction]] = {}
    for _, analyst, rho, delta in charges:
        r, d = by_analyst.get(analyst, (Fraction(0), Fraction(0)))
        by_analyst[analyst] = (r + Fraction(rho), d + Fraction(delta))
    # the running totals are exactly the sums of the charges, in both currencies, for each analyst and for all
    assert {k: (Fraction(r), Fraction(d)) for k, (r, d) in totals.items() if k} == by_analyst
    everyone = totals.get("", ("0", "0"))
    assert Fraction(everyone[0]) == sum((r for r, _ in by_analyst.values()), Fraction(0))
    assert Fraction(everyone[1]) == sum((d for _, d in by_analyst.values()), Fraction(0))
    return charges


@pytest.mark.slow
def test_processes_racing_for_the_last_of_a_budget(demo):
    """8 processes, 5 queries each, a budget of 10 queries: exactly 10 released and charged,
    the other 30 refused having released nothing."""
    set_budget(demo[1], total="1")
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(demo[0]), str(demo[1]), "5"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(8)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    lines = [line.split() for out, _ in outs for line in out.splitlines()]
    released = [int(parts[1]) for parts in lines if parts[0] == "RELEASED"]
    refused = [parts for parts in lines if parts[0] == "REFUSED"]
    assert len(released) + len(refused) == 40
    charges = check_consistent(ledger_file(demo[1]))
    total = sum((Fraction(c[2]) for c in charges), Fraction(0))
    assert total <= 1
    assert sorted(released) == sorted(c[0] for c in charges)  # every release charged, every charge released
    assert len(released) == 10 and total == 1


def _pump(stream, lines: queue.Queue) -> None:
    """Copy a child's output lines into ``lines``; None at the end."""
    for line in stream:
        lines.put(line.strip())
    lines.put(None)


@pytest.mark.slow
def test_kill_9_at_random_points_leaves_the_ledger_consistent(demo):
    """Kill a querying process with SIGKILL at random moments, again and again: the ledger
    stays consistent and every answer the process released is charged in it. Each child says
    when its ledger is open (a loaded machine may take seconds to import); it is killed at a
    random moment after that, during or between queries; every other child is first let answer
    one query, so that the test never depends on the machine's speed to release anything (the
    crash points themselves are covered deterministically by tests/test_ledger_crash_points.py).
    Every wait is bounded."""
    rng = random.Random(20261122)
    ledger = ledger_file(demo[1])
    released: list[int] = []
    for i in range(12):
        p = subprocess.Popen([sys.executable, "-c", CHILD, str(demo[0]), str(demo[1]), "1000"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines: queue.Queue = queue.Queue()
        reader = threading.Thread(target=_pump, args=(p.stdout, lines), daemon=True)
        reader.start()
        try:
            first = lines.get(timeout=120)
        except queue.Empty:
            first = "nothing within 120 s"
        if first != "OPEN":
            p.kill()
            p.wait(timeout=60)
            pytest.fail(f"the child never opened the ledger (it said {first!r})")
        out = []
        if i % 2:  # every other child answers once before the kill, however slow the machine
            try:
                got = lines.get(timeout=120)
            except queue.Empty:
                got = ""
            if got is None:
                lines.put(None)  # the child ended: the loop below reads the end again
            elif got:
                out.append(got)
        time.sleep(rng.uniform(0.0, 0.8))  # a query takes some 10-100 ms: kill during and between them
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=60)
        reader.join(timeout=60)
        assert not reader.is_alive()
        while (line := lines.get(timeout=10)) is not None:
            out.append(line)
        released += [int(line.split()[1]) for line in out if line.startswith("RELEASED")]
        charged = {c[0] for c in check_consistent(ledger)}
        assert set(released) <= charged
    assert released, "the processes never got to release anything: the test proved nothing"


# --------------------------------------------------------------------------- threads


def one_charge(rho: str = "1/10", delta: str = "0", query: str = "SELECT COUNT(*) FROM t") -> Charge:
    return Charge(query=query, rho=Fraction(rho), delta=Fraction(delta), mechanism="discrete_gaussian")


@pytest.mark.parametrize("own", [False, True], ids=["one-ledger", "a-ledger-each"])
def test_threads_sharing_one_ledger_never_overspend(tmp_path, own):
    """12 threads, one Ledger object (or one each, as the sessions of ``dpsql serve`` have: one
    SQLite connection each), a budget that covers exactly 10 charges: exactly 10 are recorded,
    2 refused with DP301, and the totals are the sum of the charges."""
    led = Ledger(tmp_path / "t.ledger.sqlite", "ada", Fraction(1))
    start = threading.Barrier(12, timeout=60)
    results: list[object] = []

    def work(i: int) -> None:
        mine = Ledger(led.path, "ada", Fraction(1)) if own else led
        start.wait()
        try:
            mine.check(Fraction(1, 10))  # reads interleave with other threads' transactions too
            results.append(mine.charge(one_charge(query=f"q{i}")))
        except BudgetExceededError as exc:
            results.append(exc.code)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            results.append(repr(exc))
        finally:
            if own:
                mine.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    ids = [r for r in results if isinstance(r, int)]
    assert len(ids) == 10 and len(set(ids)) == 10 and results.count("DP301") == 2, results
    assert led.spent == 1 and led.remaining == 0
    assert sorted(c[0] for c in check_consistent(led.path)) == sorted(ids)
    led.close()


# --------------------------------------------------------------------------- delta is a wall too


def test_delta_is_a_wall_per_analyst_and_for_the_data_set(tmp_path):
    path = tmp_path / "t.ledger.sqlite"
    caps = {"total_delta": Fraction(3, 10**6), "dataset_delta": Fraction(5, 10**6)}
    a, b = Ledger(path, "a", Fraction(10), **caps), Ledger(path, "b", Fraction(10), **caps)
    selection = one_charge(rho="1/8", delta="1/1000000")
    for _ in range(3):
        a.check(selection.rho, selection.delta)
        a.charge(selection)
    assert a.spent_delta == Fraction(3, 10**6) and a.remaining_delta == 0 and a.remaining == Fraction(10) - Fraction(3, 8)
    for attempt in (lambda: a.check(selection.rho, selection.delta), lambda: a.charge(selection)):
        with pytest.raises(BudgetExceededError) as err:
            attempt()
        text = str(err.value)
        assert err.value.code == "DP301" and "this analyst's delta budget" in text and "rho budget" not in text
        assert "nothing was charged and nothing released" in text and "total_delta" in err.value.hint
    a.check(Fraction(1, 10))  # a query without selection is still covered: only delta ran out
    a.charge(one_charge())
    b.charge(selection)
    b.charge(selection)
    with pytest.raises(BudgetExceededError, match="the data set's delta budget"):
        b.charge(selection)  # b has 1e-6 of its own left, the data set none
    assert b.spent_delta == Fraction(2, 10**6) and b.remaining_delta == 0
    assert a.totals.delta_all == Fraction(5, 10**6) and len(a.history()) == 6
    check_consistent(path)
    a.close()
    b.close()


def test_a_charge_both_currencies_refuse_names_both(tmp_path):
    led = Ledger(tmp_path / "t.ledger.sqlite", "ada", Fraction(1, 10), total_delta=Fraction(1, 10**6))
    with pytest.raises(BudgetExceededError) as err:
        led.check(Fraction(1, 8), Fraction(2, 10**6))
    assert "needs rho=0.125 but only rho=0.1" in str(err.value) and "delta=2e-06" in str(err.value)
    assert led.spent == 0 and led.history() == []
    led.close()


def test_old_signature_has_no_delta_cap(tmp_path):
    """Ledger(path, analyst, total_rho, dataset_rho) as before: no delta cap unless asked for."""
    led = Ledger(tmp_path / "t.ledger.sqlite", "ada", Fraction(1), None)
    for _ in range(3):
        led.charge(one_charge(delta="1/2"))
    assert led.spent_delta == Fraction(3, 2) and led.remaining_delta is None
    led.close()


def test_private_key_queries_stop_when_delta_runs_out(demo):
    """Through a connection: each GROUP BY on a private key spends selection.delta = 1e-6; with
    budget.total_delta = 2e-6 the third is refused before any work, and public keys still run."""
    text = demo[1].read_text()
    assert "total_delta = 1e-4" in text
    demo[1].write_text(text.replace("total_delta = 1e-4", "total_delta = 2e-6"))
    with dpsql.connect(*demo) as con:
        con.execute("SET dpsql.reuse = off")  # each query a fresh, charged release (pipeline/reuse.py)
        for _ in range(2):
            con.execute("SELECT county, COUNT(*) FROM establishments GROUP BY county")
        cur = con.cursor()
        with pytest.raises(dpsql.BudgetExceededError) as err:
            cur.execute("SELECT county, COUNT(*) FROM establishments GROUP BY county")
        assert "delta budget" in str(err.value) and cur.receipt is None
        led = con.session.ledger
        assert led.spent_delta == Fraction(2, 10**6) and len(led.charges) == 2
        con.execute("SELECT state, COUNT(*) FROM establishments GROUP BY state")  # public keyset: no delta
        assert len(led.charges) == 3 and led.spent_delta == Fraction(2, 10**6)


# --------------------------------------------------------------------------- the guarantee of everything spent


def run_cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, DPSQL_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "dpsql", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_every_face_shows_the_guarantee_of_everything_spent(demo, tmp_path):
    """Connection.budget, \\budget and `dpsql ledger` show the delta spent and the (epsilon,
    delta)-DP of everything spent: rho converted at delta' (1e-6 unless asked), plus that delta."""
    with dpsql.connect(*demo, analyst="ada") as con:
        con.execute("SELECT county, COUNT(*) FROM establishments GROUP BY county")  # 0.1 + 0.5^2/2, delta 1e-6
        con.execute("SELECT COUNT(*) FROM establishments")
        rho = con.session.ledger.spent
        assert rho == Fraction(13, 40)
        g = guarantee(rho, Fraction(1, 10**6))
        b = con.budget
        assert (b["spent"], b["remaining"], b["total"], b["rho_per_query"]) == ("0.325", "9.675", "10", "0.1")
        assert (b["delta_spent"], b["delta_remaining"], b["delta_total"]) == ("1e-06", "9.9e-05", "0.0001")
        assert b["epsilon"] == fmt_up(g.epsilon_tight) and b["epsilon_analytic"] == fmt_up(g.epsilon_analytic)
        assert b["delta"] == "2e-06" and b["conversion_delta"] == "1e-06"
        assert float(b["epsilon"]) < float(b["epsilon_analytic"])
        repl = Repl(con, out=io.StringIO(), err=io.StringIO(), progress=False)
        out = commands.run(repl, "\\budget")
        assert "spent rho=0.325 of 10, 9.675 left" in out
        assert "delta spent by partition selection: 1e-06 of 0.0001, 9.9e-05 left, 99 more GROUP BY" in out
        assert f"({b['epsilon']}, 2e-06)-DP" in out and b["epsilon_analytic"] in out
        g9 = guarantee(rho, Fraction(1, 10**6), Fraction(1, 10**9))
        assert f"({fmt_up(g9.epsilon_tight)}, 1.001e-06)-DP" in commands.run(repl, "\\budget 1e-9")
    policy = str(demo[1])
    p = run_cli("ledger", "--policy", policy, "--analyst", "ada", "--json", home=tmp_path)
    assert p.returncode == 0, p.stderr
    budget = json.loads(p.stdout)["budget"]
    assert {k: budget[k] for k in b if k != "rho_per_query"} == {k: v for k, v in b.items() if k != "rho_per_query"}
    p = run_cli("ledger", "--policy", policy, "--analyst", "ada", "--delta", "1e-9", "--json", home=tmp_path)
    budget = json.loads(p.stdout)["budget"]
    assert budget["epsilon"] == fmt_up(g9.epsilon_tight) and budget["delta"] == "1.001e-06"
    p = run_cli("ledger", "--policy", policy, "--analyst", "ada", "--all", home=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "delta=1e-06 of 0.0001 (partition selection), 9.9e-05 left" in p.stdout
    assert f"everything this analyst has spent is ({b['epsilon']}, 2e-06)-DP" in p.stdout
    assert f"all analysts) is ({b['epsilon']}, 2e-06)-DP" in p.stdout  # ada is the only analyst
    p = run_cli("convert", "--rho", "13/40", "--delta", "1e-6", "--plus-delta", "1e-6", "--json", home=tmp_path)
    conv = json.loads(p.stdout)
    assert conv["delta_total"] == "2e-06" and conv["epsilon_tight"] == g.epsilon_tight
    p = run_cli("convert", "--rho", "13/40", "--delta", "1e-6", home=tmp_path)
    assert "converts rho alone" in p.stdout and "--plus-delta" in p.stdout
    p = run_cli("ledger", "--policy", policy, "--delta", "2", home=tmp_path)
    assert p.returncode == 1 and "DP302" in p.stderr


# --------------------------------------------------------------------------- a ledger that cannot record refuses


def replace_with_a_copy(path: Path) -> None:
    copy = path.with_name("copy")
    shutil.copyfile(path, copy)
    os.replace(copy, path)


def replace_with_a_directory(path: Path) -> None:
    os.unlink(path)
    os.mkdir(path)


def delete_the_wal(path: Path) -> None:
    os.unlink(f"{path}-wal")


def write_garbage_over_it(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.write(random.Random(7).randbytes(size))


def delete_it(path: Path) -> None:
    os.unlink(path)


@pytest.mark.parametrize("tamper", [replace_with_a_copy, replace_with_a_directory, delete_the_wal,
                                    write_garbage_over_it, delete_it])
def test_a_ledger_that_cannot_record_refuses(tmp_path, tamper):
    """SQLite would go on writing to the old inode of a replaced or deleted file (or WAL) and
    does not notice garbage over pages it has in its WAL: the ledger checks the files itself,
    every time, and refuses with DP404 — no sqlite3 error escapes."""
    led = Ledger(tmp_path / "t.ledger.sqlite", "ada", Fraction(1), total_delta=Fraction(1, 10**5))
    led.charge(one_charge())
    tamper(led.path)
    for use in (lambda: led.check(Fraction(1, 10)), lambda: led.charge(one_charge()), lambda: led.spent,
                lambda: led.remaining_delta, lambda: led.history(), lambda: led.summary()):
        with pytest.raises(LedgerError) as err:
            use()
        assert err.value.code == "DP404" and isinstance(err.value, dpsql.OperationalError)
        assert str(led.path) in str(err.value) and "nothing was charged and nothing released" in str(err.value)
    led.close()
    with pytest.raises(LedgerError, match="is closed"):
        led.check(Fraction(1, 10))


def test_a_query_on_a_tampered_ledger_is_refused_and_releases_nothing(demo):
    """The reported attack: overwrite the ledger file and delete its -wal under an open
    connection. The next query used to be answered with a charge that could not be stored."""
    with dpsql.connect(*demo) as con:
        con.execute("SELECT COUNT(*) FROM establishments")
        path = con.session.ledger.path
        replace_with_a_copy(path)
        delete_the_wal(path)
        cur = con.cursor()
        with pytest.raises(LedgerError):
            cur.execute("SELECT COUNT(*) FROM establishments")
        assert cur.receipt is None and cur.description is None


def test_opening_a_broken_ledger_is_a_ledger_error(tmp_path):
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(random.Random(3).randbytes(8192))
    foreign = tmp_path / "foreign.sqlite"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE charges (x)")  # a SQLite file, but not a ledger
    db.commit()
    db.close()
    (tmp_path / "a_directory").mkdir()
    for path in (garbage, foreign, tmp_path / "a_directory", tmp_path / "no" / "such" / "dir" / "l.sqlite"):
        with pytest.raises(LedgerError) as err:
            Ledger(path, "ada", Fraction(1))
        assert err.value.code == "DP404" and str(path) in str(err.value)


UNWRITABLE_CHILD = r"""
import resource, signal, sys
from fractions import Fraction
from dpsql.errors import LedgerError
from dpsql.ledger.book import Charge, Ledger
led = Ledger(sys.argv[1], "ada", Fraction(1))
led.charge(Charge("first", Fraction(1, 10), "m"))
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1, hard))  # no write past byte 1 of any file succeeds
try:
    led.charge(Charge("second", Fraction(1, 10), "m"))
    outcome = "CHARGED"
except LedgerError as exc:
    outcome = "REFUSED " + exc.code + " " + str(exc).splitlines()[0]
except BaseException as exc:
    outcome = "ESCAPED " + repr(exc)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
print(outcome, flush=True)
print("SPENT", led.spent, flush=True)
led.charge(Charge("third", Fraction(1, 10), "m"))  # writable again: the ledger works on
print("SPENT", led.spent, flush=True)
"""


def test_a_ledger_that_cannot_be_written_refuses(tmp_path):
    """An unwritable ledger, made so in a way that holds for root too (tests run as root, where
    chmod stops nothing): a child process may not write past the first byte of any file
    (RLIMIT_FSIZE), as on a full or read-only disk. The charge is refused with DP404 and
    nothing is recorded."""
    path = tmp_path / "t.ledger.sqlite"
    p = subprocess.run([sys.executable, "-c", UNWRITABLE_CHILD, str(path)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    outcome, spent, spent_after = p.stdout.splitlines()
    assert outcome.startswith("REFUSED DP404") and str(path) in outcome and "nothing was charged" in outcome
    assert spent == "SPENT 1/10" and spent_after == "SPENT 1/5"
    assert [c[0] for c in check_consistent(path)] == [1, 2]


# --------------------------------------------------------------------------- absurd magnitudes


ABSURD = ["1e999999999", "1e-999999999", "-1e999999999", "1E+999999999", "0e999999999", "1e1001", "1e16", "1e-16",
          "1" * 65, "0." + "0" * 70 + "1", "1e" + "9" * 60, float("inf"), 1e300, 5e-324, 10**5000,
          Fraction(1, 10**5000)]


def test_absurd_magnitudes_are_refused_from_the_text():
    """Fraction('1e999999999') builds a billion-digit integer (tens of seconds): parse_rho reads
    the exponent and the length from the text first. Every one of these must return, refused."""
    for value in ABSURD:
        with pytest.raises(BudgetValueError) as err:
            parse_rho(value, "dpsql.rho")
        assert err.value.code == "DP302"
    assert parse_rho("1e15") == 10**15 and parse_rho("1e-15") == Fraction(1, 10**15)
    assert parse_rho("0.1") == Fraction(1, 10) and parse_rho("1/3") == Fraction(1, 3) and parse_rho(2) == 2


def test_absurd_settings_in_sql_are_refused(con):
    for sql in ["SET dpsql.rho = 1e999999999", "SET dpsql.rho = 1e-999999999", "SET dpsql.moe = 1e999999999",
                "SET dpsql.moe_payann = '1e-999999999'", "SET dpsql.weights = 'COUNT(units)=1e999999999'"]:
        with pytest.raises(BudgetValueError):
            con.execute(sql)
    with pytest.raises(BudgetValueError):
        con.set_rho("1e999999999")
