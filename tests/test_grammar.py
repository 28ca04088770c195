"""Runs the SQL corpus in grammar_tests/ (format: grammar_tests/README.md)."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import sqlglot

from dpsql.errors import DpsqlError
from dpsql.intercept.probes import parsed
from dpsql.intercept.public_tables import answer_public_query, reads_only_public
from dpsql.sql.rewrite import exact_sql, reference_sql
from dpsql.session import Session

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "grammar_tests"))
import corpus  # noqa: E402 - grammar_tests/corpus.py: the reader and the docs renderer
from corpus import Case, load_cases  # noqa: E402


CASES = load_cases()
#: SQL over released answers (grammar_tests/over_answers*.sql): decided as two statements
OVER_ANSWERS = [c for c in load_cases(over_answers=True) if c.file.startswith(corpus.OVER_ANSWERS)]


def norm(sql: str) -> str:
    return sqlglot.parse_one(sql, read="duckdb").sql("duckdb", normalize=True)


@pytest.fixture(scope="module")
def corpus_session(demo_files, tmp_path_factory):
    """One session for the whole corpus: planning charges nothing, so cases cannot interfere."""
    policy = tmp_path_factory.mktemp("corpus") / "demo.policy.toml"
    shutil.copyfile(demo_files[1], policy)
    s = Session(demo_files[0], policy)
    yield s
    s.close()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus(corpus_session, case: Case):
    session = corpus_session
    where = f"{case.file}:{case.line} ({case.id})"
    if case.meta.get("public") == "true":
        # Answered before the pipeline, exactly and for free: the rows of the expected SQL on the file.
        result = answer_public_query(session, case.sql)
        assert result is not None and result.receipt.rho == 0, where
        assert sorted(result.rows, key=repr) == sorted(session.engine.run(case.expected), key=repr), where
        return
    tree = parsed(case.sql, session.analyst)  # no other case may be taken for a query of public tables only
    assert tree is None or not reads_only_public(tree, case.sql, session), f"{where}: read as public"
    if case.expected is None:
        with pytest.raises(DpsqlError) as err:
            session.plan(case.sql)
        assert err.value.code == case.meta["error"], f"{where}: {err.value}"
        return
    assert "error" not in case.meta, f"{where}: an accepted case cannot carry # error"
    plan = session.plan(case.sql)
    got = exact_sql(plan, session.schema[plan.table.name])
    assert norm(got) == norm(case.expected), f"{where}\n got: {got}"
    if case.meta.get("execute") == "true":
        schema = session.schema[plan.table.name]
        assert _rows(session, plan, case.expected) == _rows(session, plan, reference_sql(plan, schema)), where


ACCEPTED = [c for c in CASES if c.expected is not None and c.meta.get("public") != "true"]


@pytest.mark.parametrize("case", OVER_ANSWERS, ids=[c.id for c in OVER_ANSWERS])
def test_over_answers_corpus(corpus_session, case: Case):
    """Phase 1 of SQL over a released answer (dpsql/intercept/over_answers.py), which runs and
    charges nothing: a refused case gets its code; an accepted one is found, its outer query
    bound or decided, and its first release's exact SQL is the expected one (and runs): for a series
    limit read from one release (dpsql/intercept/series_derived.py), that one release's."""
    from dpsql.intercept import over_answers
    from dpsql.intercept.parameters import bound

    session = corpus_session
    where = f"{case.file}:{case.line} ({case.id})"
    spent = session.ledger.rho_spent_and_left()
    def text() -> str:  # `# params: [...]` (JSON): ? values bound as literals first, as dpsql.intercept.execute does
        return case.sql if "params" not in case.meta else bound(case.sql, json.loads(case.meta["params"]))

    if case.expected is None:
        with pytest.raises(DpsqlError) as err:
            over_answers.decide(session, text())
        assert err.value.code == case.meta["error"], f"{where}: {err.value}"
    else:
        found = over_answers.decide(session, text())
        assert found is not None, f"{where}: not read as SQL over a released answer"
        one = over_answers.derived(session, found) if not isinstance(found, over_answers.Over) else None
        plan = session.plan(one.base if one is not None else found.inner)  # a series limit read from one release
        got = exact_sql(plan, session.schema[plan.table.name])
        assert norm(got) == norm(case.expected), f"{where}\n got: {got}"
        assert _rows(session, plan, case.expected) == _rows(session, plan, reference_sql(plan, session.schema[plan.table.name])), where
    assert session.ledger.rho_spent_and_left() == spent, f"{where}: phase 1 charged"


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.id for c in ACCEPTED])
def test_reference_and_fast_sql_give_the_same_exact_values(corpus_session, case: Case):
    """EXPLAIN shows the materialised-split reference (paper 000 Algorithm 1) as "the same
    values" as the fast SQL that runs: on the demo database, for every accepted query, it is.
    Issue 29, finding 5: COUNT(DISTINCT measure) counted distinct split values (45 of 51 states)."""
    session = corpus_session
    plan = session.plan(case.sql)
    schema = session.schema[plan.table.name]
    assert _rows(session, plan, exact_sql(plan, schema)) == _rows(session, plan, reference_sql(plan, schema)), \
        f"{case.file}:{case.line} ({case.id})"


def _rows(session, plan, sql: str) -> list:
    """The exact rows of ``sql``, in an order of their own; a quantile's values (which come in no
    order, ``quantiles.values_sql``) as sorted lists."""
    got = session.engine.run(sql)
    return sorted((tuple(sorted(v) if plan.quantile_values and isinstance(v, list) else v for v in r) for r in got), key=repr)


def test_corpus_is_not_empty():
    assert len(CASES) >= 200
    assert sum(c.expected is None for c in CASES) >= 100 and sum(c.expected is not None for c in CASES) >= 100


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM establishments;",
    "SELECT COUNT(*) FROM establishments ;  ",
    "SELECT COUNT(*) FROM establishments; -- done",
    "SELECT COUNT(*) FROM establishments\n;\n",
])
def test_trailing_semicolon(corpus_session, sql):
    """The corpus splits cases on ';', so trailing semicolons are tested here."""
    plan = corpus_session.plan(sql)
    assert exact_sql(plan, corpus_session.schema["establishments"]).startswith('SELECT COUNT(*) AS "__p0"')


def test_the_docs_are_generated_from_the_corpus():
    """docs/sql_corpus.md lists every case and docs/sql.md carries the per-theme counts, both
    rendered from the corpus; run `python grammar_tests/corpus.py` after changing a case."""
    hint = "out of date: run `python grammar_tests/corpus.py`"
    everything = load_cases(over_answers=True)
    assert corpus.CATALOG_DOC.read_text() == corpus.catalog(everything), f"docs/sql_corpus.md {hint}"
    text = corpus.SQL_DOC.read_text()
    assert corpus.sql_doc_with_summary(text, everything) == text, f"the corpus summary in docs/sql.md {hint}"


def test_the_sql_examples_in_the_docs_are_accepted(corpus_session):
    """Every ```sql block of docs/sql.md (the examples the text promises work) plans (SQL over a
    released answer: is decided, dpsql/intercept/over_answers.py)."""
    from dpsql.intercept import over_answers

    blocks = re.findall(r"```sql\n(.*?)```", corpus.SQL_DOC.read_text(), flags=re.DOTALL)
    assert blocks
    for block in blocks:
        over_answers.decide(corpus_session, block) or corpus_session.plan(block)


def _documented_codes() -> dict[str, str]:
    """code -> meaning, from the error-code table of docs/sql.md."""
    rows = re.findall(r"^\| (DP\d{3}) \| (.*) \|$", (ROOT / "docs" / "sql.md").read_text(), flags=re.MULTILINE)
    return dict(rows)


def test_error_codes_match_the_docs():
    """Every DP1xx/DP2xx code in the docs table is exercised by the corpus or a test (retired ones
    excepted), and every code the corpus or dpsql uses is in the table."""
    documented = _documented_codes()
    live = {c for c, meaning in documented.items() if c[2] in "12" and "retired" not in meaning}
    corpus = {c.meta["error"] for c in CASES + OVER_ANSWERS if "error" in c.meta}
    tests = set(re.findall(r"DP[12]\d\d", "".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py")
                                                    if p.name != "test_grammar.py")))
    raised = set(re.findall(r"DP\d{3}", "".join(p.read_text() for p in (ROOT / "dpsql").rglob("*.py"))))
    assert live - corpus - tests == set(), "documented codes no case or test exercises"
    assert corpus - set(documented) == set(), "codes the corpus uses that docs/sql.md does not list"
    assert raised - set(documented) == set(), "codes dpsql raises that docs/sql.md does not list"
