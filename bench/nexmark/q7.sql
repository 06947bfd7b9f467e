-- Highest bid: the bids at each 10-second window's highest price (the top rank per window,
-- where Nexmark joins the bids to their window's maximum).
CREATE MATERIALIZED VIEW q7 AS
SELECT auction, price, bidder, date_time FROM (
    SELECT auction, price, bidder, date_time,
           rank() OVER (PARTITION BY window_start ORDER BY price DESC) AS r
    FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND)) ranked
WHERE r = 1;
