-- Passthrough: every bid.
CREATE MATERIALIZED VIEW q0 AS SELECT auction, bidder, price, date_time FROM bid;
