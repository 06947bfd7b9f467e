SELECT auction, price, bidder, date_time FROM (
    SELECT auction, price, bidder, date_time,
           rank() OVER (PARTITION BY time_bucket(INTERVAL '10 seconds', date_time)
                        ORDER BY price DESC) AS r
    FROM bid) ranked
WHERE r = 1
