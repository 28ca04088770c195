# title: count distinct of a key
# execute: true
SELECT COUNT(DISTINCT state) FROM establishments;
SELECT COUNT(DISTINCT "state") AS "__p0" FROM "establishments";

# title: count distinct of a private key per public key
# execute: true
SELECT state, COUNT(DISTINCT county) FROM establishments GROUP BY state;
SELECT "state" AS "state", COUNT(DISTINCT "county") AS "__p0" FROM "establishments" GROUP BY "state";

# title: count distinct beside count star and a sum
# execute: true
SELECT naics2, COUNT(*), COUNT(DISTINCT state), SUM(payann) FROM establishments GROUP BY naics2;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0", COUNT(DISTINCT "state") AS "__p1", SUM("payann") AS "__p2" FROM "establishments" GROUP BY "naics2";

# title: count distinct of a column that is neither key nor measure
# execute: true
SELECT state, COUNT(DISTINCT firm_id) FROM establishments GROUP BY state;
SELECT "state" AS "state", COUNT(DISTINCT "firm_id") AS "__p0" FROM "establishments" GROUP BY "state";

# title: count distinct of a public column
# execute: true
SELECT COUNT(DISTINCT s.code) FROM establishments e JOIN states s ON e.state = s.code;
SELECT COUNT(DISTINCT "__j1_code") AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code" FROM "states") AS "__j1" ON "state" = "__j1_code";

# title: count distinct in having and order by
# execute: true
SELECT naics2, COUNT(DISTINCT state) AS n FROM establishments GROUP BY naics2 HAVING COUNT(DISTINCT state) > 40 ORDER BY n DESC;
SELECT "naics2" AS "naics2", COUNT(DISTINCT "state") AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: count distinct of a measure beside its sum (the reference counts record values, not splits)
# execute: true
SELECT state, COUNT(DISTINCT payann), SUM(payann) FROM establishments GROUP BY state;
SELECT "state" AS "state", COUNT(DISTINCT "payann") AS "__p0", SUM("payann") AS "__p1" FROM "establishments" GROUP BY "state";

# title: count of a measure beside its sum, ungrouped (payann is NOT NULL: COUNT(payann) is COUNT(*))
# execute: true
SELECT COUNT(payann), COUNT(DISTINCT payann), SUM(payann) FROM establishments;
SELECT COUNT(*) AS "__p0", COUNT(DISTINCT "payann") AS "__p1", SUM("payann") AS "__p2" FROM "establishments";
