# index_shards and index_read_shards (issue 42): whole numbers 1..64, listings read at least the shards
# writers write, and both reach the worker's and the API function's environments and client_config.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

variables {
  name = "unit"
}

run "one_shard_by_default" {
  command = plan

  assert {
    condition = (
      module.engine.environment.STEPWELL_INDEX_SHARDS == "1" &&
      module.engine.environment.STEPWELL_INDEX_READ_SHARDS == "1" &&
      output.client_config.index_shards == 1 && output.client_config.index_read_shards == 1
    )
    error_message = "By default writers and readers use one shard (each key value as it was before sharding)."
  }
}

run "a_raised_count_reaches_every_function" {
  command = plan

  variables {
    index_shards      = 4
    index_read_shards = 8
    enable_api        = true
    api_principals = {
      read = ["arn:aws:iam::123456789012:role/operator"]
    }
  }

  assert {
    condition = (
      module.engine.environment.STEPWELL_INDEX_SHARDS == "4" &&
      module.engine.environment.STEPWELL_INDEX_READ_SHARDS == "8" &&
      module.api[0].environment.STEPWELL_INDEX_SHARDS == "4" &&
      module.api[0].environment.STEPWELL_INDEX_READ_SHARDS == "8" &&
      output.client_config.index_shards == 4 && output.client_config.index_read_shards == 8
    )
    error_message = "index_shards and index_read_shards must reach the worker, the API function and client_config."
  }
}

run "rejects_zero_shards" {
  command = plan

  variables {
    index_shards = 0
  }

  expect_failures = [var.index_shards]
}

run "rejects_a_fraction_of_a_shard" {
  command = plan

  variables {
    index_shards = 2.5
  }

  expect_failures = [var.index_shards]
}

run "rejects_more_than_64_shards" {
  command = plan

  variables {
    index_shards = 65
  }

  expect_failures = [var.index_shards]
}

run "rejects_readers_reading_fewer_shards_than_writers_write" {
  command = plan

  variables {
    index_shards      = 8
    index_read_shards = 4
  }

  expect_failures = [var.index_read_shards]
}

run "the_state_module_rejects_readers_behind_writers_too" {
  command = plan

  module {
    source = "./modules/state"
  }

  variables {
    index_shards      = 2
    index_read_shards = 1
  }

  expect_failures = [var.index_read_shards]
}
