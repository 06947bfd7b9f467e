-- Currency conversion: bid prices in euros.
CREATE MATERIALIZED VIEW q1 AS SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid;
