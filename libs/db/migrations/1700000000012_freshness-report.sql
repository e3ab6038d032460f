-- Up Migration

-- Freshness per host, for operators (psql) and the CLI/dashboard. One row per host, plus one row
-- with host NULL for all hosts together.
--   pages                     crawled_pages rows
--   scheduled                 pages with a due time (next_crawl_at)
--   changing                  pages with an estimated change interval (a change was seen)
--   median_change_interval_s  median estimated change interval over those, seconds
--   overdue                   pages whose due time has passed (next_crawl_at < as_of)
--   oldest_overdue_s          how long the most overdue page has been due, seconds
--   recrawls                  re-crawls in the window (as_of - recent, as_of]
--   late                      those that came after their due time + grace
--   deadline_miss_rate        late / recrawls (NULL without re-crawls)
-- The parameters have defaults, so freshness_report() is the usual call; for one host pass
-- only_host => 'example.com' (filtering the views instead scans every host).
CREATE FUNCTION freshness_report(
  grace interval DEFAULT interval '5 minutes',
  recent interval DEFAULT interval '1 day',
  as_of timestamptz DEFAULT now(),
  only_host text DEFAULT NULL
) RETURNS TABLE (
  host text,
  pages bigint,
  scheduled bigint,
  changing bigint,
  median_change_interval_s double precision,
  overdue bigint,
  oldest_overdue_s double precision,
  recrawls bigint,
  late bigint,
  deadline_miss_rate double precision
)
LANGUAGE sql
STABLE
SET search_path FROM CURRENT
AS $$
  WITH pages AS (
    SELECT cp.host, cp.change_frequency_s, cp.next_crawl_at
    FROM crawled_pages cp
    WHERE only_host IS NULL OR cp.host = only_host
  ),
  visits AS (
    SELECT rv.host, rv.due_at, rv.fetched_at
    FROM recrawl_visits rv
    WHERE rv.fetched_at > as_of - recent AND rv.fetched_at <= as_of AND (only_host IS NULL OR rv.host = only_host)
  ),
  page_stats AS (
    SELECT p.host,
           count(*) AS pages,
           count(p.next_crawl_at) AS scheduled,
           count(p.change_frequency_s) AS changing,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY p.change_frequency_s) AS median_change_interval_s,
           count(*) FILTER (WHERE p.next_crawl_at < as_of) AS overdue,
           extract(epoch FROM as_of - min(p.next_crawl_at) FILTER (WHERE p.next_crawl_at < as_of))::double precision AS oldest_overdue_s
    FROM pages p
    GROUP BY GROUPING SETS ((p.host), ())
  ),
  visit_stats AS (
    SELECT v.host,
           count(*) AS recrawls,
           count(*) FILTER (WHERE v.fetched_at > v.due_at + grace) AS late
    FROM visits v
    GROUP BY GROUPING SETS ((v.host), ())
  ),
  -- A FULL JOIN needs an equality; the all-hosts rows (host NULL) join on a key of their own.
  keyed_pages AS (SELECT coalesce(host, '') AS k, * FROM page_stats),
  keyed_visits AS (SELECT coalesce(host, '') AS k, * FROM visit_stats)
  SELECT coalesce(p.host, v.host) AS host,
         coalesce(p.pages, 0) AS pages,
         coalesce(p.scheduled, 0) AS scheduled,
         coalesce(p.changing, 0) AS changing,
         p.median_change_interval_s,
         coalesce(p.overdue, 0) AS overdue,
         p.oldest_overdue_s,
         coalesce(v.recrawls, 0) AS recrawls,
         coalesce(v.late, 0) AS late,
         v.late::double precision / nullif(v.recrawls, 0) AS deadline_miss_rate
  FROM keyed_pages p FULL JOIN keyed_visits v ON p.k = v.k
  ORDER BY 1 NULLS FIRST;
$$;

-- The report with its defaults (grace 5 minutes, re-crawls of the last day), per host …
CREATE VIEW freshness_by_host AS
  SELECT * FROM freshness_report() AS r WHERE r.host IS NOT NULL;

-- … and for all hosts together.
CREATE VIEW freshness_total AS
  SELECT pages, scheduled, changing, median_change_interval_s, overdue, oldest_overdue_s, recrawls, late, deadline_miss_rate
  FROM freshness_report() AS r WHERE r.host IS NULL;

-- Every page past its due time, with how long it has been due.
CREATE VIEW recrawl_overdue AS
  SELECT cp.host, cp.url, cp.url_hash, cp.next_crawl_at,
         extract(epoch FROM now() - cp.next_crawl_at)::double precision AS overdue_s,
         cp.change_frequency_s, cp.recrawl_failures, cp.fetched_at, cp.http_status
  FROM crawled_pages cp
  WHERE cp.next_crawl_at < now();

-- Down Migration
DROP VIEW recrawl_overdue;
DROP VIEW freshness_total;
DROP VIEW freshness_by_host;
DROP FUNCTION freshness_report(interval, interval, timestamptz, text);
