# title: create table
# error: DP102
CREATE TABLE t (x INTEGER);

# title: create table as select
# error: DP102
CREATE TABLE t AS SELECT state FROM establishments;

# title: create view
# error: DP102
CREATE VIEW v AS SELECT state FROM establishments;

# title: create macro
# error: DP102
CREATE MACRO m(x) AS x + 1;

# title: drop table
# error: DP102
DROP TABLE establishments;

# title: alter table
# error: DP102
ALTER TABLE establishments ADD COLUMN x INTEGER;

# title: insert values
# error: DP102
INSERT INTO establishments VALUES (1, 2, 'CA', '06001', '722511', '72', 1, 1, 1);

# title: insert select
# error: DP102
INSERT INTO devices SELECT * FROM devices;

# title: update
# error: DP102
UPDATE establishments SET payann = 0 WHERE state = 'CA';

# title: delete all rows
# error: DP102
DELETE FROM devices;

# title: truncate
# error: DP102
TRUNCATE establishments;

# title: merge
# error: DP102
MERGE INTO devices USING devices AS d ON devices.user_id = d.user_id WHEN MATCHED THEN DELETE;

# title: copy a table to a csv file
# error: DP102
COPY devices TO 'devices.csv' (HEADER);

# title: copy a query to a parquet file
# error: DP102
COPY (SELECT * FROM establishments) TO 'e.parquet' (FORMAT PARQUET);

# title: copy from a file
# error: DP102
COPY establishments FROM 'e.csv';

# title: attach with an alias
# error: DP102
ATTACH 'other.duckdb' AS other;

# title: attach read only
# error: DP102
ATTACH 'other.duckdb' AS other (READ_ONLY);

# title: detach
# error: DP102
DETACH other;

# title: install an extension
# error: DP102
INSTALL httpfs;

# title: load an extension
# error: DP102
LOAD httpfs;

# title: force install
# error: DP102
FORCE INSTALL httpfs;

# title: pragma
# error: DP102
PRAGMA database_list;

# title: pragma with an argument
# error: DP102
PRAGMA table_info('establishments');

# title: duckdb set
# error: DP102
SET threads = 1;

# title: duckdb set of external access
# error: DP102
SET enable_external_access = true;

# title: duckdb set global
# error: DP102
SET GLOBAL memory_limit = '1GB';

# title: duckdb reset
# error: DP102
RESET threads;

# title: export database
# error: DP102
EXPORT DATABASE 'dump';

# title: export database with options
# error: DP102
EXPORT DATABASE 'dump' (FORMAT PARQUET);

# title: import database
# error: DP102
IMPORT DATABASE 'dump';

# title: checkpoint
# error: DP102
CHECKPOINT;

# title: vacuum
# error: DP102
VACUUM;

# title: begin a transaction
# error: DP102
BEGIN TRANSACTION;

# title: call a table function
# error: DP102
CALL pragma_version();

# title: describe
# error: DP102
DESCRIBE establishments;

# title: summarize
# error: DP102
SUMMARIZE establishments;

# title: explain analyze would run the query (plain EXPLAIN is answered before the pipeline, free)
# error: DP102
EXPLAIN ANALYZE SELECT COUNT(*) FROM establishments;

# title: use
# error: DP102
USE main;

# title: values
# error: DP102
VALUES (1), (2);

# title: pivot statement
# error: DP102
PIVOT establishments ON state USING SUM(payann);

# title: create secret
# error: DP102
CREATE SECRET s (TYPE S3, KEY_ID 'k', SECRET 's');

# title: a keyword that is not a statement
# error: DP100
SELEC COUNT(*) FROM establishments;

# title: unbalanced parentheses
# error: DP100
SELECT COUNT(* FROM establishments;
