WITH windows AS (
    SELECT auction, unnest(generate_series(
        time_bucket(INTERVAL '2 seconds', date_time) - INTERVAL '8 seconds',
        time_bucket(INTERVAL '2 seconds', date_time),
        INTERVAL '2 seconds')) AS starttime
    FROM bid),
counts AS (SELECT auction, count(*) AS num, starttime FROM windows GROUP BY starttime, auction)
SELECT auction, num, starttime FROM (
    SELECT auction, num, starttime, rank() OVER (PARTITION BY starttime ORDER BY num DESC) AS r
    FROM counts) ranked
WHERE r = 1
