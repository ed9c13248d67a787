"""Schedule pointers on DynamoDB (stepwell.ports.schedule_pointers): one item per SKIP schedule in the
executions table, keyed apart from every execution and tag entry, in no index."""

from __future__ import annotations

import contextlib
import time

from stepwell.aws.dynamodb_store.items import _CAPACITY, Item, _n, _s, _str
from stepwell.aws.dynamodb_store.tables import DynamoDbTables
from stepwell.ports.schedule_pointers import SCHEDULE_POINTER_HOLD_SECONDS, check_schedule_pointer

# The sort key of every schedule pointer item (its partition names the schedule).
_SCHEDULE_POINTER_SK = "pointer"


def schedule_pointer_key(domain: str, schedule: str) -> Item:
    """The key of a schedule's pointer item in the executions table: no execution's contextKey has '~'
    (workflow names have none) and no tag entry's has '~schedule' after the domain."""
    return {"contextKey": _s(f"{domain}#~schedule#{schedule}"), "instanceId": _s(_SCHEDULE_POINTER_SK)}


class DynamoDbSchedulePointers(DynamoDbTables):
    """SchedulePointers on the executions table."""

    def get_schedule_pointer(self, domain: str, schedule: str) -> str | None:
        check_schedule_pointer(domain, schedule)
        response = self._db.get_item(
            TableName=self.executions_table,
            Key=schedule_pointer_key(domain, schedule),
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        item = response.get("Item")
        return None if item is None else _str(item, "eid")

    def claim_schedule_pointer(
        self,
        domain: str,
        schedule: str,
        *,
        expected: str | None,
        execution_id: str,
        now: float | None = None,
    ) -> bool:
        check_schedule_pointer(domain, schedule, execution_id)
        # A deleted schedule's pointer goes on its own (the claim's write carries its ttl at no cost).
        ttl = int(time.time() if now is None else now) + SCHEDULE_POINTER_HOLD_SECONDS
        put: Item = {
            "TableName": self.executions_table,
            "Item": {**schedule_pointer_key(domain, schedule), "eid": _s(execution_id), "ttl": _n(ttl)},
            "ConditionExpression": "attribute_not_exists(contextKey)",
        }
        if expected is not None:
            put["ConditionExpression"] = "eid = :expected"
            put["ExpressionAttributeValues"] = {":expected": _s(expected)}
        try:
            self._db.put_item(**put, ReturnConsumedCapacity=_CAPACITY)
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def keep_schedule_pointer(self, domain: str, schedule: str, execution_id: str, now: float) -> None:
        check_schedule_pointer(domain, schedule, execution_id)
        # One write per skipped occurrence: conditional, so a pointer moved meanwhile is left as it is.
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self.executions_table,
                Key=schedule_pointer_key(domain, schedule),
                UpdateExpression="SET #ttl = :ttl",
                ConditionExpression="eid = :eid",
                ExpressionAttributeNames={"#ttl": "ttl"},
                ExpressionAttributeValues={
                    ":ttl": _n(int(now) + SCHEDULE_POINTER_HOLD_SECONDS),
                    ":eid": _s(execution_id),
                },
                ReturnConsumedCapacity=_CAPACITY,
            )
