# title: read_csv
# error: DP107
SELECT COUNT(*) FROM read_csv('/etc/passwd');

# title: read_csv_auto
# error: DP107
SELECT COUNT(*) FROM read_csv_auto('data.csv');

# title: read_parquet
# error: DP107
SELECT COUNT(*) FROM read_parquet('s3://bucket/x.parquet');

# title: parquet_scan
# error: DP107
SELECT COUNT(*) FROM parquet_scan('x.parquet');

# title: read_json
# error: DP107
SELECT COUNT(*) FROM read_json('x.json');

# title: read_text
# error: DP107
SELECT COUNT(*) FROM read_text('/etc/hostname');

# title: glob
# error: DP107
SELECT COUNT(*) FROM glob('/home/*');

# title: range table function
# error: DP107
SELECT COUNT(*) FROM range(10);

# title: generate_series table function
# error: DP107
SELECT COUNT(*) FROM generate_series(1, 10);

# title: duckdb catalog function
# error: DP107
SELECT COUNT(*) FROM duckdb_tables();

# title: string path in from
# error: DP107
SELECT COUNT(*) FROM 'data.csv';

# title: string path with select star
# error: DP107
SELECT * FROM 'file.csv';

# title: string path with the name of a declared table
# error: DP107
SELECT COUNT(*) FROM 'establishments';

# title: quoted identifier that is a file path
# error: DP107
SELECT COUNT(*) FROM "data.parquet";

# title: string path with a glob
# error: DP107
SELECT SUM(payann) FROM 'dir/*.parquet';

# title: url in from
# error: DP107
SELECT COUNT(*) FROM 'https://example.com/x.csv';

# title: file read in a where subquery
# error: DP104
SELECT COUNT(*) FROM establishments WHERE state IN (SELECT * FROM read_csv('x.csv'));

# title: read_csv in the select list
# error: DP107
SELECT COUNT(*), read_csv('x.csv') FROM establishments;
