-- SQL over released answers (docs/sql.md, "SQL over released answers"). The expected SQL is the
-- exact query of the first release, the subquery's (an ordinary dpsql query). The outer query runs
-- on its noisy rows only (post-processing, free), or, for a join to an aggregate subquery of the
-- same table (a series limit), as a second release over the released groups. A series limit whose
-- ranking can be read off the outer answer (the same WHERE, nested keys, COUNT/SUM the outer also
-- computes) is one release: the expected SQL is then that release's, the outer query without its join.

# title: count of the rows of a released page (superset rowcount)
SELECT COUNT(*) AS rowcount FROM (SELECT state AS state, AVG(employees) AS "AVG(employees)" FROM establishments GROUP BY state ORDER BY "AVG(employees)" DESC LIMIT 10) AS rowcount_qry;
SELECT "state" AS "state", SUM("employees") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" GROUP BY "state";

# title: count over an aggregate subquery with a limit
SELECT COUNT(*) FROM (SELECT state, AVG(employees) FROM establishments GROUP BY state LIMIT 10) AS x;
SELECT "state" AS "state", SUM("employees") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" GROUP BY "state";

# title: average of released counts
SELECT AVG(n) FROM (SELECT state, COUNT(*) n FROM establishments GROUP BY state) t;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: filter and order over a released answer
SELECT t.state, t.pay FROM (SELECT state, SUM(payann) AS pay FROM establishments WHERE employees > 10 GROUP BY state) AS t WHERE t.pay > 1000 ORDER BY t.pay DESC LIMIT 3;
SELECT "state" AS "state", SUM("payann") AS "__p0" FROM "establishments" WHERE "employees" > 10 GROUP BY "state";

# title: sum of released counts
SELECT SUM(n) FROM (SELECT state, COUNT(*) AS n FROM establishments GROUP BY state);
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: released answer without a group by
SELECT total / 1000 AS thousands FROM (SELECT SUM(payann) AS total FROM establishments) s;
SELECT SUM("payann") AS "__p0" FROM "establishments";

# title: count of released distinct values
SELECT COUNT(*) FROM (SELECT DISTINCT naics2 FROM establishments) v;
SELECT "naics2" AS "naics2" FROM "establishments" GROUP BY "naics2";

# title: count of released distinct states
SELECT COUNT(*) FROM (SELECT DISTINCT state FROM establishments);
SELECT "state" AS "state" FROM "establishments" GROUP BY "state";

# title: cte of an aggregate joined to itself
WITH a AS (SELECT state, COUNT(*) AS n FROM establishments GROUP BY state) SELECT a.state, a.n, b.n AS m FROM a JOIN a AS b ON a.state = b.state ORDER BY a.n DESC LIMIT 3;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: cte of an aggregate used in a scalar subquery
WITH a AS (SELECT naics2, SUM(payann) AS pay FROM establishments GROUP BY naics2) SELECT naics2, pay / (SELECT SUM(pay) FROM a) AS share FROM a ORDER BY share DESC;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: filtering subquery around an aggregate subquery
SELECT COUNT(*) FROM (SELECT * FROM (SELECT county, COUNT(*) AS n FROM establishments GROUP BY county) AS c WHERE n > 10) AS big;
SELECT "county" AS "county", COUNT(*) AS "__p0", COUNT(*) AS "__n" FROM "establishments" GROUP BY "county";

# title: series limit join (superset time series)
SELECT naics2, DATE_TRUNC('year', opened) AS t, COUNT(*) FROM establishments JOIN (SELECT naics2 AS naics2__, COUNT(*) AS mme_inner__ FROM establishments GROUP BY naics2 ORDER BY mme_inner__ DESC LIMIT 5) AS series_limit ON establishments.naics2 = series_limit.naics2__ GROUP BY naics2, t;
SELECT "naics2" AS "naics2", TRY(DATE_TRUNC('YEAR', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k1", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "naics2", TRY(DATE_TRUNC('YEAR', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END));

# title: series limit join as superset 6 writes it
SELECT state AS state, SUM(payann) AS "SUM(payann)" FROM establishments JOIN (SELECT state AS state__, SUM(payann) AS mme_inner__ FROM establishments GROUP BY state ORDER BY SUM(payann) DESC LIMIT 10) AS series_limit ON state = state__ GROUP BY state ORDER BY "SUM(payann)" DESC LIMIT 10000;
SELECT "state" AS "state", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "state";

# title: series limit join on two keys
SELECT state, naics2, COUNT(*) AS n FROM establishments JOIN (SELECT state AS state__, naics2 AS naics2__, COUNT(*) AS mme_inner__ FROM establishments GROUP BY state, naics2 ORDER BY mme_inner__ DESC LIMIT 5) AS series_limit ON state = state__ AND naics2 = naics2__ GROUP BY state, naics2;
SELECT "state" AS "state", "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state", "naics2";

# title: series limit read from one release (superset month grain, same where)
SELECT DATE_TRUNC('MONTH', opened) AS opened, naics2 AS naics2, COUNT(*) AS "COUNT(*)" FROM main.establishments JOIN (SELECT naics2 AS naics2__, COUNT(*) AS mme_inner__ FROM main.establishments WHERE opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD') AND opened < TO_DATE('2016-01-01', 'YYYY-MM-DD') GROUP BY naics2 ORDER BY COUNT(*) DESC LIMIT 5) AS series_limit ON naics2 = naics2__ WHERE opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD') AND opened < TO_DATE('2016-01-01', 'YYYY-MM-DD') GROUP BY DATE_TRUNC('MONTH', opened), naics2 ORDER BY "COUNT(*)" DESC LIMIT 10000;
SELECT TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" WHERE TRY("opened" >= CAST(STRPTIME('2015-01-01', '%Y-%m-%d') AS DATE)) AND TRY("opened" < CAST(STRPTIME('2016-01-01', '%Y-%m-%d') AS DATE)) GROUP BY TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)), "naics2";

# title: series limit read from one release, ranked ascending by a sum
SELECT naics2, state, SUM(payann) AS pay FROM establishments JOIN (SELECT state AS s__, SUM(payann) AS m FROM establishments GROUP BY state ORDER BY 2 ASC LIMIT 4) AS sl ON state = s__ GROUP BY naics2, state;
SELECT "naics2" AS "naics2", "state" AS "state", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "naics2", "state";

# title: series limit whose ranking is an average is two releases
SELECT naics2, state, AVG(employees) AS a FROM establishments JOIN (SELECT naics2 AS k__, AVG(employees) AS m FROM establishments GROUP BY naics2 ORDER BY m DESC LIMIT 3) AS sl ON naics2 = k__ GROUP BY naics2, state;
SELECT "naics2" AS "naics2", SUM("employees") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" GROUP BY "naics2";

# title: series limit with another where is two releases
SELECT naics2, state, COUNT(*) AS n FROM establishments JOIN (SELECT naics2 AS k__, COUNT(*) AS m FROM establishments WHERE state = 'CA' GROUP BY naics2 ORDER BY m DESC LIMIT 3) AS sl ON naics2 = k__ GROUP BY naics2, state;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" WHERE "state" = 'CA' GROUP BY "naics2";

# title: series limit over a virtual dataset (superset sql lab)
SELECT DATE_TRUNC('MONTH', opened) AS opened, naics2 AS naics2, COUNT(*) AS "COUNT(*)" FROM (SELECT naics2, state, opened, employees FROM establishments WHERE employees > 0) AS virtual_table JOIN (SELECT naics2 AS naics2__, COUNT(*) AS mme_inner__ FROM (SELECT naics2, state, opened, employees FROM establishments WHERE employees > 0) AS virtual_table WHERE opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD') AND opened < TO_DATE('2016-01-01', 'YYYY-MM-DD') GROUP BY naics2 ORDER BY COUNT(*) DESC LIMIT 5) AS series_limit ON naics2 = naics2__ WHERE opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD') AND opened < TO_DATE('2016-01-01', 'YYYY-MM-DD') GROUP BY DATE_TRUNC('MONTH', opened), naics2 ORDER BY "COUNT(*)" DESC LIMIT 10000;
SELECT TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" WHERE "employees" > 0 AND TRY("opened" >= CAST(STRPTIME('2015-01-01', '%Y-%m-%d') AS DATE) AND "opened" < CAST(STRPTIME('2016-01-01', '%Y-%m-%d') AS DATE)) GROUP BY TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)), "naics2";

# title: series limit over a virtual dataset with a having is two releases
SELECT naics2 AS naics2, SUM(employees) AS e FROM (SELECT * FROM establishments WHERE employees > 0) AS virtual_table JOIN (SELECT naics2 AS naics2__, SUM(employees) AS m FROM (SELECT * FROM establishments WHERE employees > 0) AS virtual_table GROUP BY naics2 HAVING SUM(employees) > 10 ORDER BY m DESC LIMIT 5) AS series_limit ON naics2 = naics2__ GROUP BY naics2;
SELECT "naics2" AS "naics2", SUM("employees") AS "__p0" FROM "establishments" WHERE "employees" > 0 GROUP BY "naics2";

# title: series limit with group others (superset 6)
SELECT DATE_TRUNC('MONTH', opened) AS opened, CASE WHEN (NOT series_limit.naics2__ IS NULL) THEN naics2 ELSE 'Others' END AS naics2, COUNT(*) AS "COUNT(*)" FROM main.establishments LEFT OUTER JOIN (SELECT naics2 AS naics2__, COUNT(*) AS mme_inner__ FROM main.establishments WHERE opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD') AND opened < TO_DATE('2016-01-01', 'YYYY-MM-DD') GROUP BY naics2 ORDER BY COUNT(*) DESC LIMIT 5) AS series_limit ON naics2 = naics2__ WHERE opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD') AND opened < TO_DATE('2016-01-01', 'YYYY-MM-DD') GROUP BY DATE_TRUNC('MONTH', opened), CASE WHEN (NOT series_limit.naics2__ IS NULL) THEN naics2 ELSE 'Others' END;
SELECT TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" WHERE TRY("opened" >= CAST(STRPTIME('2015-01-01', '%Y-%m-%d') AS DATE)) AND TRY("opened" < CAST(STRPTIME('2016-01-01', '%Y-%m-%d') AS DATE)) GROUP BY TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)), "naics2";

# title: group others of a sum by state, ranked by the same sum
SELECT CASE WHEN s.k__ IS NOT NULL THEN state ELSE 'Others' END AS state, SUM(payann) AS pay FROM establishments LEFT JOIN (SELECT state AS k__, SUM(payann) AS m FROM establishments GROUP BY state ORDER BY m DESC LIMIT 3) AS s ON state = k__ GROUP BY CASE WHEN s.k__ IS NOT NULL THEN state ELSE 'Others' END ORDER BY pay DESC;
SELECT "state" AS "state", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "state";

# title: group others ranked by another metric is two releases
SELECT CASE WHEN s.k__ IS NOT NULL THEN naics2 ELSE 'Others' END AS naics2, COUNT(*) AS n FROM establishments LEFT JOIN (SELECT naics2 AS k__, SUM(payann) AS m FROM establishments GROUP BY naics2 ORDER BY m DESC LIMIT 3) AS s ON naics2 = k__ GROUP BY CASE WHEN s.k__ IS NOT NULL THEN naics2 ELSE 'Others' END;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: parameters in the subquery and the outer query
# params: ["54", 40]
SELECT COUNT(*) AS big FROM (SELECT state, COUNT(*) AS n FROM establishments WHERE naics2 = ? GROUP BY state) AS t WHERE n > ?;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" WHERE "naics2" = '54' GROUP BY "state";

# title: parameters in a series limit read from one release
# params: [5, 5]
SELECT naics2, state, COUNT(*) AS c FROM establishments JOIN (SELECT naics2 AS k__, COUNT(*) AS m FROM establishments WHERE employees > ? GROUP BY naics2 ORDER BY COUNT(*) DESC LIMIT 3) AS s ON naics2 = k__ WHERE employees > ? GROUP BY naics2, state;
SELECT "naics2" AS "naics2", "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" WHERE "employees" > 5 GROUP BY "naics2", "state";

# title: group others over a virtual dataset (superset sql lab)
SELECT DATE_TRUNC('MONTH', opened) AS opened, CASE WHEN (NOT series_limit.naics2__ IS NULL) THEN naics2 ELSE 'Others' END AS naics2, COUNT(*) AS "COUNT(*)" FROM (SELECT naics2, state, opened, employees FROM establishments WHERE employees > 0) AS virtual_table LEFT OUTER JOIN (SELECT naics2 AS naics2__, COUNT(*) AS mme_inner__ FROM (SELECT naics2, state, opened, employees FROM establishments WHERE employees > 0) AS virtual_table WHERE opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD') AND opened < TO_DATE('2016-01-01', 'YYYY-MM-DD') GROUP BY naics2 ORDER BY COUNT(*) DESC LIMIT 5) AS series_limit ON naics2 = naics2__ WHERE opened >= TO_DATE('2015-01-01', 'YYYY-MM-DD') AND opened < TO_DATE('2016-01-01', 'YYYY-MM-DD') GROUP BY DATE_TRUNC('MONTH', opened), CASE WHEN (NOT series_limit.naics2__ IS NULL) THEN naics2 ELSE 'Others' END;
SELECT TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" WHERE "employees" > 0 AND TRY("opened" >= CAST(STRPTIME('2015-01-01', '%Y-%m-%d') AS DATE) AND "opened" < CAST(STRPTIME('2016-01-01', '%Y-%m-%d') AS DATE)) GROUP BY TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)), "naics2";
