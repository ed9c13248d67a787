"""`make scale` (run by tools/scale.py): issue 42's scale model, fed by measurement.

- workload: the mix (straight steps, callbacks, parallel, invoke, waits from 1 s to a year, definitions
  contexts of many tenants) on one moto deployment (bench.moto_stack), every request tagged.
- recorder: botocore hooks on the engine's clients: service, operation and, for DynamoDB, the partitions
  each request touches (keys: table, GSI, partition key value, units from item sizes).
- model: per-kind profiles from the records, and their projection to a target's rates.
- targets: issue 42's targets; limits: the AWS limits and their sources; report: the markdown; cli.
"""
