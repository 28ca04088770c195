# title: count by a private key
# execute: true
SELECT county, COUNT(*) FROM establishments GROUP BY county;
SELECT "county" AS "county", COUNT(*) AS "__p0", COUNT(*) AS "__n" FROM "establishments" GROUP BY "county";

# title: sum by the other private key
# execute: true
SELECT naics, SUM(payann) FROM establishments GROUP BY naics;
SELECT "naics" AS "naics", SUM("payann") AS "__p0", COUNT(*) AS "__n" FROM "establishments" GROUP BY "naics";

# title: avg by a private key
# execute: true
SELECT county, AVG(employees) FROM establishments GROUP BY county;
SELECT "county" AS "county", SUM("employees") AS "__p0", COUNT(*) AS "__p1", COUNT(*) AS "__n" FROM "establishments" GROUP BY "county";

# title: two private keys
# execute: true
SELECT county, naics, COUNT(*) FROM establishments GROUP BY county, naics;
SELECT "county" AS "county", "naics" AS "naics", COUNT(*) AS "__p0", COUNT(*) AS "__n" FROM "establishments" GROUP BY "county", "naics";

# title: private key with a where filter
# execute: true
SELECT county, COUNT(*) FROM establishments WHERE state = 'CA' GROUP BY county;
SELECT "county" AS "county", COUNT(*) AS "__p0", COUNT(*) AS "__n" FROM "establishments" WHERE "state" = 'CA' GROUP BY "county";

# title: private key and public key
# execute: true
SELECT naics2, county, SUM(payqtr1) FROM establishments GROUP BY naics2, county;
SELECT "naics2" AS "naics2", "county" AS "county", SUM("payqtr1") AS "__p0", COUNT(*) AS "__n" FROM "establishments" GROUP BY "naics2", "county";

# title: private key by ordinal
# execute: true
SELECT naics, COUNT(*) FROM establishments GROUP BY 1;
SELECT "naics" AS "naics", COUNT(*) AS "__p0", COUNT(*) AS "__n" FROM "establishments" GROUP BY "naics";

# title: private key with having and limit
# execute: true
SELECT county, COUNT(*) AS n FROM establishments GROUP BY county HAVING n > 100 ORDER BY n DESC LIMIT 10;
SELECT "county" AS "county", COUNT(*) AS "__p0", COUNT(*) AS "__n" FROM "establishments" GROUP BY "county";

# title: private key of the devices table
# execute: true
SELECT device_model, COUNT(*) FROM devices GROUP BY device_model;
SELECT "device_model" AS "device_model", COUNT(*) AS "__p0", COUNT(*) AS "__n" FROM "devices" GROUP BY "device_model";

# title: private key of devices with an avg
# execute: true
SELECT device_model, AVG(latency_ms) FROM devices GROUP BY device_model;
SELECT "device_model" AS "device_model", SUM(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT)) AS "__p0", COUNT(*) AS "__p1", COUNT(*) AS "__n"
FROM "devices"
GROUP BY "device_model";

# title: private key with several aggregates
# execute: true
SELECT naics, COUNT(*), SUM(employees), SUM(payann) FROM establishments GROUP BY naics;
SELECT "naics" AS "naics", COUNT(*) AS "__p0", SUM("employees") AS "__p1", SUM("payann") AS "__p2", COUNT(*) AS "__n" FROM "establishments" GROUP BY "naics";
