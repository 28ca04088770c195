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

-- Expressions of keys: a public expression's keyset is its image over the keysets;
-- an expression of a private key goes through partition selection ("__n").

# title: group by an expression of a public key
# execute: true
SELECT SUBSTR(naics2, 1, 1) AS digit, COUNT(*) FROM establishments GROUP BY SUBSTR(naics2, 1, 1);
SELECT SUBSTRING("naics2", 1, 1) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY SUBSTRING("naics2", 1, 1);

# title: group by the alias of an expression
# execute: true
SELECT LOWER(state) AS st, SUM(payann) FROM establishments GROUP BY st;
SELECT LOWER("state") AS "__k0", SUM("payann") AS "__p0" FROM "establishments" GROUP BY LOWER("state");

# title: group by the ordinal of an expression
# execute: true
SELECT UPPER(naics2) || '-sector', COUNT(*) FROM establishments GROUP BY 1;
SELECT TRY(UPPER("naics2") || '-sector') AS "__k0", COUNT(*) AS "__p0"
FROM "establishments"
GROUP BY TRY(UPPER("naics2") || '-sector');

# title: group by a case over a public key
# execute: true
SELECT CASE WHEN state IN ('CA', 'OR', 'WA') THEN 'west coast' ELSE 'other' END AS coast, COUNT(*), AVG(employees) FROM establishments GROUP BY coast;
SELECT CASE WHEN "state" IN ('CA', 'OR', 'WA') THEN 'west coast' ELSE 'other' END AS "__k0", COUNT(*) AS "__p0", SUM("employees") AS "__p1" FROM "establishments" GROUP BY CASE WHEN "state" IN ('CA', 'OR', 'WA') THEN 'west coast' ELSE 'other' END;

# title: group by an expression and a key
# execute: true
SELECT LOWER(state), naics2, COUNT(*) FROM establishments GROUP BY LOWER(state), naics2;
SELECT LOWER("state") AS "__k0", "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY LOWER("state"), "naics2";

# title: group by an expression of two public keys
# execute: true
SELECT state || '/' || naics2 AS cell, COUNT(*) FROM establishments WHERE state = 'VT' GROUP BY cell;
SELECT TRY("state" || '/' || "naics2") AS "__k0", COUNT(*) AS "__p0"
FROM "establishments"
WHERE "state" = 'VT'
GROUP BY TRY("state" || '/' || "naics2");

# title: group by an expression of a private key
# execute: true
SELECT SUBSTR(naics, 1, 3) AS n3, COUNT(*) FROM establishments GROUP BY SUBSTR(naics, 1, 3);
SELECT SUBSTRING("naics", 1, 3) AS "__k0", COUNT(*) AS "__p0", COUNT(*) AS "__n" FROM "establishments" GROUP BY SUBSTRING("naics", 1, 3);

# title: group by a cast of a key
# execute: true
SELECT CAST(naics2 AS INTEGER) AS code, COUNT(*) FROM establishments GROUP BY CAST(naics2 AS INTEGER);
SELECT TRY_CAST("naics2" AS INT) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY TRY_CAST("naics2" AS INT);

# title: group by an expression used in having and order by
# execute: true
SELECT SUBSTR(naics2, 1, 1) AS d, COUNT(*) AS n FROM establishments GROUP BY SUBSTR(naics2, 1, 1) HAVING COUNT(*) > 10 ORDER BY SUBSTR(naics2, 1, 1) DESC;
SELECT SUBSTRING("naics2", 1, 1) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY SUBSTRING("naics2", 1, 1);

# title: group by an expression selected inside another
# execute: true
SELECT SUBSTR(naics2, 1, 1) || 'x' AS d, COUNT(*) FROM establishments GROUP BY SUBSTR(naics2, 1, 1);
SELECT SUBSTRING("naics2", 1, 1) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY SUBSTRING("naics2", 1, 1);

# title: group by a key and select an expression of it
# execute: true
SELECT LOWER(state) AS st, COUNT(*) FROM establishments GROUP BY state;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: group by the same expression twice
# execute: true
SELECT LOWER(state), COUNT(*) FROM establishments GROUP BY LOWER(state), 1;
SELECT LOWER("state") AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY LOWER("state");

# title: group by arithmetic on a key runs inside try
# execute: true
SELECT CAST(naics2 AS INTEGER) / 10 AS d, COUNT(*) FROM establishments GROUP BY d;
SELECT TRY(TRY_CAST("naics2" AS INT) / 10) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY TRY(TRY_CAST("naics2" AS INT) / 10);

# title: group by a case whose condition could fail runs inside try
# execute: true
SELECT CASE WHEN CAST(naics2 AS INTEGER) > 50 THEN 1 ELSE 0 END AS hi, COUNT(*) FROM establishments GROUP BY hi;
SELECT TRY(CASE WHEN TRY_CAST("naics2" AS INT) > 50 THEN 1 ELSE 0 END) AS "__k0", COUNT(*) AS "__p0" FROM "establishments" GROUP BY TRY(CASE WHEN TRY_CAST("naics2" AS INT) > 50 THEN 1 ELSE 0 END);

# title: group by a substring whose bounds duckdb rejects per row runs inside try
# execute: true
SELECT SUBSTR(state, 9223372036854775807, 1) AS k, COUNT(*) FROM establishments GROUP BY k;
SELECT TRY(SUBSTRING("state", 9223372036854775807, 1)) AS "__k0", COUNT(*) AS "__p0"
FROM "establishments"
GROUP BY TRY(SUBSTRING("state", 9223372036854775807, 1));
