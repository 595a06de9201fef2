"""The ``regimes`` and ``duplicates`` views as revisions 0001-0004 created them (over the
``sample_point`` columns those revisions had), frozen for those revisions and the
downgrade of 0005."""

REGIMES_VIEW_SQL = """
CREATE VIEW regimes AS
SELECT p.alias AS version, sp.kernel_type, sp.path, sp.regime_key,
       COUNT(*) AS points,
       COUNT(DISTINCT sp.latency_column) AS latency_columns,
       MIN(sp.axis_0) AS axis_0_min, MAX(sp.axis_0) AS axis_0_max,
       MIN(sp.axis_1) AS axis_1_min, MAX(sp.axis_1) AS axis_1_max,
       MIN(sp.axis_2) AS axis_2_min, MAX(sp.axis_2) AS axis_2_max
FROM sample_point sp JOIN profile_set p ON p.id = sp.profile_id
GROUP BY p.alias, sp.kernel_type, sp.path, sp.regime_key
"""

DUPLICATES_VIEW_SQL = """
CREATE VIEW duplicates AS
WITH ranked AS (
  SELECT sp.profile_id, sp.kernel_type, sp.path, sp.regime_key,
         sp.axis_0, sp.axis_1, sp.axis_2, sp.latency_column, sp.latency_us, s.line_no,
         ROW_NUMBER() OVER w AS rn,
         COUNT(*) OVER (PARTITION BY sp.profile_id, sp.kernel_type, sp.path, sp.regime_key,
                        sp.axis_0, sp.axis_1, sp.axis_2, sp.latency_column) AS n
  FROM sample_point sp JOIN sample s ON s.id = sp.sample_id
  WINDOW w AS (PARTITION BY sp.profile_id, sp.kernel_type, sp.path, sp.regime_key,
               sp.axis_0, sp.axis_1, sp.axis_2, sp.latency_column ORDER BY sp.latency_us)
)
SELECT p.alias AS version, r.kernel_type, r.path, r.regime_key,
       r.axis_0, r.axis_1, r.axis_2, r.latency_column,
       MAX(r.n) AS rows_at_coordinate,
       MIN(r.latency_us) AS latency_min,
       AVG(CASE WHEN r.rn IN ((r.n + 1) / 2, (r.n + 2) / 2) THEN r.latency_us END)
           AS latency_median,
       MAX(r.latency_us) AS latency_max,
       MIN(r.line_no) AS first_line
FROM ranked r JOIN profile_set p ON p.id = r.profile_id
WHERE r.n > 1
GROUP BY p.alias, r.kernel_type, r.path, r.regime_key, r.axis_0, r.axis_1, r.axis_2,
         r.latency_column
"""
