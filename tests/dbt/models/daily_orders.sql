{{ config(materialized='incremental', unique_key='ordered_on') }}
select ordered_on, count(*) as orders, sum(amount) as amount
from {{ ref('orders_seed') }}
{% if is_incremental() %}
where ordered_on >= (select max(ordered_on) from {{ this }})
{% endif %}
group by ordered_on
