-- Hot items: the auctions with the most bids in each 10-second window sliding by 2 seconds
-- (the top rank per window, where Nexmark joins the counts to their maximum).
CREATE MATERIALIZED VIEW q5_counts AS
SELECT auction, count(*) AS num, window_start AS starttime
FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
GROUP BY window_start, auction;
CREATE MATERIALIZED VIEW q5 AS
SELECT auction, num, starttime FROM (
    SELECT auction, num, starttime, rank() OVER (PARTITION BY starttime ORDER BY num DESC) AS r
    FROM q5_counts) ranked
WHERE r = 1;
