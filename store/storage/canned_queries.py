"""The canned queries of the web view (Datasette's "queries" block of the database's
metadata): named, parameterised SQL over the tables and the ``regimes``/``duplicates``
views, written for SQLite (the web view serves a SQLite file). They live beside the
other readers of the schema, so a change to a table and to the queries that read it is
one change here; ``profstore.web.config`` puts them into the served metadata.

``mapping_routes`` calls ``profstore_path(selector, kernel)``, the SQL function the web
view's plugin registers (the registry's routing)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CannedQuery:
    name: str
    title: str
    description: str
    sql: str

    def metadata(self) -> dict[str, Any]:
        """The query as Datasette's metadata spells it."""
        return {"title": self.title, "description": self.description, "sql": self.sql}


CANNED_QUERIES = (
    CannedQuery(
        'kernel_regimes',
        'Regimes of a kernel',
        (
            'Every regime of one kernel (optionally one version), with its point count and '
            'axis ranges, the largest first. Click a regime_key for its picture.'
        ),
        """\
select version, kernel_type, path, regime_key, points, latency_columns,
       axis_0_min, axis_0_max, axis_1_min, axis_1_max, axis_2_min, axis_2_max
from regimes
where kernel_type = :kernel and (:version = '' or version = :version)
order by version, points desc, path, regime_key"""),
    CannedQuery(
        'wide_duplicates',
        'Duplicates that disagree by more than a given percent',
        (
            'Duplicate coordinates whose spread, (max - min) / median in percent, exceeds '
            ':percent (optionally one version), the widest first.'
        ),
        """\
select version, kernel_type, path, regime_key, axis_0, axis_1, axis_2,
       latency_column, rows_at_coordinate, latency_min, latency_median, latency_max,
       round(100.0 * (latency_max - latency_min) / latency_median, 2)
         as spread_percent,
       first_line
from duplicates
where 100.0 * (latency_max - latency_min) / latency_median > cast(:percent as real)
  and (:version = '' or version = :version)
order by spread_percent desc, version, kernel_type"""),
    CannedQuery(
        'refusals_by_reason',
        'Rejected rows and path refusals by reason',
        (
            'Rows ingest refused (rejected_row) and samples a path could not use '
            '(path_refusal), counted by reason code, optionally for one version; one '
            'example each. Filter the tables for the rows themselves.'
        ),
        """\
select 'rejected_row' as kind, p.alias as version, r.reason_code as reason,
       r.file_name as kernel_or_file, '' as path, count(*) as rows,
       min(r.reason) as example
from rejected_row r join profile_set p on p.id = r.profile_id
where :version = '' or p.alias = :version
group by p.alias, r.reason_code, r.file_name
union all
select 'path_refusal', p.alias,
       case when instr(f.reason, ':') > 0
            then substr(f.reason, 1, instr(f.reason, ':') - 1) else f.reason end,
       f.kernel_type, f.path, count(*), min(f.reason)
from path_refusal f join profile_set p on p.id = f.profile_id
where :version = '' or p.alias = :version
group by p.alias, 3, f.kernel_type, f.path
order by rows desc, kind, version, reason"""),
    CannedQuery(
        'regime_points',
        'The points of one regime',
        (
            'Every sample_point of one regime (version, kernel, path, regime_key), sorted '
            'by axes, with the CSV file and line it came from.'
        ),
        """\
select sp.axis_0, sp.axis_1, sp.axis_2, s.latency_us, s.latency_column,
       sp.semantic_key, kf.file_name, s.line_no, s.id as sample_id
from sample_point sp
  join regime g on g.id = sp.regime_id
  join profile_set p on p.id = g.profile_id
  join sample s on s.id = sp.sample_id
  join kernel_file kf on kf.id = s.kernel_file_id
where p.alias = :version and g.kernel_type = :kernel and g.path = :path
  and g.regime_key = :regime_key
order by sp.axis_0, sp.axis_1, sp.axis_2, s.latency_column, s.latency_us"""),
    CannedQuery(
        'kernels_only_in',
        'Kernels in one version and not in another',
        (
            'Kernel types with a CSV in :version and none in :other, with their row counts '
            '(swap the two for the other direction).'
        ),
        """\
select kf.kernel_type, kf.file_name, kf.rows_read, kf.rows_accepted,
       kf.rows_rejected, kf.refusal
from kernel_file kf join profile_set p on p.id = kf.profile_id
where p.alias = :version
  and kf.kernel_type not in (
    select k2.kernel_type from kernel_file k2
      join profile_set p2 on p2.id = k2.profile_id
    where p2.alias = :other)
order by kf.kernel_type"""),
    CannedQuery(
        'mapping_routes',
        'Where each mapping entry of a version routes',
        (
            'Every op_mapping entry of :version: the kernels it tries, the path its first '
            "kernel is looked up on (profstore_path, the registry's routing) and how many "
            'points that kernel has on that path; zero_cost and accepted_miss entries say '
            'so.'
        ),
        """\
select m.op, m.selector, profstore_path(m.selector, m.kernel_type) as path,
       m.kernel_type,
       (select count(*) from sample_point sp join regime g on g.id = sp.regime_id
         where g.profile_id = m.profile_id and g.kernel_type = m.kernel_type
           and g.path = profstore_path(m.selector, m.kernel_type)) as points,
       m.zero_cost, m.alternate_kernel_types, m.category, m.composite,
       m.sub_kernels, m.accepted_miss
from op_mapping m join profile_set p on p.id = m.profile_id
where p.alias = :version
order by m.op"""),
)


def canned_queries_metadata() -> dict[str, dict[str, Any]]:
    """Every canned query, by name, in the order the web view lists them."""
    return {query.name: query.metadata() for query in CANNED_QUERIES}
