# title: having on a count
# execute: true
SELECT state, COUNT(*) FROM establishments GROUP BY state HAVING COUNT(*) > 100;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: having on an aggregate not in the select list
# execute: true
SELECT naics2, SUM(payann) FROM establishments GROUP BY naics2 HAVING AVG(employees) > 5;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0", SUM("employees") AS "__p1", COUNT(*) AS "__p2" FROM "establishments" GROUP BY "naics2";

# title: having on an output alias
# execute: true
SELECT naics2, COUNT(*) AS n FROM establishments GROUP BY naics2 HAVING n > 50;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: having on a key
# execute: true
SELECT state, COUNT(*) FROM establishments GROUP BY state HAVING state <> 'DC';
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: having with and
# execute: true
SELECT state, SUM(payann) AS pay FROM establishments GROUP BY state HAVING pay > 0 AND COUNT(*) > 10;
SELECT "state" AS "state", SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" GROUP BY "state";

# title: order by an aggregate descending
# execute: true
SELECT state, SUM(payann) FROM establishments GROUP BY state ORDER BY SUM(payann) DESC;
SELECT "state" AS "state", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "state";

# title: order by an output alias
# execute: true
SELECT naics2, AVG(payann) AS avg_pay FROM establishments GROUP BY naics2 ORDER BY avg_pay;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" GROUP BY "naics2";

# title: order by an ordinal
# execute: true
SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2 ORDER BY 2 DESC;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: order by a key ascending
# execute: true
SELECT state, COUNT(*) FROM establishments GROUP BY state ORDER BY state ASC;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: order by two expressions
# execute: true
SELECT state, naics2, COUNT(*) AS n FROM establishments GROUP BY state, naics2 ORDER BY state, n DESC;
SELECT "state" AS "state", "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state", "naics2";

# title: order by with nulls last
# execute: true
SELECT naics2, AVG(payann) AS a FROM establishments GROUP BY naics2 ORDER BY a DESC NULLS LAST;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" GROUP BY "naics2";

# title: limit
# execute: true
SELECT state, COUNT(*) AS n FROM establishments GROUP BY state ORDER BY n DESC LIMIT 5;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: limit and offset
# execute: true
SELECT state, COUNT(*) AS n FROM establishments GROUP BY state ORDER BY n DESC LIMIT 5 OFFSET 5;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: offset without limit
# execute: true
SELECT state, COUNT(*) FROM establishments GROUP BY state ORDER BY state OFFSET 10;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: limit zero
# execute: true
SELECT COUNT(*) FROM establishments LIMIT 0;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: having order by limit together
# execute: true
SELECT naics2, SUM(payann) / COUNT(*) AS ppe FROM establishments WHERE employees > 0 GROUP BY naics2 HAVING COUNT(*) > 10 ORDER BY ppe DESC LIMIT 3;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" WHERE "employees" > 0 GROUP BY "naics2";

# title: order by an expression over aggregates
# execute: true
SELECT state, COUNT(*) FROM establishments GROUP BY state HAVING SUM(payann) > 0 ORDER BY SUM(payann) / COUNT(*);
SELECT "state" AS "state", COUNT(*) AS "__p0", SUM("payann") AS "__p1" FROM "establishments" GROUP BY "state";

# title: having without group by
# execute: true
SELECT COUNT(*) FROM establishments HAVING COUNT(*) > 0;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: cast of a key in the select list
# execute: true
SELECT CAST(naics2 AS INTEGER) AS sector, COUNT(*) FROM establishments GROUP BY naics2;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: TOP n (T-SQL) is LIMIT n
# execute: true
SELECT TOP 3 state, COUNT(*) FROM establishments GROUP BY state ORDER BY state;
SELECT "state" AS "state", COUNT(*) AS "__p0"
FROM "establishments"
GROUP BY "state";

# title: FETCH FIRST n ROWS ONLY (the SQL standard's) is LIMIT n
# execute: true
SELECT state, COUNT(*) FROM establishments GROUP BY state ORDER BY state FETCH FIRST 3 ROWS ONLY;
SELECT "state" AS "state", COUNT(*) AS "__p0"
FROM "establishments"
GROUP BY "state";

# title: a count labelled otherwise, with a LIMIT, is a count (not the Samples pane's)
# execute: true
SELECT COUNT(*) AS count FROM main.establishments LIMIT 50000;
SELECT COUNT(*) AS "__p0"
FROM "establishments";

# title: a count labelled "COUNT(*)" without a LIMIT is a count
# execute: true
SELECT COUNT(*) AS "COUNT(*)" FROM establishments;
SELECT COUNT(*) AS "__p0"
FROM "establishments";

# title: a count labelled "COUNT(*)" by group, with a LIMIT, is a chart's
# execute: true
SELECT state, COUNT(*) AS "COUNT(*)" FROM establishments GROUP BY state ORDER BY "COUNT(*)" DESC LIMIT 5;
SELECT "state" AS "state", COUNT(*) AS "__p0"
FROM "establishments"
GROUP BY "state";

# title: SIGN and SQUARE of noisy aggregates
# execute: true
SELECT state, SIGN(SUM(payann)) AS s, SQUARE(AVG(employees)) AS sq FROM establishments GROUP BY state;
SELECT "state" AS "state", SUM("payann") AS "__p0", SUM("employees") AS "__p1", COUNT(*) AS "__p2"
FROM "establishments"
GROUP BY "state";
