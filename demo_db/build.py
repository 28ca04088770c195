"""Builder of the dpsql demo database (synthetic, deterministic from a seed).

Tables (schema main):

* ``establishments`` -- County-Business-Patterns-like establishments, calibrated to
  the score percentiles of paper 000 (Seeman et al.), Table 8.
* ``paper_table1`` / ``paper_table2`` -- paper 000 Tables 1 and 2(a), verbatim.
* ``devices`` -- one row per user with a long-tailed ``device_model`` and a
  heavy-tailed ``latency_ms`` (the introductory example of paper 002).
* ``states`` / ``naics_sectors`` -- public reference tables (state names and Census
  regions and divisions; NAICS sector titles), declared ``[public_tables]`` in the policy
  so that analysts can join them to ``establishments``.
* ``_dpsql_demo_meta`` -- internal: generator version, seed and row count, used by
  :func:`ensure_demo` to decide whether a cached file is current.

Only numpy, duckdb and the standard library are used (and :mod:`dpsql.home`, itself standard
library only, for the cache directory), so this module can ship inside the package as
``dpsql.demo_db``.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
from pathlib import Path
from typing import Callable

import duckdb
import numpy as np

from dpsql.home import home as dpsql_home

# Bump whenever the generated data changes, so cached demo files get rebuilt.
GENERATOR_VERSION = "5"  # 2: NOT NULL constraints (AVG shares COUNT(*)'s noisy count); 3: public tables; 4: persons;
#   5: establishments.opened (DATE) and devices.first_seen (TIMESTAMP), the date/time keys
DEFAULT_ROWS = 200_000
DEFAULT_SEED = 20261122
CHUNK_ROWS = 1_000_000
POLICY_PATH = Path(__file__).with_name("policy.toml")

# The fixed "universe" (county codes and sizes, NAICS code list, device model
# names) comes from this constant seed, not the data seed: every build shares
# the same code lists; the seed only changes which rows are drawn.
_UNIVERSE_SEED = 0x0D95_C0DE

Progress = Callable[[str], None] | None

# state: (2-digit FIPS, number of counties, relative establishment count ~ CBP)
STATES: dict[str, tuple[str, int, float]] = {
    "AK": ("02", 30, 21), "AL": ("01", 67, 100), "AR": ("05", 75, 65),
    "AZ": ("04", 15, 150), "CA": ("06", 58, 950), "CO": ("08", 64, 180),
    "CT": ("09", 8, 90), "DC": ("11", 1, 23), "DE": ("10", 3, 27),
    "FL": ("12", 67, 650), "GA": ("13", 159, 250), "HI": ("15", 5, 32),
    "IA": ("19", 99, 85), "ID": ("16", 44, 55), "IL": ("17", 102, 330),
    "IN": ("18", 92, 150), "KS": ("20", 105, 75), "KY": ("21", 120, 95),
    "LA": ("22", 64, 110), "MA": ("25", 14, 180), "MD": ("24", 24, 140),
    "ME": ("23", 16, 40), "MI": ("26", 83, 230), "MN": ("27", 87, 150),
    "MO": ("29", 115, 150), "MS": ("28", 82, 60), "MT": ("30", 56, 40),
    "NC": ("37", 100, 250), "ND": ("38", 53, 25), "NE": ("31", 93, 55),
    "NH": ("33", 10, 40), "NJ": ("34", 21, 240), "NM": ("35", 33, 45),
    "NV": ("32", 17, 70), "NY": ("36", 62, 540), "OH": ("39", 88, 260),
    "OK": ("40", 77, 95), "OR": ("41", 36, 120), "PA": ("42", 67, 310),
    "RI": ("44", 5, 30), "SC": ("45", 46, 120), "SD": ("46", 66, 27),
    "TN": ("47", 95, 150), "TX": ("48", 254, 640), "UT": ("49", 29, 90),
    "VA": ("51", 133, 210), "VT": ("50", 14, 21), "WA": ("53", 39, 200),
    "WI": ("55", 72, 145), "WV": ("54", 55, 37), "WY": ("56", 23, 20),
}

# Public reference data (U.S. Census Bureau): state -> (name, Census region, Census division).
STATE_NAMES: dict[str, tuple[str, str, str]] = {
    **{s: (n, "Northeast", "New England") for s, n in [
        ("CT", "Connecticut"), ("MA", "Massachusetts"), ("ME", "Maine"), ("NH", "New Hampshire"),
        ("RI", "Rhode Island"), ("VT", "Vermont")]},
    **{s: (n, "Northeast", "Middle Atlantic") for s, n in [
        ("NJ", "New Jersey"), ("NY", "New York"), ("PA", "Pennsylvania")]},
    **{s: (n, "Midwest", "East North Central") for s, n in [
        ("IL", "Illinois"), ("IN", "Indiana"), ("MI", "Michigan"), ("OH", "Ohio"), ("WI", "Wisconsin")]},
    **{s: (n, "Midwest", "West North Central") for s, n in [
        ("IA", "Iowa"), ("KS", "Kansas"), ("MN", "Minnesota"), ("MO", "Missouri"), ("ND", "North Dakota"),
        ("NE", "Nebraska"), ("SD", "South Dakota")]},
    **{s: (n, "South", "South Atlantic") for s, n in [
        ("DC", "District of Columbia"), ("DE", "Delaware"), ("FL", "Florida"), ("GA", "Georgia"),
        ("MD", "Maryland"), ("NC", "North Carolina"), ("SC", "South Carolina"), ("VA", "Virginia"),
        ("WV", "West Virginia")]},
    **{s: (n, "South", "East South Central") for s, n in [
        ("AL", "Alabama"), ("KY", "Kentucky"), ("MS", "Mississippi"), ("TN", "Tennessee")]},
    **{s: (n, "South", "West South Central") for s, n in [
        ("AR", "Arkansas"), ("LA", "Louisiana"), ("OK", "Oklahoma"), ("TX", "Texas")]},
    **{s: (n, "West", "Mountain") for s, n in [
        ("AZ", "Arizona"), ("CO", "Colorado"), ("ID", "Idaho"), ("MT", "Montana"), ("NM", "New Mexico"),
        ("NV", "Nevada"), ("UT", "Utah"), ("WY", "Wyoming")]},
    **{s: (n, "West", "Pacific") for s, n in [
        ("AK", "Alaska"), ("CA", "California"), ("HI", "Hawaii"), ("OR", "Oregon"), ("WA", "Washington")]},
}

# Public reference data: 2-digit NAICS code -> (sector, sector title), 2022 NAICS; 99 is
# County Business Patterns' "Industries not classified".
NAICS_SECTOR_TITLES: dict[str, tuple[str, str]] = {
    "11": ("11", "Agriculture, Forestry, Fishing and Hunting"),
    "21": ("21", "Mining, Quarrying, and Oil and Gas Extraction"),
    "22": ("22", "Utilities"), "23": ("23", "Construction"),
    "31": ("31-33", "Manufacturing"), "32": ("31-33", "Manufacturing"), "33": ("31-33", "Manufacturing"),
    "42": ("42", "Wholesale Trade"), "44": ("44-45", "Retail Trade"), "45": ("44-45", "Retail Trade"),
    "48": ("48-49", "Transportation and Warehousing"), "49": ("48-49", "Transportation and Warehousing"),
    "51": ("51", "Information"), "52": ("52", "Finance and Insurance"),
    "53": ("53", "Real Estate and Rental and Leasing"),
    "54": ("54", "Professional, Scientific, and Technical Services"),
    "55": ("55", "Management of Companies and Enterprises"),
    "56": ("56", "Administrative and Support and Waste Management and Remediation Services"),
    "61": ("61", "Educational Services"), "62": ("62", "Health Care and Social Assistance"),
    "71": ("71", "Arts, Entertainment, and Recreation"), "72": ("72", "Accommodation and Food Services"),
    "81": ("81", "Other Services (except Public Administration)"), "99": ("99", "Industries not classified"),
}

# NAICS sector: (relative establishment count, employee-rank shift, median annual
# wage per employee in $1000s, first-quarter share of annual payroll, 3-digit subsectors)
SECTORS: dict[str, tuple[float, float, float, float, str]] = {
    "11": (0.3, -0.2, 38, 0.22, "111 112 113 114 115"),
    "21": (0.3, 0.5, 95, 0.25, "211 212 213"),
    "22": (0.3, 0.6, 110, 0.25, "221"),
    "23": (10.0, -0.2, 62, 0.23, "236 237 238"),
    "31": (0.9, 0.6, 52, 0.25, "311 312 313 314 315 316"),
    "32": (1.1, 0.6, 65, 0.25, "321 322 323 324 325 326 327"),
    "33": (1.7, 0.6, 70, 0.25, "331 332 333 334 335 336 337 339"),
    "42": (5.0, 0.1, 72, 0.25, "423 424 425"),
    "44": (8.0, 0.1, 33, 0.24, "441 442 443 444 445 446 447 448"),
    "45": (3.5, 0.0, 30, 0.23, "451 452 453 454"),
    "48": (3.0, 0.0, 52, 0.25, "481 482 483 484 485 486 487 488"),
    "49": (0.8, 0.3, 45, 0.24, "491 492 493"),
    "51": (2.0, 0.0, 100, 0.26, "511 512 515 517 518 519"),
    "52": (3.5, -0.1, 95, 0.28, "521 522 523 524 525"),  # Q1 bonuses
    "53": (4.5, -0.5, 55, 0.25, "531 532 533"),
    "54": (11.0, -0.4, 85, 0.26, "541"),
    "55": (0.7, 0.7, 120, 0.27, "551"),
    "56": (5.5, 0.1, 42, 0.24, "561 562"),
    "61": (1.2, 0.2, 45, 0.25, "611"),
    "62": (12.0, 0.2, 52, 0.25, "621 622 623 624"),
    "71": (2.0, -0.1, 32, 0.22, "711 712 713"),
    "72": (9.0, 0.5, 21, 0.23, "721 722"),
    "81": (10.0, -0.4, 35, 0.25, "811 812 813 814"),
    "99": (0.3, -1.0, 40, 0.25, "999"),  # unclassified: the single code 999990
}

# Real, common 6-digit codes; they get the top frequency ranks in their sector.
REAL_NAICS = """
111998 112111 113310 115112 211120 212321 213112 221122 221310 221210 236115 236118
238220 238210 238160 237310 311811 312120 311612 323111 325412 326199 327320 332710
336390 334413 333999 423990 424410 425120 423690 445110 441110 446110 447110 444130
452319 453998 454110 451110 484121 484110 485310 488510 492110 493110 517312 511210
512131 518210 522110 524210 523930 522292 531210 531110 531311 532111 541110 541211
541330 541511 541940 541611 551114 551112 561720 561730 561320 561612 611110 611699
611310 621111 621210 623110 622110 624410 621610 713940 711510 713990 722511 722513
721110 722515 722410 811111 812112 813110 812320 811121 999990
""".split()

# Employees: quantile knots (P(employees <= k), k) of the body (10% have no
# employees at the reference date); above 100 a Pareto tail with index 1.2.
# The knots are paper 000 Table 8's percentiles, plus a few in between.
_EMP_BODY = [(0.10, 0), (0.47, 2), (0.66, 5), (0.79, 10), (0.885, 20),
             (0.947, 50), (0.97, 100)]
_EMP_TAIL_INDEX = 1.2
_EMP_MAX = 100_000  # the largest real establishments have tens of thousands of jobs
_CHAIN_SHARE = 0.10  # share of establishments that belong to multi-unit firms

_POPULAR_DEVICES = """Galaxy S21|iPhone 13|Pixel 7|iPhone 12|Galaxy A52|Redmi Note 10|iPhone 14
|Galaxy S22|Pixel 6|Galaxy A12|iPhone 11|Moto G Power|OnePlus 9|Galaxy S20|iPhone SE
|Pixel 7a|Redmi 9A|Galaxy A32|iPhone 14 Pro|Xperia 10 III|Galaxy Note 20|Pixel 8|OnePlus Nord
|Moto G Stylus|Galaxy A13|iPhone 15|Pixel 6a|Redmi Note 11|Galaxy Z Flip 4|Nokia G20""".replace("\n", "").split("|")
_DEVICE_BRANDS = ["Model", "Galaxy", "Redmi", "Moto", "Oppo", "Vivo", "Tecno", "Nokia", "Xperia", "Realme"]


# ---------------------------------------------------------------------------
# The fixed universe of codes
# ---------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _counties() -> tuple[list[str], list[str], np.ndarray]:
    """(state per county, county code, cumulative probability over all counties).

    County numbers are the odd numbers 001, 003, ... like real FIPS codes; sizes
    within a state are Zipf-like (1/rank) and the rank order is shuffled so the
    largest county is not always 001.
    """
    rng = np.random.default_rng(_UNIVERSE_SEED)
    total = sum(w for _, _, w in STATES.values())
    states, codes, probs = [], [], []
    for st, (fips, n, w) in STATES.items():
        ranks = rng.permutation(n) + 1
        cw = 1.0 / ranks**1.1
        for k in range(n):
            states.append(st)
            codes.append(f"{fips}{2 * k + 1:03d}")
        probs.append(cw / cw.sum() * w / total)
    return states, codes, _cumulative(np.concatenate(probs))


@functools.lru_cache(maxsize=1)
def _naics() -> tuple[list[str], np.ndarray]:
    """(6-digit codes, cumulative probability) with a 2/3/4/6-digit hierarchy.

    Each 3-digit subsector gets a few 4-digit industry groups and each group a
    few 6-digit codes; frequencies within a sector are Zipf-like (1/rank).
    """
    rng = np.random.default_rng(_UNIVERSE_SEED + 1)
    total = sum(s[0] for s in SECTORS.values())
    suffixes = ["10", "11", "12", "13", "14", "15", "19", "20", "21", "22", "30", "90", "91", "99"]
    codes: list[str] = []
    probs = []
    for sec, (w, _, _, _, subs) in SECTORS.items():
        real = [c for c in REAL_NAICS if c.startswith(sec)]
        synth: set[str] = set()
        if sec != "99":
            subs_l = subs.split()
            for sub in subs_l:
                n_groups = rng.integers(3, 10) if len(subs_l) <= 2 else rng.integers(2, 6)
                for g in rng.choice(np.arange(1, 10), n_groups, replace=False):
                    for suf in rng.choice(suffixes, rng.integers(2, 8), replace=False):
                        synth.add(f"{sub}{g}{suf}")
        rest = sorted(synth - set(real))
        sec_codes = real + [rest[i] for i in rng.permutation(len(rest))]
        cw = 1.0 / np.arange(1, len(sec_codes) + 1)
        codes += sec_codes
        probs.append(cw / cw.sum() * w / total)
    return codes, _cumulative(np.concatenate(probs))


def _cumulative(p: np.ndarray) -> np.ndarray:
    c = np.cumsum(p)
    return c / c[-1]


def _draw(cum: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    """n draws from the categorical distribution with cumulative probabilities cum."""
    return np.minimum(np.searchsorted(cum, rng.random(n), side="right"), len(cum) - 1)


# ---------------------------------------------------------------------------
# Row generators (numpy only)
# ---------------------------------------------------------------------------

def _employee_quantile(u: np.ndarray) -> np.ndarray:
    """Inverse CDF of employees: log-linear between the body knots, Pareto above 100."""
    pk = np.array([p for p, _ in _EMP_BODY])
    # Employees = floor(Y) with Y continuous; the knot "P(emp <= k) = p" is Y = k + 1.
    lk = np.log(np.array([k for _, k in _EMP_BODY], float) + 1)
    p_tail, k_tail = _EMP_BODY[-1]
    body = np.exp(np.interp(u, pk, lk))
    with np.errstate(divide="ignore"):
        tail = (k_tail + 1) * ((1 - u) / (1 - p_tail)) ** (-1 / _EMP_TAIL_INDEX)
    y = np.where(u <= p_tail, body, tail)
    y = np.where(u < pk[0], 0, y)
    return np.minimum(np.floor(y), _EMP_MAX).astype(np.int64)


def _firm_labels(rng: np.random.Generator, n: int) -> np.ndarray:
    """Firm label (0..n_firms-1) of each of n establishments, in random order.

    About _CHAIN_SHARE of establishments belong to chains whose sizes follow a
    power law (P(size >= s) ~ s^-1.3, at most 1000 and at most 5% of the chain
    establishments), so a few chains have hundreds of establishments; the rest
    are single-unit firms.
    """
    n_chain = int(round(n * _CHAIN_SHARE))
    sizes = np.empty(0, np.int64)
    if n_chain >= 2:
        draws = np.floor(2 * rng.random(n_chain) ** (-1 / 1.3)).astype(np.int64)
        sizes = np.minimum(draws, max(2, min(1000, n_chain // 20)))
        cut = int(np.searchsorted(np.cumsum(sizes), n_chain)) + 1
        sizes = sizes[:cut]
        sizes[-1] -= sizes.sum() - n_chain  # trim the last chain to fit exactly
        sizes = sizes[sizes > 0]
    chains = np.repeat(np.arange(len(sizes)), sizes)
    singles = np.arange(len(sizes), len(sizes) + n - len(chains))
    return rng.permutation(np.concatenate([chains, singles]))


def _establishment_chunk(rng: np.random.Generator, first_id: int, n: int,
                         first_firm: int) -> dict[str, np.ndarray]:
    """Numeric columns of n establishments; state/county/naics as universe indices."""
    _, _, county_cum = _counties()
    naics_codes, naics_cum = _naics()
    sec_names = list(SECTORS)
    sec_of_code = np.array([sec_names.index(c[:2]) for c in naics_codes])
    shift, wage, q1 = (np.array([s[i] for s in SECTORS.values()], float) for i in (1, 2, 3))

    labels = _firm_labels(rng, n)
    n_firms = int(labels.max()) + 1
    naics_i = _draw(naics_cum, rng, n_firms)[labels]  # a chain shares one industry
    sec = sec_of_code[naics_i]
    county_i = _draw(county_cum, rng, n)

    # Employees: draw an exact sample of the target marginal, then hand out the
    # sorted values by the rank of a sector-shifted score, so sectors differ in
    # scale while the overall distribution stays calibrated.
    emp = np.empty(n, np.int64)
    emp[np.argsort(shift[sec] + rng.standard_normal(n))] = _employee_quantile(np.sort(rng.random(n)))

    # Annual payroll ($1000s) = employees x lognormal per-employee wage of the
    # sector, a little higher in larger establishments ((1 + emp)^0.1); the 0.60
    # and the spreads are tuned to Table 8.  Establishments without employees (at
    # the reference date) still report a small payroll, or none.
    per_emp = wage[sec] * 0.60 * (1.0 + emp) ** 0.1 * np.exp(0.7 * rng.standard_normal(n))
    small = np.where(rng.random(n) < 0.3, 0.0, 12 * np.exp(1.2 * rng.standard_normal(n)))
    payann = np.where(emp > 0, np.maximum(1, np.rint(emp * per_emp)), np.rint(small))
    # First quarter ~ a quarter of the year, with sector seasonality and noise.
    share = np.clip(q1[sec] * np.exp(0.15 * rng.standard_normal(n)), 0.0, 1.0)
    payqtr1 = np.rint(payann * share)

    return {
        "id": np.arange(first_id, first_id + n, dtype=np.int64),
        "firm_id": labels.astype(np.int64) + first_firm,
        "county_i": county_i.astype(np.int64),
        "naics_i": naics_i.astype(np.int64),
        "employees": emp,
        "payann": payann.astype(np.int64),
        "payqtr1": payqtr1.astype(np.int64),
    }


def _opened_days(rng: np.random.Generator, n: int) -> np.ndarray:
    """Days from 1990-01-01 to each establishment's opening: ages exponential with a 9-year
    mean (young establishments are more common), none before 1990 or after 2024-12-31."""
    last = 12_783  # 2024-12-31
    age = np.minimum(np.floor(rng.exponential(9 * 365.25, n)), last).astype(np.int64)
    return last - age


def _devices(rng: np.random.Generator, n_users: int) -> tuple[list[str], dict[str, np.ndarray]]:
    """(model names, columns) for one row per user.

    Model popularity is Zipf(1.1) over max(2000, n_users // 4) models, so a few
    models are very common and thousands are seen with 1-3 users.  Latency is
    lognormal times a per-model factor (median ~80 ms), with 1% Pareto-tailed
    stalls, rounded to 0.1 ms.
    """
    n_models = max(2000, n_users // 4)
    urng = np.random.default_rng(_UNIVERSE_SEED + 2)
    nums = 1000 + urng.permutation(max(99_000, 4 * n_models))[:n_models]  # distinct
    brands = urng.integers(0, len(_DEVICE_BRANDS), n_models)
    names = [f"{_DEVICE_BRANDS[b]}-{m}" for b, m in zip(brands, nums)]
    names[: len(_POPULAR_DEVICES)] = _POPULAR_DEVICES
    model_factor = np.exp(0.25 * urng.standard_normal(n_models))

    model_i = _draw(_cumulative(1.0 / np.arange(1, n_models + 1) ** 1.1), rng, n_users)
    lat = 72 * model_factor[model_i] * np.exp(0.5 * rng.standard_normal(n_users))
    stall = rng.random(n_users) < 0.01
    lat = np.where(stall, lat * (1 + rng.pareto(1.5, n_users)), lat)
    return names, {
        "user_id": np.arange(1, n_users + 1, dtype=np.int64),
        "model_i": model_i.astype(np.int64),
        # rint(x*10)/10 is the nearest double to a multiple of 0.1 (granularity)
        "latency_ms": np.rint(lat * 10) / 10,
    }


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE establishments (id BIGINT NOT NULL, firm_id BIGINT NOT NULL, state VARCHAR NOT NULL,
    county VARCHAR NOT NULL, naics VARCHAR NOT NULL, naics2 VARCHAR NOT NULL,
    employees BIGINT NOT NULL, payann BIGINT NOT NULL, payqtr1 BIGINT NOT NULL, opened DATE NOT NULL);
CREATE TABLE paper_table1 (id BIGINT NOT NULL, industry VARCHAR NOT NULL, employees BIGINT NOT NULL);
CREATE TABLE paper_table2 (id BIGINT NOT NULL, industry VARCHAR NOT NULL, employees BIGINT NOT NULL,
    payroll BIGINT NOT NULL);
CREATE TABLE devices (user_id BIGINT NOT NULL, device_model VARCHAR NOT NULL, latency_ms DOUBLE NOT NULL,
    first_seen TIMESTAMP NOT NULL);
CREATE TABLE states (code VARCHAR PRIMARY KEY, name VARCHAR NOT NULL, fips VARCHAR NOT NULL,
    region VARCHAR NOT NULL, division VARCHAR NOT NULL);
CREATE TABLE naics_sectors (naics2 VARCHAR PRIMARY KEY, sector VARCHAR NOT NULL, title VARCHAR NOT NULL);
CREATE TABLE _dpsql_demo_meta (key VARCHAR, value VARCHAR);
INSERT INTO paper_table1 VALUES (1,'Retail',5),(2,'Retail',5),(3,'Retail',10),
    (4,'Retail',1000),(5,'Technology',10000),(6,'Services',5),(7,'Hospitality',5);
INSERT INTO paper_table2 VALUES (1,'Agriculture',150,10000000),(2,'Agriculture',50,15000000),
    (3,'Mining',100,10000000),(4,'Mining',50,10000000),(5,'Retail',20,1000000);
"""


def build_database(path: str | Path, rows: int = DEFAULT_ROWS, seed: int = DEFAULT_SEED,
                   progress: Progress = None) -> Path:
    """Write the demo database to ``path`` (replacing it atomically) and return the path.

    Same ``seed`` and ``rows`` give identical table contents.  Rows are generated
    in chunks of CHUNK_ROWS, so memory stays bounded for tens of millions of rows.
    """
    path = Path(path)
    if rows < 1:
        raise ValueError("rows must be positive")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    _remove(tmp)
    say = progress or (lambda _msg: None)
    try:
        con = duckdb.connect(str(tmp))
        try:
            _write(con, rows, seed, say)
        finally:
            con.close()
        _remove(Path(f"{path}.wal"))  # a stale WAL would be replayed onto the new file
        os.replace(tmp, path)
    finally:
        _remove(tmp)
    say(f"demo database written: {path}")
    return path


def _write(con: duckdb.DuckDBPyConnection, rows: int, seed: int, say: Callable[[str], None]) -> None:
    con.execute(_SCHEMA)
    con.executemany("INSERT INTO states VALUES (?, ?, ?, ?, ?)",
                    [(code, *STATE_NAMES[code][:1], STATES[code][0], *STATE_NAMES[code][1:]) for code in sorted(STATES)])
    con.executemany("INSERT INTO naics_sectors VALUES (?, ?, ?)",
                    [(code, *NAICS_SECTOR_TITLES[code]) for code in sorted(SECTORS)])
    states, county_codes, _ = _counties()
    naics_codes, _ = _naics()
    # Strings go in through small lookup tables joined in SQL: much faster than
    # handing DuckDB numpy unicode arrays.
    county_lk = {"i": np.arange(len(county_codes)), "state": np.array(states, dtype=object),
                 "county": np.array(county_codes, dtype=object)}
    naics_lk = {"i": np.arange(len(naics_codes)), "naics": np.array(naics_codes, dtype=object),
                "naics2": np.array([c[:2] for c in naics_codes], dtype=object)}
    con.execute("CREATE TEMP TABLE county_lk AS SELECT * FROM county_lk")
    con.execute("CREATE TEMP TABLE naics_lk AS SELECT * FROM naics_lk")

    n_chunks = -(-rows // CHUNK_ROWS)
    first_firm = 1
    for c in range(n_chunks):
        n = min(CHUNK_ROWS, rows - c * CHUNK_ROWS)
        # One independent stream per chunk: [seed, table tag, chunk index].
        rng = np.random.default_rng([seed, 1, c])
        chunk = _establishment_chunk(rng, c * CHUNK_ROWS + 1, n, first_firm)
        # Opening dates from their own stream, so the columns above are as before 5.
        chunk["opened_day"] = _opened_days(np.random.default_rng([seed, 5, c]), n)
        first_firm = int(chunk["firm_id"].max()) + 1
        con.execute("""
            INSERT INTO establishments
            SELECT e.id, e.firm_id, k.state, k.county, n.naics, n.naics2,
                   e.employees, e.payann, e.payqtr1, DATE '1990-01-01' + CAST(e.opened_day AS INTEGER)
            FROM chunk e JOIN county_lk k ON e.county_i = k.i JOIN naics_lk n ON e.naics_i = n.i
            ORDER BY e.id""")
        say(f"establishments: {c * CHUNK_ROWS + n:,}/{rows:,} rows")

    n_users = max(20_000, rows // 10)
    names, dev = _devices(np.random.default_rng([seed, 2]), n_users)
    # First seen: a second of 2024 (a leap year), from its own stream.
    dev["first_seen_s"] = np.random.default_rng([seed, 6]).integers(0, 366 * 86400, n_users)
    model_lk = {"i": np.arange(len(names)), "name": np.array(names, dtype=object)}
    con.execute("""
        INSERT INTO devices
        SELECT d.user_id, m.name, d.latency_ms, TIMESTAMP '2024-01-01 00:00:00' + to_seconds(d.first_seen_s)
        FROM dev d JOIN model_lk m ON d.model_i = m.i ORDER BY d.user_id""")
    say(f"devices: {n_users:,} users")

    from dpsql.demo_db.persons import write_persons  # the SafeTab example's people (docs/workloads.md)

    write_persons(con, seed, sorted(STATES), np.array([STATES[s][2] for s in sorted(STATES)]))
    say("persons: written")
    con.executemany("INSERT INTO _dpsql_demo_meta VALUES (?, ?)",
                    [(k, str(v)) for k, v in _meta(rows, seed).items()])
    con.execute("CHECKPOINT")


def _meta(rows: int, seed: int) -> dict[str, str]:
    return {"generator_version": GENERATOR_VERSION, "seed": str(seed), "rows": str(rows)}


def _remove(p: Path) -> None:
    for q in (p, Path(f"{p}.wal")):
        try:
            q.unlink()
        except FileNotFoundError:
            pass


# ---------------------------------------------------------------------------
# Cached demo
# ---------------------------------------------------------------------------

def ensure_demo(rows: int = DEFAULT_ROWS, home: str | Path | None = None,
                progress: Progress = None) -> tuple[Path, Path]:
    """Return (database path, policy path) of the cached demo, building it if needed.

    The cache directory is ``home``, else ``$DPSQL_HOME``, else ``~/.cache/dpsql``.
    The database is rebuilt only when missing or built by another generator
    version/seed/size; the policy copy is refreshed on every call.  An exclusive
    file lock makes concurrent callers (threads or processes) build only once.
    """
    home = Path(home).expanduser() if home else dpsql_home()
    home.mkdir(parents=True, exist_ok=True)
    stem = "demo" if rows == DEFAULT_ROWS else f"demo-{rows}"
    db, policy = home / f"{stem}.duckdb", home / f"{stem}.policy.toml"
    with open(home / f"{stem}.duckdb.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not _is_current(db, _meta(rows, DEFAULT_SEED)):
            build_database(db, rows, DEFAULT_SEED, progress)
        tmp = policy.with_name(f".{policy.name}.tmp-{os.getpid()}")
        shutil.copyfile(POLICY_PATH, tmp)
        os.replace(tmp, policy)  # readers never see a half-copied policy
    return db, policy


def _is_current(db: Path, want: dict[str, str]) -> bool:
    """True if ``db`` exists and its metadata table matches ``want``.

    DuckDB keeps one database instance per file and process, and refuses a second connection
    with other settings: the check opens the file exactly as dpsql's engine does (read-only,
    :data:`~dpsql.backends.duckdb.LOCKDOWN`), so it shares the instance of an open session
    instead of failing. A file this process holds with yet other settings (a session opened
    with ``threads=``) is in use, so it is the one to use: never rebuilt underneath it.
    """
    from dpsql.backends.duckdb import LOCKDOWN

    if not db.exists():
        return False
    try:
        con = duckdb.connect(str(db), read_only=True, config=dict(LOCKDOWN))
    except duckdb.ConnectionException:
        return True  # open in this process (a session holds it): use it as it is
    except duckdb.IOException as e:
        if "lock" in str(e).lower():
            raise  # open for writing by another process
        return False  # not a valid database file: rebuild
    try:
        have = dict(con.execute("SELECT key, value FROM _dpsql_demo_meta").fetchall())
    except duckdb.Error:
        return False
    finally:
        con.close()
    return all(have.get(k) == v for k, v in want.items())
