# title: count of units over the whole table
# execute: true
SELECT COUNT(*) FROM establishments;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: sum of a measure runs over split rows, grouped by a public key
# execute: true
SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: avg of a NOT NULL measure shares the count of units
# execute: true
SELECT state, COUNT(*), AVG(employees) FROM establishments GROUP BY state;
SELECT "state" AS "state", COUNT(*) AS "__p0", SUM("employees") AS "__p1" FROM "establishments" GROUP BY "state";

# title: a condition that could fail on some row runs inside TRY and casts become TRY_CAST
# execute: true
SELECT SUM(payqtr1) FROM establishments WHERE CAST(naics2 AS INT) > 50 AND state IN ('CA', 'NY');
SELECT SUM("payqtr1") AS "__p0" FROM "establishments" WHERE TRY(TRY_CAST("naics2" AS INT) > 50) AND "state" IN ('CA', 'NY');

# title: comparisons of like kinds cannot fail and keep filter pushdown
# execute: true
SELECT COUNT(*) FROM establishments WHERE employees BETWEEN 5 AND 50 AND (naics2 = '72' OR county LIKE '06%') AND NOT state IS NULL;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "employees" BETWEEN 5 AND 50 AND ("naics2" = '72' OR "county" LIKE '06%') AND NOT "state" IS NULL;

# title: alias, qualified columns, mixed case and a trailing comment
# execute: true
select E.NAICS2 as sector, sum(E.PayAnn) as pay from Establishments e group by sector -- by sector
;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: group by ordinal over two public keys
# execute: true
SELECT state, naics2, COUNT(*) FROM establishments GROUP BY 1, 2;
SELECT "state" AS "state", "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state", "naics2";

# title: count of units written as count distinct of the unit
SELECT COUNT(DISTINCT id) FROM establishments;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: arithmetic over aggregates shares primitives
SELECT naics2, SUM(payann) / COUNT(*) AS pay_per_est, COUNT(*) FROM establishments GROUP BY naics2;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" GROUP BY "naics2";

# title: non-integer measure scaled to its granularity
# execute: true
SELECT SUM(latency_ms) FROM devices;
SELECT SUM(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT)) AS "__p0"
FROM "devices";

# title: paper table 2 payroll by industry
# execute: true
SELECT industry, SUM(payroll), SUM(employees) FROM paper_table2 GROUP BY industry;
SELECT "industry" AS "industry", SUM("payroll") AS "__p0", SUM("employees") AS "__p1" FROM "paper_table2" GROUP BY "industry";

# title: having order by and limit are post-processing only
SELECT naics2, SUM(payann) AS pay FROM establishments GROUP BY naics2 HAVING COUNT(*) > 100 ORDER BY pay DESC LIMIT 3;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" GROUP BY "naics2";

# title: group by a private key counts units per group for partition selection
# execute: true
SELECT county, SUM(payann) FROM establishments GROUP BY county;
SELECT "county" AS "county", SUM("payann") AS "__p0", COUNT(*) AS "__n" FROM "establishments" GROUP BY "county";

# title: a public and a private key together
# execute: true
SELECT state, naics, COUNT(*) FROM establishments WHERE employees > 50 GROUP BY state, naics;
SELECT "state" AS "state", "naics" AS "naics", COUNT(*) AS "__p0", COUNT(*) AS "__n" FROM "establishments" WHERE "employees" > 50 GROUP BY "state", "naics";
