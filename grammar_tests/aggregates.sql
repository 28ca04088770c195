# title: count star
# execute: true
SELECT COUNT(*) FROM establishments;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: count of a literal is the count of units
# execute: true
SELECT COUNT(1) FROM establishments;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: count of the privacy unit
# execute: true
SELECT COUNT(id) FROM establishments;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: count distinct of the privacy unit
# execute: true
SELECT COUNT(DISTINCT id) FROM establishments;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: count of a NOT NULL column counts every unit
# execute: true
SELECT COUNT(naics) FROM establishments;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: count star and count of a NOT NULL column share one primitive
# execute: true
SELECT state, COUNT(*), COUNT(county) FROM establishments GROUP BY state;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: count star twice shares one primitive
# execute: true
SELECT COUNT(*) AS a, COUNT(*) AS b FROM establishments;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: count star and count distinct unit share one primitive
# execute: true
SELECT COUNT(*), COUNT(DISTINCT id) FROM establishments;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: sum of each measure
# execute: true
SELECT SUM(employees), SUM(payann), SUM(payqtr1) FROM establishments;
SELECT SUM("employees") AS "__p0", SUM("payann") AS "__p1", SUM("payqtr1") AS "__p2" FROM "establishments";

# title: avg of a measure
# execute: true
SELECT AVG(payann) FROM establishments;
SELECT SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments";

# title: avg and sum of the same measure share the sum
# execute: true
SELECT naics2, SUM(payann), AVG(payann) FROM establishments GROUP BY naics2;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" GROUP BY "naics2";

# title: avg of two measures share the count
# execute: true
SELECT AVG(payann), AVG(employees) FROM establishments;
SELECT SUM("payann") AS "__p0", COUNT(*) AS "__p1", SUM("employees") AS "__p2" FROM "establishments";

# title: several aggregates per group
# execute: true
SELECT state, COUNT(*), SUM(payann), AVG(employees), SUM(payqtr1) FROM establishments GROUP BY state;
SELECT "state" AS "state", COUNT(*) AS "__p0", SUM("payann") AS "__p1", SUM("employees") AS "__p2", SUM("payqtr1") AS "__p3" FROM "establishments" GROUP BY "state";

# title: sum divided by count
# execute: true
SELECT naics2, SUM(payann) / COUNT(*) AS pay_per_est FROM establishments GROUP BY naics2;
SELECT "naics2" AS "naics2", SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" GROUP BY "naics2";

# title: ratio of two sums
# execute: true
SELECT state, SUM(payann) / SUM(employees) AS pay_per_worker FROM establishments GROUP BY state;
SELECT "state" AS "state", SUM("payann") AS "__p0", SUM("employees") AS "__p1" FROM "establishments" GROUP BY "state";

# title: aggregate times a constant
# execute: true
SELECT SUM(payqtr1) * 4 AS annualised FROM establishments;
SELECT SUM("payqtr1") AS "__p0" FROM "establishments";

# title: difference of two sums
# execute: true
SELECT SUM(payann) - SUM(payqtr1) AS rest FROM establishments;
SELECT SUM("payann") AS "__p0", SUM("payqtr1") AS "__p1" FROM "establishments";

# title: round over an aggregate
# execute: true
SELECT ROUND(AVG(payann), 1) AS avg_pay FROM establishments;
SELECT SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments";

# title: cast over an aggregate
# execute: true
SELECT CAST(SUM(payann) AS BIGINT) AS pay FROM establishments;
SELECT SUM("payann") AS "__p0" FROM "establishments";

# title: double-colon cast over an aggregate
# execute: true
SELECT COUNT(*)::DOUBLE AS n FROM establishments;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: case over an aggregate
# execute: true
SELECT state, CASE WHEN COUNT(*) > 1000 THEN 'big' ELSE 'small' END AS size FROM establishments GROUP BY state;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";

# title: coalesce over an avg
# execute: true
SELECT COALESCE(AVG(employees), 0) AS e FROM establishments;
SELECT SUM("employees") AS "__p0", COUNT(*) AS "__p1" FROM "establishments";

# title: ratio of two counts that are the same primitive
# execute: true
SELECT 100.0 * COUNT(naics) / COUNT(*) AS pct FROM establishments;
SELECT COUNT(*) AS "__p0" FROM "establishments";

# title: aggregates in lower case
# execute: true
select count(*), sum(payann), avg(payqtr1) from establishments;
SELECT COUNT(*) AS "__p0", SUM("payann") AS "__p1", SUM("payqtr1") AS "__p2" FROM "establishments";

# title: nested arithmetic over several aggregates
# execute: true
SELECT (SUM(payann) + SUM(payqtr1)) / (COUNT(*) + 1) AS x FROM establishments;
SELECT SUM("payann") AS "__p0", SUM("payqtr1") AS "__p1", COUNT(*) AS "__p2" FROM "establishments";

# title: unary minus over an aggregate
# execute: true
SELECT -SUM(payann) AS neg FROM establishments;
SELECT SUM("payann") AS "__p0" FROM "establishments";

# title: PI() over a noisy aggregate is post-processing
# execute: true
SELECT state, SUM(payann) * PI() AS scaled FROM establishments GROUP BY state;
SELECT "state" AS "state", SUM("payann") AS "__p0"
FROM "establishments"
GROUP BY "state";
