# title: raw rows of a private table
# error: DP201
SELECT id, payann FROM establishments;

# title: select star
# error: DP108
SELECT * FROM establishments;

# title: max is not supported yet
# error: DP109
SELECT MAX(payann) FROM establishments;

# title: sum of a column that is not a measure
# error: DP204
SELECT SUM(firm_id) FROM establishments;

# title: file read in from
# error: DP107
SELECT COUNT(*) FROM read_parquet('x.parquet');

# title: union of two queries
# error: DP103
SELECT COUNT(*) FROM establishments UNION ALL SELECT COUNT(*) FROM devices;

# title: attach a database
# error: DP102
ATTACH 'other.duckdb';

# title: join of two private tables on their units, both one row per unit
# error: DP217
SELECT COUNT(*) FROM establishments a JOIN paper_table2 b ON a.id = b.id;

# title: join of two private tables on a column that is not both units
# error: DP105
SELECT COUNT(*) FROM establishments a JOIN paper_table2 b ON a.naics2 = b.id;

# title: window function
# error: DP106
SELECT SUM(payann) OVER (PARTITION BY state) FROM establishments;

# title: delete rows
# error: DP102
DELETE FROM establishments WHERE state = 'CA';

# title: copy a table to a file
# error: DP102
COPY establishments TO 'leak.csv';
