# title: paper table 1 count by industry
# execute: true
SELECT industry, COUNT(*) FROM paper_table1 GROUP BY industry;
SELECT "industry" AS "industry", COUNT(*) AS "__p0" FROM "paper_table1" GROUP BY "industry";

# title: paper table 1 sum of employees
# execute: true
SELECT industry, SUM(employees) FROM paper_table1 GROUP BY industry;
SELECT "industry" AS "industry", SUM("employees") AS "__p0" FROM "paper_table1" GROUP BY "industry";

# title: paper table 1 avg of employees
# execute: true
SELECT AVG(employees) FROM paper_table1;
SELECT SUM("employees") AS "__p0", COUNT(*) AS "__p1" FROM "paper_table1";

# title: paper table 1 filtered
# execute: true
SELECT COUNT(*) FROM paper_table1 WHERE industry IN ('Retail', 'Services');
SELECT COUNT(*) AS "__p0" FROM "paper_table1" WHERE "industry" IN ('Retail', 'Services');

# title: paper table 2 count
# execute: true
SELECT COUNT(*) FROM paper_table2;
SELECT COUNT(*) AS "__p0" FROM "paper_table2";

# title: paper table 2 avg payroll by industry
# execute: true
SELECT industry, AVG(payroll) FROM paper_table2 GROUP BY industry;
SELECT "industry" AS "industry", SUM("payroll") AS "__p0", COUNT(*) AS "__p1" FROM "paper_table2" GROUP BY "industry";

# title: paper table 2 payroll per employee
# execute: true
SELECT industry, SUM(payroll) / SUM(employees) AS per_emp FROM paper_table2 GROUP BY industry;
SELECT "industry" AS "industry", SUM("payroll") AS "__p0", SUM("employees") AS "__p1" FROM "paper_table2" GROUP BY "industry";

# title: paper table 2 filtered on a measure
# execute: true
SELECT SUM(payroll) FROM paper_table2 WHERE employees > 50;
SELECT SUM("payroll") AS "__p0" FROM "paper_table2" WHERE "employees" > 50;

# title: devices count
# execute: true
SELECT COUNT(*) FROM devices;
SELECT COUNT(*) AS "__p0" FROM "devices";

# title: devices avg latency in tenths
# execute: true
SELECT AVG(latency_ms) FROM devices;
SELECT SUM(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT)) AS "__p0", COUNT(*) AS "__p1"
FROM "devices";

# title: devices sum latency filtered
# execute: true
SELECT SUM(latency_ms) FROM devices WHERE device_model LIKE 'Galaxy%';
SELECT SUM(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT)) AS "__p0"
FROM "devices"
WHERE "device_model" LIKE 'Galaxy%';

# title: devices where on the measure
# execute: true
SELECT COUNT(*) FROM devices WHERE latency_ms > 100.5;
SELECT COUNT(*) AS "__p0" FROM "devices" WHERE "latency_ms" > 100.5;

# title: devices qualified by alias
# execute: true
SELECT d.device_model, SUM(d.latency_ms) FROM devices AS d GROUP BY d.device_model;
SELECT "device_model" AS "device_model", SUM(TRY_CAST(ROUND("latency_ms" * 10 / 1) AS BIGINT)) AS "__p0", COUNT(*) AS "__n"
FROM "devices"
GROUP BY "device_model";

# title: establishments qualified by main and alias
# execute: true
SELECT e.state, COUNT(*) FROM main.establishments e GROUP BY e.state;
SELECT "state" AS "state", COUNT(*) AS "__p0" FROM "establishments" GROUP BY "state";
