# title: a key grouped but no aggregate
# execute: true
SELECT state FROM establishments GROUP BY state;
SELECT "state" AS "state" FROM "establishments" GROUP BY "state";

# title: public keys without an aggregate, ordered and limited
# execute: true
SELECT naics2, state FROM establishments WHERE employees > 10 GROUP BY naics2, state ORDER BY state DESC LIMIT 5;
SELECT "naics2" AS "naics2", "state" AS "state" FROM "establishments" WHERE "employees" > 10 GROUP BY "naics2", "state";

# title: select distinct over a public key
# execute: true
SELECT DISTINCT state FROM establishments;
SELECT "state" AS "state" FROM "establishments" GROUP BY "state";

# title: select distinct over an expression of a public key, aliased
# execute: true
SELECT DISTINCT SUBSTR(naics2, 1, 1) AS sector FROM establishments ORDER BY sector;
SELECT SUBSTRING("naics2", 1, 1) AS "__k0" FROM "establishments" GROUP BY SUBSTRING("naics2", 1, 1);

# title: select distinct over a private key (partition selection)
# execute: true
SELECT DISTINCT county FROM establishments WHERE state = 'CA';
SELECT "county" AS "county", COUNT(*) AS "__n" FROM "establishments" WHERE "state" = 'CA' GROUP BY "county";

# title: a private key grouped but no aggregate
# execute: true
SELECT device_model FROM devices GROUP BY device_model;
SELECT "device_model" AS "device_model", COUNT(*) AS "__n" FROM "devices" GROUP BY "device_model";

# title: public and private keys without an aggregate
# execute: true
SELECT state, naics FROM establishments WHERE naics2 = '55' GROUP BY state, naics;
SELECT "state" AS "state", "naics" AS "naics", COUNT(*) AS "__n" FROM "establishments" WHERE "naics2" = '55' GROUP BY "state", "naics";

# title: a joined public column without an aggregate
# execute: true
SELECT s.region FROM establishments e JOIN states s ON e.state = s.code GROUP BY s.region;
SELECT "__j1_region" AS "__j1_region" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "__j1_region";

# title: keys and having but no aggregate in the select list
# execute: true
SELECT state FROM establishments GROUP BY state HAVING SUM(payann) > 0;
SELECT "state" AS "state", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "state";
