# title: group by one public key by name
# execute: true
SELECT naics2, COUNT(*) FROM establishments GROUP BY naics2;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: group by two public keys by name
# execute: true
SELECT state, naics2, SUM(employees) FROM establishments GROUP BY state, naics2;
SELECT "state" AS "state", "naics2" AS "naics2", SUM("employees") AS "__p0" FROM "establishments" GROUP BY "state", "naics2";

# title: group by an output alias
# execute: true
SELECT state AS st, COUNT(*) FROM establishments GROUP BY st;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: group by ordinal
# execute: true
SELECT naics2, SUM(payann) FROM establishments GROUP BY 1;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: group by ordinal pointing at an aliased key
# execute: true
SELECT COUNT(*) AS n, state AS st FROM establishments GROUP BY 2;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: group by name, alias and ordinal mixed
# execute: true
SELECT state AS st, naics2, COUNT(*) FROM establishments GROUP BY st, 2;
SELECT "state" AS "state", "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state", "naics2";

# title: group by a key not in the select list
# execute: true
SELECT COUNT(*) FROM establishments GROUP BY state;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: keys in another order than the select list
# execute: true
SELECT naics2, state, COUNT(*) FROM establishments GROUP BY state, naics2;
SELECT "state" AS "state", "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state", "naics2";

# title: the same key twice counts once
# execute: true
SELECT state, COUNT(*) FROM establishments GROUP BY state, state;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: group by a qualified key
# execute: true
SELECT e.state, COUNT(*) FROM establishments e GROUP BY e.state;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: group by with a where filter
# execute: true
SELECT naics2, AVG(payann) FROM establishments WHERE state = 'CA' GROUP BY naics2;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" WHERE "state" = 'CA' GROUP BY "naics2";

# title: group by a key in another letter case
# execute: true
SELECT State, COUNT(*) FROM establishments GROUP BY STATE;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: key expression over a grouped key in the select list
# execute: true
SELECT LOWER(state) AS st, COUNT(*) FROM establishments GROUP BY state;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: key used in a case over the output
# execute: true
SELECT CASE WHEN naics2 = '72' THEN 'food' ELSE 'other' END AS kind, naics2, COUNT(*) FROM establishments GROUP BY naics2;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "naics2";
