# title: upper-case keywords and identifiers
# execute: true
SELECT STATE, COUNT(*) FROM ESTABLISHMENTS GROUP BY STATE;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: lower-case keywords
# execute: true
select state, count(*) from establishments group by state;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: mixed-case keywords and identifiers
# execute: true
SeLeCt NaIcS2, SuM(PayAnn) FrOm EstablishMents GrOuP bY NaIcS2;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: double-quoted column names
# execute: true
SELECT "state", SUM("payann") FROM establishments GROUP BY "state";
SELECT "state" AS "state", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "state";

# title: double-quoted table name
# execute: true
SELECT COUNT(*) FROM "establishments";
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: quoted identifiers in another letter case
# execute: true
SELECT "STATE", COUNT(*) FROM "Establishments" GROUP BY "State";
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: columns qualified by the table name
# execute: true
SELECT establishments.state, SUM(establishments.payann) FROM establishments GROUP BY establishments.state;
SELECT "state" AS "state", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "state";

# title: columns qualified by a table alias
# execute: true
SELECT e.state, AVG(e.employees) FROM establishments e GROUP BY e.state;
SELECT "state" AS "state", SUM("employees") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" GROUP BY "state";

# title: table alias with AS
# execute: true
SELECT e.naics2, COUNT(*) FROM establishments AS e GROUP BY e.naics2;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: quoted table alias
# execute: true
SELECT "E".naics2, COUNT(*) FROM establishments AS "E" GROUP BY "E".naics2;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: table qualified by the main schema
# execute: true
SELECT COUNT(*) FROM main.establishments;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: alias qualifies columns in where
# execute: true
SELECT COUNT(*) FROM establishments e WHERE e.state = 'CA' AND e.employees > 10;
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "state" = 'CA' AND "employees" > 10;

# title: output aliases with and without AS
# execute: true
SELECT state AS st, COUNT(*) n, SUM(payann) AS "Pay Total" FROM establishments GROUP BY state;
SELECT "state" AS "state", COUNT(*) AS "__p0", SUM("payann") AS "__p1" FROM "establishments" GROUP BY "state";

# title: output alias shadows nothing and orders the result
# execute: true
SELECT naics2 AS sector, COUNT(*) AS n FROM establishments GROUP BY sector ORDER BY n DESC;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "naics2";

# title: a line comment after the query
# execute: true
SELECT COUNT(*) FROM establishments -- all of them;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: a block comment inside the query
# execute: true
SELECT /* the count */ COUNT(*) FROM establishments /* every row */ WHERE state = 'NY';
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "state" = 'NY';

# title: a query over several lines
# execute: true
SELECT
  state,
  SUM(payann) AS pay
FROM
  establishments
GROUP BY
  state;
SELECT "state" AS "state", SUM("payann") AS "__p0" FROM "establishments" GROUP BY "state";

# title: tabs and extra spaces
# execute: true
SELECT	state ,  COUNT( * )	FROM   establishments	GROUP  BY state;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: from-first syntax of duckdb
# execute: true
FROM establishments SELECT COUNT(*);
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: a string literal with an escaped quote
# execute: true
SELECT COUNT(*) FROM establishments WHERE county <> 'O''Brien';
SELECT COUNT(*) AS "__p0" FROM "establishments" WHERE "county" <> 'O''Brien';
