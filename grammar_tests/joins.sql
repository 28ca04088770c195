-- Joins of a private table to public tables declared in the policy ([public_tables]).
-- A public table enters as a projection of the columns the query reads, under internal names.

# title: join a public table on its key, group by its column
# execute: true
SELECT s.region, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code GROUP BY s.region;
SELECT "__j1_region" AS "__j1_region", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "__j1_region";

# title: inner join keyword
# execute: true
SELECT s.region, SUM(payann) FROM establishments e INNER JOIN states s ON e.state = s.code GROUP BY s.region;
SELECT "__j1_region" AS "__j1_region", SUM("payann") AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "__j1_region";

# title: key on the left of the equality
# execute: true
SELECT s.region, COUNT(*) FROM establishments e JOIN states s ON s.code = e.state GROUP BY s.region;
SELECT "__j1_region" AS "__j1_region", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "__j1_region";

# title: join condition in parentheses
# execute: true
SELECT s.region, COUNT(*) FROM establishments e JOIN states s ON (e.state = s.code) GROUP BY s.region;
SELECT "__j1_region" AS "__j1_region", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "__j1_region";

# title: join using the key column
# execute: true
SELECT title, COUNT(*) FROM establishments JOIN naics_sectors USING (naics2) GROUP BY title;
SELECT "__j1_title" AS "__j1_title", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "naics2" AS "__j1_naics2", "title" AS "__j1_title" FROM "naics_sectors") AS "__j1" ON "naics2" = "__j1_naics2" GROUP BY "__j1_title";

# title: left join
# execute: true
SELECT n.title, COUNT(*), SUM(employees) FROM establishments e LEFT JOIN naics_sectors n ON e.naics2 = n.naics2 GROUP BY n.title;
SELECT "__j1_title" AS "__j1_title", COUNT(*) AS "__p0", SUM("employees") AS "__p1" FROM "establishments" LEFT JOIN (SELECT "naics2" AS "__j1_naics2", "title" AS "__j1_title" FROM "naics_sectors") AS "__j1" ON "naics2" = "__j1_naics2" GROUP BY "__j1_title";

# title: left outer join
# execute: true
SELECT n.sector, AVG(payann) FROM establishments e LEFT OUTER JOIN naics_sectors n ON e.naics2 = n.naics2 GROUP BY n.sector;
SELECT "__j1_sector" AS "__j1_sector", SUM("payann") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" LEFT JOIN (SELECT "naics2" AS "__j1_naics2", "sector" AS "__j1_sector" FROM "naics_sectors") AS "__j1" ON "naics2" = "__j1_naics2" GROUP BY "__j1_sector";

# title: tables qualified by their own names
# execute: true
SELECT states.region, COUNT(*) FROM establishments JOIN states ON establishments.state = states.code GROUP BY states.region;
SELECT "__j1_region" AS "__j1_region", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "__j1_region";

# title: unqualified columns of both tables
# execute: true
SELECT region, COUNT(*) FROM establishments JOIN states ON state = code WHERE employees > 10 GROUP BY region;
SELECT "__j1_region" AS "__j1_region", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" WHERE "employees" > 10 GROUP BY "__j1_region";

# title: two public tables joined
# execute: true
SELECT s.region, n.sector, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code JOIN naics_sectors n ON e.naics2 = n.naics2 GROUP BY s.region, n.sector;
SELECT "__j1_region" AS "__j1_region", "__j2_sector" AS "__j2_sector", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" INNER JOIN (SELECT "naics2" AS "__j2_naics2", "sector" AS "__j2_sector" FROM "naics_sectors") AS "__j2" ON "naics2" = "__j2_naics2" GROUP BY "__j1_region", "__j2_sector";

# title: two columns of one public table
# execute: true
SELECT region, division, COUNT(*) FROM establishments JOIN states ON state = code GROUP BY region, division;
SELECT "__j1_region" AS "__j1_region", "__j1_division" AS "__j1_division", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region", "division" AS "__j1_division" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "__j1_region", "__j1_division";

# title: public column in where
# execute: true
SELECT naics2, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code WHERE s.region = 'West' GROUP BY naics2;
SELECT "naics2" AS "naics2", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" WHERE "__j1_region" = 'West' GROUP BY "naics2";

# title: public column in a like filter
# execute: true
SELECT COUNT(*) FROM establishments e JOIN naics_sectors n ON e.naics2 = n.naics2 WHERE n.title LIKE '%Trade';
SELECT COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "naics2" AS "__j1_naics2", "title" AS "__j1_title" FROM "naics_sectors") AS "__j1" ON "naics2" = "__j1_naics2" WHERE "__j1_title" LIKE '%Trade';

# title: join used only as a filter
# execute: true
SELECT COUNT(*) FROM establishments JOIN states ON state = code;
SELECT COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code" FROM "states") AS "__j1" ON "state" = "__j1_code";

# title: join with a public and a private key
# execute: true
SELECT s.region, e.county, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code WHERE e.state = 'VT' GROUP BY s.region, e.county;
SELECT "__j1_region" AS "__j1_region", "county" AS "county", COUNT(*) AS "__p0", COUNT(*) AS "__n" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" WHERE "state" = 'VT' GROUP BY "__j1_region", "county";

# title: join with a declared key of the private table
# execute: true
SELECT e.state, s.name, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code GROUP BY e.state, s.name;
SELECT "state" AS "state", "__j1_name" AS "__j1_name", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "name" AS "__j1_name" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "state", "__j1_name";

# title: count of a public column
# execute: true
SELECT COUNT(n.title), COUNT(*) FROM establishments e LEFT JOIN naics_sectors n ON e.naics2 = n.naics2;
SELECT COUNT("__j1_title") AS "__p0", COUNT(*) AS "__p1" FROM "establishments" LEFT JOIN (SELECT "naics2" AS "__j1_naics2", "title" AS "__j1_title" FROM "naics_sectors") AS "__j1" ON "naics2" = "__j1_naics2";

# title: alias of a public column grouped by alias
# execute: true
SELECT s.region AS r, SUM(employees) AS emp FROM establishments e JOIN states s ON e.state = s.code GROUP BY r;
SELECT "__j1_region" AS "__j1_region", SUM("employees") AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "__j1_region";

# title: public column grouped by ordinal
# execute: true
SELECT s.division, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code GROUP BY 1;
SELECT "__j1_division" AS "__j1_division", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "division" AS "__j1_division" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "__j1_division";

# title: having and order by over a public key
# execute: true
SELECT s.region, COUNT(*) AS n FROM establishments e JOIN states s ON e.state = s.code GROUP BY s.region HAVING COUNT(*) > 100 ORDER BY s.region DESC LIMIT 2;
SELECT "__j1_region" AS "__j1_region", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "__j1_region";

# title: expression of a public column
# execute: true
SELECT LOWER(s.region) AS r, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code GROUP BY LOWER(s.region);
SELECT LOWER("__j1_region") AS "__k0", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY LOWER("__j1_region");

# title: public column in a case
# execute: true
SELECT CASE WHEN s.region = 'South' THEN 'south' ELSE 'elsewhere' END AS part, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code GROUP BY 1;
SELECT CASE WHEN "__j1_region" = 'South' THEN 'south' ELSE 'elsewhere' END AS "__k0", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY CASE WHEN "__j1_region" = 'South' THEN 'south' ELSE 'elsewhere' END;

# title: join in upper case with quoted names
# execute: true
SELECT "S"."REGION", COUNT(*) FROM ESTABLISHMENTS AS E JOIN "states" AS "S" ON E.STATE = "S"."CODE" GROUP BY "S"."REGION";
SELECT "__j1_region" AS "__j1_region", COUNT(*) AS "__p0" FROM "establishments" INNER JOIN (SELECT "code" AS "__j1_code", "region" AS "__j1_region" FROM "states") AS "__j1" ON "state" = "__j1_code" GROUP BY "__j1_region";
