-- A public keyset narrowed by the query's own WHERE on that key (dpsql/sql/narrow.py): the exact SQL
-- is the query's, the released groups only the keyset values the WHERE admits (tests/test_narrow_keys.py).

# title: Superset time range over a date key, by month
# execute: true
SELECT DATE_TRUNC('month', opened) AS m, COUNT(*) FROM establishments WHERE opened >= '2015-01-01' AND opened < '2016-01-01' GROUP BY DATE_TRUNC('month', opened);
SELECT TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END)) AS "__k0", COUNT(*) AS "__p0"
FROM "establishments"
WHERE TRY("opened" >= '2015-01-01') AND TRY("opened" < '2016-01-01')
GROUP BY TRY(DATE_TRUNC('MONTH', CASE WHEN "opened" BETWEEN CAST('1990-01-01' AS DATE) AND CAST('2024-12-31' AS DATE) THEN "opened" END));

# title: a keyset narrowed by IN
# execute: true
SELECT state, SUM(employees) FROM establishments WHERE state IN ('CA', 'NY', 'TX') GROUP BY state;
SELECT "state" AS "state", SUM("employees") AS "__p0"
FROM "establishments"
WHERE "state" IN ('CA', 'NY', 'TX')
GROUP BY "state";

# title: two keys each narrowed by its own conjunct, a measure's conjunct narrows nothing
# execute: true
SELECT state, naics2, COUNT(*) FROM establishments WHERE state = 'WA' AND naics2 BETWEEN '44' AND '45' AND employees > 10 GROUP BY state, naics2;
SELECT "state" AS "state", "naics2" AS "naics2", COUNT(*) AS "__p0"
FROM "establishments"
WHERE "state" = 'WA' AND "naics2" BETWEEN '44' AND '45' AND "employees" > 10
GROUP BY "state", "naics2";

# title: a joined public column narrowed by its own conjunct
# execute: true
SELECT s.region, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code WHERE s.region <> 'West' GROUP BY s.region;
SELECT "__j1_region" AS "__j1_region", COUNT(*) AS "__p0"
FROM "establishments"
INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code"
WHERE "__j1_region" <> 'West'
GROUP BY "__j1_region";

# title: an OR of a key and a measure narrows nothing
# execute: true
SELECT naics2, COUNT(*) FROM establishments WHERE naics2 = '11' OR employees > 500 GROUP BY naics2;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0"
FROM "establishments"
WHERE ("naics2" = '11' OR "employees" > 500)
GROUP BY "naics2";
