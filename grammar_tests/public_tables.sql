-- Queries that read the policy's public tables only (states, naics_sectors): answered before the
-- private pipeline (dpsql/intercept/public_tables.py), exactly and at zero charge, on a database
-- that holds the public tables and nothing else. `# public: true` cases: the expected SQL is what
-- runs there (the same text), and the test compares its rows with the file's.

# title: every row of a public table
# public: true
SELECT * FROM states;
SELECT * FROM states;

# title: distinct values of a public column
# public: true
SELECT DISTINCT region FROM states ORDER BY region;
SELECT DISTINCT region FROM states ORDER BY region;

# title: public table alone, grouped
# public: true
SELECT region, COUNT(*) FROM states GROUP BY region;
SELECT region, COUNT(*) FROM states GROUP BY region;

# title: main-qualified public table
# public: true
SELECT * FROM main.states WHERE code = 'CA';
SELECT * FROM main.states WHERE code = 'CA';

# title: quoted public table in another case
# public: true
SELECT "Code", name FROM "STATES" WHERE region = 'West' ORDER BY 1 LIMIT 3;
SELECT "Code", name FROM "STATES" WHERE region = 'West' ORDER BY 1 LIMIT 3;

# title: FROM first
# public: true
FROM naics_sectors SELECT title WHERE naics2 = '52';
FROM naics_sectors SELECT title WHERE naics2 = '52';

# title: join of two public tables
# public: true
SELECT s.code, n.sector FROM states s CROSS JOIN naics_sectors n WHERE s.region = 'West' AND n.naics2 < '30';
SELECT s.code, n.sector FROM states s CROSS JOIN naics_sectors n WHERE s.region = 'West' AND n.naics2 < '30';

# title: CTE over a public table
# public: true
WITH w AS (SELECT * FROM states WHERE region = 'West') SELECT division, COUNT(*) AS n FROM w GROUP BY division;
WITH w AS (SELECT * FROM states WHERE region = 'West') SELECT division, COUNT(*) AS n FROM w GROUP BY division;

# title: CTE that reads an earlier CTE
# public: true
WITH a AS (SELECT * FROM states), b AS (SELECT region FROM a) SELECT DISTINCT region FROM b;
WITH a AS (SELECT * FROM states), b AS (SELECT region FROM a) SELECT DISTINCT region FROM b;

# title: CTE named like a private table
# public: true
WITH establishments AS (SELECT code AS state FROM states) SELECT COUNT(*) FROM establishments;
WITH establishments AS (SELECT code AS state FROM states) SELECT COUNT(*) FROM establishments;

# title: subquery over public tables
# public: true
SELECT name FROM states WHERE region IN (SELECT region FROM states WHERE code = 'CA');
SELECT name FROM states WHERE region IN (SELECT region FROM states WHERE code = 'CA');

# title: union of public tables
# public: true
SELECT code FROM states UNION ALL SELECT naics2 FROM naics_sectors;
SELECT code FROM states UNION ALL SELECT naics2 FROM naics_sectors;
