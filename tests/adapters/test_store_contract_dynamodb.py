"""The engine's ExecutionStore contract (tests/engine/test_store_contract.py) on the DynamoDB store."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws
from moto.dynamodb.responses import DynamoHandler
from stepwell.aws.clients import AwsClients
from stepwell.aws.dynamodb_store import DynamoDbExecutionStore
from stepwell.aws.dynamodb_store import due_shard as dynamodb_due_shard
from stepwell.aws.payloads import S3PayloadStore
from stepwell.memory.store import due_shard as memory_due_shard

from .deployment import REGION, create_deployment

# The engine's tests are not a package: load the contract module from its file.
_CONTRACT_PATH = Path(__file__).resolve().parents[1] / "engine" / "test_store_contract.py"
_spec = importlib.util.spec_from_file_location("stepwell_store_contract", _CONTRACT_PATH)
assert _spec is not None and _spec.loader is not None
_contract = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_contract)

# The contract's tests, run here with the DynamoDB store as `execution_store`.
test_create_is_conditional_and_complete_happens_once = (
    _contract.test_create_is_conditional_and_complete_happens_once
)
test_append_is_fenced_by_seq_and_loads_in_pages = _contract.test_append_is_fenced_by_seq_and_loads_in_pages
test_external_inputs_list_in_arrival_order_until_deleted = (
    _contract.test_external_inputs_list_in_arrival_order_until_deleted
)
test_a_run_reads_the_log_and_then_the_pending_inputs = (
    _contract.test_a_run_reads_the_log_and_then_the_pending_inputs
)
test_a_release_carries_a_batch_to_the_next_lease_until_the_end = (
    _contract.test_a_release_carries_a_batch_to_the_next_lease_until_the_end
)
test_a_completion_without_a_read_answers_with_the_record_before_it = (
    _contract.test_a_completion_without_a_read_answers_with_the_record_before_it
)
test_a_lease_is_exclusive_until_it_expires_or_is_released = (
    _contract.test_a_lease_is_exclusive_until_it_expires_or_is_released
)
test_a_lease_release_records_the_armed_wake_up = _contract.test_a_lease_release_records_the_armed_wake_up
test_callbacks = _contract.test_callbacks
test_a_callback_resolved_again_keeps_its_record_and_its_completion = (
    _contract.test_a_callback_resolved_again_keeps_its_record_and_its_completion
)
test_the_lease_tells_the_version_an_upgrade_moved_it_to = (
    _contract.test_the_lease_tells_the_version_an_upgrade_moved_it_to
)
test_a_release_records_the_log_s_length_for_the_next_lease = (
    _contract.test_a_release_records_the_log_s_length_for_the_next_lease
)
test_a_release_that_knows_the_log_s_length_records_it_until_the_end = (
    _contract.test_a_release_that_knows_the_log_s_length_records_it_until_the_end
)
test_batches_keep_their_expiry_until_the_log_is_kept_or_expired = (
    _contract.test_batches_keep_their_expiry_until_the_log_is_kept_or_expired
)
test_a_callback_completes_once_and_can_be_reopened = (
    _contract.test_a_callback_completes_once_and_can_be_reopened
)
test_of_completions_racing_for_a_callback_exactly_one_wins = (
    _contract.test_of_completions_racing_for_a_callback_exactly_one_wins
)
test_list_by_workflow_is_newest_first_and_paged = _contract.test_list_by_workflow_is_newest_first_and_paged
test_pinning_is_conditional_on_the_current_version_and_on_running = (
    _contract.test_pinning_is_conditional_on_the_current_version_and_on_running
)
test_pinned_listings_count_only_running_executions_and_an_end_keeps_the_version = (
    _contract.test_pinned_listings_count_only_running_executions_and_an_end_keeps_the_version
)
test_an_execution_created_pinned_is_listed_under_its_version = (
    _contract.test_an_execution_created_pinned_is_listed_under_its_version
)
test_executions_are_listed_by_tag_newest_first_within_their_domain_and_paged = (
    _contract.test_executions_are_listed_by_tag_newest_first_within_their_domain_and_paged
)
test_a_tag_listing_filters_by_status_and_the_first_create_keeps_its_tags = (
    _contract.test_a_tag_listing_filters_by_status_and_the_first_create_keeps_its_tags
)
test_a_schedule_pointer_moves_only_from_the_value_read = (
    _contract.test_a_schedule_pointer_moves_only_from_the_value_read
)
test_a_schedule_pointer_is_no_execution = _contract.test_a_schedule_pointer_is_no_execution
test_of_claims_racing_from_the_same_pointer_exactly_one_wins = (
    _contract.test_of_claims_racing_from_the_same_pointer_exactly_one_wins
)
test_a_schedule_pointer_refuses_keys_that_are_not_key_parts = (
    _contract.test_a_schedule_pointer_refuses_keys_that_are_not_key_parts
)

test_holders_never_exceed_the_limit_under_racing_threads = (
    _contract.test_holders_never_exceed_the_limit_under_racing_threads
)
test_a_holder_holds_idempotently_and_keeps_its_lease = (
    _contract.test_a_holder_holds_idempotently_and_keeps_its_lease
)
test_hold_refuses_while_the_queue_is_not_empty = _contract.test_hold_refuses_while_the_queue_is_not_empty
test_tickets_are_issued_in_order_and_a_skipped_tickets_late_put_fails = (
    _contract.test_tickets_are_issued_in_order_and_a_skipped_tickets_late_put_fails
)
test_the_queue_is_served_in_order_and_only_into_free_slots = (
    _contract.test_the_queue_is_served_in_order_and_only_into_free_slots
)
test_a_slot_is_released_and_renewed_only_from_the_expiry_read = (
    _contract.test_a_slot_is_released_and_renewed_only_from_the_expiry_read
)
test_sweeps_are_set_cleared_and_queried_by_due_time_per_shard = (
    _contract.test_sweeps_are_set_cleared_and_queried_by_due_time_per_shard
)
test_a_rate_key_is_replaced_only_from_the_version_read = (
    _contract.test_a_rate_key_is_replaced_only_from_the_version_read
)
test_of_rate_writers_racing_from_one_version_exactly_one_wins = (
    _contract.test_of_rate_writers_racing_from_one_version_exactly_one_wins
)
test_a_reserved_start_keeps_the_first_time = _contract.test_a_reserved_start_keeps_the_first_time
test_peeking_at_tickets_skips_skipped_and_missing_ones = (
    _contract.test_peeking_at_tickets_skips_skipped_and_missing_ones
)
test_an_executions_flow_limits_round_trip = _contract.test_an_executions_flow_limits_round_trip


@pytest.fixture
def execution_store(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[DynamoDbExecutionStore]:
    # DynamoDB applies a conditional write atomically; moto in-process checks and writes in two steps, so
    # threads racing on one item could both pass the check. One request at a time, as DynamoDB serialises
    # writes to an item: the racing contract tests then prove the conditions, not moto's locking.
    serial = threading.Lock()
    call_action = DynamoHandler.call_action

    def one_at_a_time(handler: DynamoHandler) -> Any:
        with serial:
            return call_action(handler)

    monkeypatch.setattr(DynamoHandler, "call_action", one_at_a_time)
    with mock_aws():
        config = create_deployment()
        clients = AwsClients(region=REGION)
        yield DynamoDbExecutionStore(
            clients.dynamodb,
            config.executions_table,
            config.operations_table,
            config.coordination_table,
            config.subject_index_name,
            payloads=S3PayloadStore(clients.s3, config.payload_bucket),
        )


@pytest.mark.parametrize("execution_id", ["default#wf#s/a", "d#orders#o-1/x", "x#y#z/" + "q" * 100])
def test_due_shards_agree_with_the_memory_store(execution_id: str) -> None:
    assert dynamodb_due_shard(execution_id) == memory_due_shard(execution_id)
