# title: equality on a text column
# execute: true
SELECT COUNT(*) FROM establishments WHERE state = 'TX';
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "state" = 'TX';

# title: inequality
# execute: true
SELECT COUNT(*) FROM establishments WHERE state <> 'TX';
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "state" <> 'TX';

# title: not equal written with bang
# execute: true
SELECT COUNT(*) FROM establishments WHERE naics2 != '72';
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "naics2" <> '72';

# title: numeric comparisons
# execute: true
SELECT SUM(payann) FROM establishments WHERE employees >= 10 AND employees < 100;
SELECT SUM("payann") AS "__p0" FROM "establishments" WHERE "employees" >= 10 AND "employees" < 100;

# title: and of three conditions
# execute: true
SELECT COUNT(*) FROM establishments WHERE state = 'CA' AND naics2 = '72' AND employees > 5;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "state" = 'CA' AND "naics2" = '72' AND "employees" > 5;

# title: or of two conditions
# execute: true
SELECT COUNT(*) FROM establishments WHERE state = 'CA' OR state = 'NY';
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE ("state" = 'CA' OR "state" = 'NY');

# title: and with a parenthesised or
# execute: true
SELECT COUNT(*) FROM establishments WHERE employees > 5 AND (state = 'CA' OR naics2 = '72');
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "employees" > 5 AND ("state" = 'CA' OR "naics2" = '72');

# title: not of a comparison
# execute: true
SELECT COUNT(*) FROM establishments WHERE NOT state = 'CA';
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE NOT "state" = 'CA';

# title: not of a parenthesised or
# execute: true
SELECT COUNT(*) FROM establishments WHERE NOT (state = 'CA' OR state = 'TX');
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE NOT ("state" = 'CA' OR "state" = 'TX');

# title: in a list of strings
# execute: true
SELECT SUM(payqtr1) FROM establishments WHERE state IN ('CA', 'NY', 'TX');
SELECT SUM("payqtr1") AS "__p0" FROM "establishments" WHERE "state" IN ('CA', 'NY', 'TX');

# title: not in a list
# execute: true
SELECT COUNT(*) FROM establishments WHERE naics2 NOT IN ('11', '21', '22');
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE NOT "naics2" IN ('11', '21', '22');

# title: in a list of numbers
# execute: true
SELECT COUNT(*) FROM establishments WHERE employees IN (1, 2, 3);
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "employees" IN (1, 2, 3);

# title: between two numbers
# execute: true
SELECT AVG(payann) FROM establishments WHERE employees BETWEEN 10 AND 20;
SELECT SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" WHERE "employees" BETWEEN 10 AND 20;

# title: not between
# execute: true
SELECT COUNT(*) FROM establishments WHERE payann NOT BETWEEN 100 AND 1000;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE NOT "payann" BETWEEN 100 AND 1000;

# title: between two strings
# execute: true
SELECT COUNT(*) FROM establishments WHERE naics2 BETWEEN '31' AND '33';
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "naics2" BETWEEN '31' AND '33';

# title: like a prefix
# execute: true
SELECT COUNT(*) FROM establishments WHERE naics LIKE '72%';
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "naics" LIKE '72%';

# title: not like
# execute: true
SELECT COUNT(*) FROM establishments WHERE county NOT LIKE '06%';
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "county" NOT LIKE '06%';

# title: ilike ignores case
# execute: true
SELECT COUNT(*) FROM establishments WHERE state ILIKE 'c_';
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "state" ILIKE 'c_';

# title: is null
# execute: true
SELECT COUNT(*) FROM establishments WHERE naics IS NULL;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "naics" IS NULL;

# title: is not null
# execute: true
SELECT COUNT(*) FROM establishments WHERE county IS NOT NULL;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE NOT "county" IS NULL;

# title: case in where
# execute: true
SELECT COUNT(*) FROM establishments WHERE CASE WHEN state = 'CA' THEN employees > 10 ELSE employees > 50 END;
SELECT COUNT(*) AS "__p0"
FROM "establishments"
WHERE CASE WHEN "state" = 'CA' THEN "employees" > 10 ELSE "employees" > 50 END;

# title: simple case in where
# execute: true
SELECT COUNT(*) FROM establishments WHERE CASE state WHEN 'CA' THEN 1 WHEN 'NY' THEN 2 ELSE 0 END > 0;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE CASE "state" WHEN 'CA' THEN 1 WHEN 'NY' THEN 2 ELSE 0 END > 0;

# title: division over columns runs bare (DOUBLE: x/0 is inf)
# execute: true
SELECT COUNT(*) FROM establishments WHERE payann / employees > 40;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "payann" / "employees" > 40;

# title: arithmetic in one conjunct only
# execute: true
SELECT SUM(payann) FROM establishments WHERE state = 'CA' AND payqtr1 * 4 > payann;
SELECT SUM("payann") AS "__p0" FROM "establishments" WHERE "state" = 'CA' AND TRY("payqtr1" * 4 > "payann");

# title: cast in where becomes try_cast
# execute: true
SELECT COUNT(*) FROM establishments WHERE CAST(naics2 AS INTEGER) BETWEEN 40 AND 50;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE TRY(TRY_CAST("naics2" AS INT) BETWEEN 40 AND 50);

# title: double-colon cast in where
# execute: true
SELECT COUNT(*) FROM establishments WHERE naics2::INT = 72;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE TRY(TRY_CAST("naics2" AS INT) = 72);

# title: try_cast written by the analyst stays
# execute: true
SELECT COUNT(*) FROM establishments WHERE TRY_CAST(naics2 AS INT) > 50;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE TRY(TRY_CAST("naics2" AS INT) > 50);

# title: lower and upper functions
# execute: true
SELECT COUNT(*) FROM establishments WHERE LOWER(state) = 'ca' OR UPPER(county) = '06001';
SELECT COUNT(*) AS "__p0"
FROM "establishments"
WHERE (LOWER("state") = 'ca' OR UPPER("county") = '06001');

# title: substring and length functions
# execute: true
SELECT COUNT(*) FROM establishments WHERE SUBSTR(naics, 1, 2) = '72' AND LENGTH(county) = 5;
SELECT COUNT(*) AS "__p0"
FROM "establishments"
WHERE SUBSTRING("naics", 1, 2) = '72' AND LENGTH("county") = 5;

# title: coalesce and nullif
# execute: true
SELECT COUNT(*) FROM establishments WHERE COALESCE(naics, '') <> '' AND NULLIF(state, 'XX') IS NOT NULL;
SELECT COUNT(*) AS "__p0"
FROM "establishments"
WHERE COALESCE("naics", '') <> '' AND TRY(NOT NULLIF("state", 'XX') IS NULL);

# title: abs round floor ceil
# execute: true
SELECT COUNT(*) FROM establishments WHERE ABS(payann - 500) < 100 AND ROUND(employees / 10) = 1 AND FLOOR(payqtr1 / 100) >= CEIL(1.5);
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE TRY(ABS("payann" - 500) < 100) AND ROUND("employees" / 10) = 1 AND TRY(FLOOR("payqtr1" / 100) >= CEIL(1.5));

# title: least and greatest
# execute: true
SELECT COUNT(*) FROM establishments WHERE LEAST(employees, 50) = 50 AND GREATEST(payqtr1, 0) > 0;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE LEAST("employees", 50) = 50 AND GREATEST("payqtr1", 0) > 0;

# title: string concatenation in where
# execute: true
SELECT COUNT(*) FROM establishments WHERE state || naics2 = 'CA72';
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE TRY("state" || "naics2" = 'CA72');

# title: negative number literal
# execute: true
SELECT COUNT(*) FROM establishments WHERE payann > -1;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "payann" > -1;

# title: boolean literal true
# execute: true
SELECT COUNT(*) FROM establishments WHERE TRUE;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE TRUE;

# title: where on a measure that is also summed
# execute: true
SELECT SUM(payann) FROM establishments WHERE payann < 10000;
SELECT SUM("payann") AS "__p0" FROM "establishments" WHERE "payann" < 10000;

# title: where on the privacy unit
# execute: true
SELECT COUNT(*) FROM establishments WHERE id % 2 = 0;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "id" % 2 = 0;

# title: where on a column that is neither key nor measure
# execute: true
SELECT COUNT(*) FROM establishments WHERE firm_id > 1000;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "firm_id" > 1000;

# title: date literals compare
# execute: true
SELECT COUNT(*) FROM establishments WHERE DATE '2020-01-01' < DATE '2021-01-01';
SELECT COUNT(*) AS "__p0"
FROM "establishments"
WHERE TRY_CAST('2020-01-01' AS DATE) < TRY_CAST('2021-01-01' AS DATE);

# title: a decimal literal of scale 31 runs inside try (its cast of payann fails from 10^7)
# execute: true
SELECT COUNT(*) FROM establishments WHERE payann > 0.0000000000000000000000000000001;
SELECT COUNT(*) AS "__p0"
FROM "establishments"
WHERE TRY("payann" > 0.0000000000000000000000000000001);

# title: a decimal literal that every bigint fits beside runs bare
# execute: true
SELECT COUNT(*) FROM establishments WHERE payann > 0.5;
SELECT COUNT(*) AS "__p0"
FROM "establishments"
WHERE "payann" > 0.5;

# title: substring with bounds beyond duckdb's range runs inside try
# execute: true
SELECT COUNT(*) FROM establishments WHERE SUBSTR(state, 9223372036854775807, 1) = '';
SELECT COUNT(*) AS "__p0"
FROM "establishments"
WHERE TRY(SUBSTRING("state", 9223372036854775807, 1) = '');

# title: searched case over total conditions runs bare
# execute: true
SELECT COUNT(*) FROM establishments WHERE CASE WHEN naics2 IN ('72', '44') THEN employees > 5 ELSE FALSE END;
SELECT COUNT(*) AS "__p0"
FROM "establishments"
WHERE CASE WHEN "naics2" IN ('72', '44') THEN "employees" > 5 ELSE FALSE END;

# title: = ANY of an array of literals is IN of its values (psycopg2 writes a list this way)
# execute: true
SELECT state, COUNT(*) FROM establishments WHERE state = ANY(ARRAY['CA', 'NY']) GROUP BY state;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" WHERE "state" IN ('CA', 'NY') GROUP BY "state";

# title: <> ALL of an array of literals is NOT IN of its values
# execute: true
SELECT COUNT(*) FROM establishments WHERE employees <> ALL(ARRAY[1, 2, 3]);
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE NOT "employees" IN (1, 2, 3);

# title: = ANY of an empty array matches no row, as in PostgreSQL
SELECT COUNT(*) FROM establishments WHERE state = ANY(ARRAY[]);
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE FALSE;

# title: CONCAT in WHERE runs inside TRY (a result may pass DuckDB's string limit, as with ||)
# execute: true
SELECT state, COUNT(*) FROM establishments WHERE CONCAT(naics2, 'x') = '52x' GROUP BY state;
SELECT "state" AS "state", COUNT(*) AS "__p0"
FROM "establishments"
WHERE TRY(CONCAT("naics2", 'x') = '52x')
GROUP BY "state";

# title: a bare integer column as a condition (SmartNoise's WHERE married), its cast to BOOLEAN total
# execute: true
SELECT COUNT(*) FROM establishments WHERE employees AND state = 'CA';
SELECT COUNT(*) AS "__p0"
FROM "establishments"
WHERE TRY("employees") AND "state" = 'CA';

# title: SIGN of a measure in WHERE
# execute: true
SELECT COUNT(*) FROM establishments WHERE SIGN(employees - 10) = 1;
SELECT COUNT(*) AS "__p0"
FROM "establishments"
WHERE TRY(SIGN("employees" - 10) = 1);

# title: SQUARE as POWER of two in WHERE (T-SQL's spelling)
# execute: true
SELECT COUNT(*) FROM establishments WHERE SQUARE(employees) > 100;
SELECT COUNT(*) AS "__p0"
FROM "establishments"
WHERE TRY(POWER("employees", 2) > 100);
