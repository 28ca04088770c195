-- Joins dpsql refuses: anything but a lookup of a public table on its key.

# title: right join
# error: DP105
SELECT COUNT(*) FROM establishments e RIGHT JOIN states s ON e.state = s.code;

# title: full join
# error: DP105
SELECT COUNT(*) FROM establishments e FULL OUTER JOIN states s ON e.state = s.code;

# title: semi join
# error: DP105
SELECT COUNT(*) FROM establishments e SEMI JOIN states s ON e.state = s.code;

# title: anti join
# error: DP105
SELECT COUNT(*) FROM establishments e ANTI JOIN states s ON e.state = s.code;

# title: cross join to a public table
# error: DP105
SELECT COUNT(*) FROM establishments CROSS JOIN states;

# title: comma join to a public table
# error: DP105
SELECT COUNT(*) FROM establishments, states WHERE state = code;

# title: join on a column that is not the key
# error: DP105
SELECT COUNT(*) FROM establishments e JOIN states s ON e.state = s.name;

# title: join on an inequality
# error: DP105
SELECT COUNT(*) FROM establishments e JOIN states s ON e.state < s.code;

# title: join with a second condition
# error: DP105
SELECT COUNT(*) FROM establishments e JOIN states s ON e.state = s.code AND s.region = 'West';

# title: join using a column that is not the key
# error: DP105
SELECT COUNT(*) FROM establishments JOIN naics_sectors USING (title);

# title: join using two columns
# error: DP105
SELECT COUNT(*) FROM establishments JOIN naics_sectors USING (naics2, sector);

# title: public table joined twice
# error: DP105
SELECT COUNT(*) FROM establishments e JOIN states s ON e.state = s.code JOIN states t ON e.state = t.code;

# title: public table first
# error: DP105
SELECT COUNT(*) FROM states s JOIN establishments e ON e.state = s.code;

# title: ambiguous unqualified column
# error: DP203
SELECT naics2, COUNT(*) FROM establishments e JOIN naics_sectors n ON e.naics2 = n.naics2 GROUP BY naics2;

# title: unknown column of a public table
# error: DP203
SELECT s.population, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code GROUP BY s.population;

# title: sum of a public column
# error: DP204
SELECT SUM(s.fips) FROM establishments e JOIN states s ON e.state = s.code;

# title: join comparing a number with text
# error: DP105
SELECT COUNT(*) FROM establishments e JOIN states s ON e.employees = s.code;

# title: one alias for two tables
# error: DP105
SELECT COUNT(*) FROM establishments e JOIN states e ON state = code;

# title: public column outside group by
# error: DP201
SELECT s.name, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code GROUP BY s.region;

# title: private non-key column with a join
# error: DP206
SELECT e.firm_id, COUNT(*) FROM establishments e JOIN states s ON e.state = s.code GROUP BY e.firm_id;

# title: join to an undeclared table
# error: DP202
SELECT COUNT(*) FROM establishments e JOIN _dpsql_demo_meta m ON e.state = m.key;

# title: join to a subquery
# error: DP105
SELECT COUNT(*) FROM establishments e JOIN (SELECT * FROM states) s ON e.state = s.code;

# title: join to a table of another catalog
# error: DP202
SELECT COUNT(*) FROM establishments e JOIN other.main.states s ON e.state = s.code;

# title: join on a column of the same table
# error: DP105
SELECT COUNT(*) FROM establishments e JOIN states s ON s.code = s.code;

# title: join without a key in the condition
# error: DP105
SELECT COUNT(*) FROM establishments e JOIN states s ON e.state = e.county;
