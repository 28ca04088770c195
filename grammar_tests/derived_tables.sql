# title: subquery that selects every column
# execute: true
SELECT COUNT(*) FROM (SELECT * FROM establishments);
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: filtering subquery with an alias
# execute: true
SELECT COUNT(*) FROM (SELECT id FROM establishments WHERE state = 'CA') AS t;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "state" = 'CA';

# title: renaming subquery
# execute: true
SELECT st, SUM(pay) FROM (SELECT state AS st, payann AS pay FROM establishments) t GROUP BY st;
SELECT "state" AS "state", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "state";

# title: subquery filters and the outer query filters too
# execute: true
SELECT COUNT(*) FROM (SELECT * FROM establishments WHERE state = 'CA' OR state = 'NY') WHERE employees > 5 OR payann > 1;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE ("state" = 'CA' OR "state" = 'NY') AND ("employees" > 5 OR "payann" > 1);

# title: columns qualified by the subquery alias
# execute: true
SELECT x.st, COUNT(*) FROM (SELECT e.state AS st FROM establishments e WHERE e.employees > 10) x GROUP BY x.st;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" WHERE "employees" > 10 GROUP BY "state";

# title: cte that filters
# execute: true
WITH ca AS (SELECT * FROM establishments WHERE state = 'CA') SELECT naics2, SUM(payann) FROM ca GROUP BY naics2;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0" FROM "establishments" WHERE "state" = 'CA' GROUP BY "naics2";

# title: cte that renames and filters, qualified by its name
# execute: true
WITH t AS (SELECT payann AS pay, naics2 AS sector FROM establishments WHERE employees >= 10) SELECT t.sector, AVG(t.pay) FROM t GROUP BY t.sector;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" WHERE "employees" >= 10 GROUP BY "naics2";

# title: two chained ctes
# execute: true
WITH a AS (SELECT * FROM establishments WHERE state = 'TX'), b AS (SELECT payqtr1 AS q, naics2 FROM a WHERE employees > 1) SELECT naics2, SUM(q) FROM b GROUP BY naics2;
SELECT "naics2" AS "naics2", SUM("payqtr1") AS "__p0" FROM "establishments" WHERE "state" = 'TX' AND "employees" > 1 GROUP BY "naics2";

# title: nested subqueries
# execute: true
SELECT COUNT(*) FROM (SELECT * FROM (SELECT * FROM establishments WHERE state = 'CA') WHERE employees > 1);
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "state" = 'CA' AND "employees" > 1;

# title: cte named like a declared table shadows it
# execute: true
WITH establishments AS (SELECT * FROM devices WHERE latency_ms > 50) SELECT COUNT(*) FROM establishments;
SELECT COUNT(*) AS "__p0" FROM "devices" WHERE "latency_ms" > 50;

# title: renamed private key goes through partition selection
# execute: true
WITH c AS (SELECT county AS cty, payann FROM establishments WHERE naics2 = '72') SELECT cty, SUM(payann) FROM c GROUP BY cty;
SELECT "county" AS "county", SUM("payann") AS "__p0", COUNT(*) AS "__n" FROM "establishments" WHERE "naics2" = '72' GROUP BY "county";

# title: count distinct of a renamed privacy unit
# execute: true
SELECT COUNT(DISTINCT uid) FROM (SELECT id AS uid FROM establishments);
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: order by an output named like a renamed column
# execute: true
SELECT naics2, SUM(pay) AS pay FROM (SELECT naics2, payann AS pay FROM establishments) GROUP BY naics2 ORDER BY pay DESC LIMIT 5;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: having and group by ordinal over a cte
# execute: true
WITH d AS (SELECT device_model AS model, latency_ms FROM devices) SELECT model, AVG(latency_ms) AS lat FROM d GROUP BY 1 HAVING COUNT(*) > 50;
SELECT "device_model" AS "device_model", SUM(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT)) AS "__p0", COUNT(*) AS "__p1", COUNT(*) AS "__n"
FROM "devices"
GROUP BY "device_model";
