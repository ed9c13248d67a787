"""Coordination on DynamoDB (stepwell.ports.coordination): per execution one record "lease#<id>" (its lease,
the wake-up its last run armed, the log's next seq and length, the batch a run carried instead of the log)
and per callback a record "cb#<callback id>" (its execution and operation, its completion and result)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any

from stepwell.aws.dynamodb_store.items import _CAPACITY, Item, _flag, _n, _num, _s, _str
from stepwell.aws.dynamodb_store.tables import DynamoDbTables
from stepwell.core.batch_codec import deflate_body, inflate_body
from stepwell.errors import InvalidArgument
from stepwell.model import Batch, CallbackRef, ExternalInput, HandOff, InputKind, KeepWake, Lease


def _callback_ref(callback_id: str, item: Item) -> CallbackRef:
    return CallbackRef(
        callback_id=callback_id,
        execution_id=_str(item, "eid") or "",
        operation_id=_str(item, "op") or "",
        completed="done" in item,
        version=_str(item, "v"),
    )


def _carried_batch(item: Item) -> Batch | None:
    """The batch a coordination record carries (HandOff.carried), if any."""
    packed = item.get("pz")
    body = inflate_body(bytes(packed["B"])) if packed is not None else _str(item, "pb")
    seq = _num(item, "ps")
    if body is None or seq is None:
        return None
    return Batch(seq=int(seq), body=body, created_at=_num(item, "pt") or 0.0)


class DynamoDbCoordination(DynamoDbTables):
    """Coordination on the coordination table."""

    def acquire_lease(self, execution_id: str, owner: str, now: float, duration: float) -> Lease | None:
        if duration <= 0:
            raise InvalidArgument(f"lease duration must be positive seconds, got {duration}")
        expires_at = now + duration
        try:
            response = self._db.update_item(
                TableName=self.coordination_table,
                Key={"key": _s("lease#" + execution_id)},
                UpdateExpression="SET o = :owner, #x = :expires, eid = :eid",
                # A record an earlier engine wrote keeps its expiry in dueAt (and has no #x).
                ConditionExpression="attribute_not_exists(o) OR #x < :now OR o = :owner"
                " OR (attribute_not_exists(#x) AND dueAt < :now)",
                ExpressionAttributeNames={"#x": "exp"},
                ExpressionAttributeValues={
                    ":owner": _s(owner),
                    ":expires": _n(expires_at),
                    ":eid": _s(execution_id),
                    ":now": _n(now),
                },
                ReturnValues="ALL_OLD",
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return None
        before = response.get("Attributes") or {}
        held_by = _str(before, "o")
        hand_off = HandOff(
            wake_at=_num(before, "w"),
            carried=_carried_batch(before),
            log_next=int(next_seq) if (next_seq := _num(before, "n")) is not None else None,
            log_length=int(length) if (length := _num(before, "ln")) is not None else None,
        )
        return Lease(
            execution_id=execution_id,
            owner=owner,
            expires_at=expires_at,
            hand_off=hand_off,
            taken_over=held_by is not None and held_by != owner,
            moved_to=_str(before, "mv"),
            never_held=not before,
        )

    def resume_lease(
        self, execution_id: str, owner: str, *, successor: str, now: float, duration: float
    ) -> Lease | None:
        if duration <= 0:
            raise InvalidArgument(f"lease duration must be positive seconds, got {duration}")
        try:
            response = self._db.update_item(
                TableName=self.coordination_table,
                Key={"key": _s("lease#" + execution_id)},
                UpdateExpression="SET o = :successor, #x = :expires",
                ConditionExpression="o = :owner AND #x > :now",
                ExpressionAttributeNames={"#x": "exp"},
                ExpressionAttributeValues={
                    ":owner": _s(owner),
                    ":successor": _s(successor),
                    ":expires": _n(now + duration),
                    ":now": _n(now),
                },
                ReturnValues="ALL_NEW",
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return None
        item = response.get("Attributes") or {}
        return Lease(
            execution_id=execution_id,
            owner=successor,
            expires_at=now + duration,
            hand_off=HandOff(
                wake_at=_num(item, "w"),
                carried=_carried_batch(item),
                log_next=int(next_seq) if (next_seq := _num(item, "n")) is not None else None,
                log_length=int(length) if (length := _num(item, "ln")) is not None else None,
            ),
            moved_to=_str(item, "mv"),
        )

    def lease_holder(self, execution_id: str, now: float) -> str | None:
        response = self._db.get_item(
            TableName=self.coordination_table,
            Key={"key": _s("lease#" + execution_id)},
            ProjectionExpression="o, #x",
            ExpressionAttributeNames={"#x": "exp"},
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        item = response.get("Item") or {}
        expires_at = _num(item, "exp")
        return _str(item, "o") if expires_at is not None and expires_at > now else None

    def release_lease(self, execution_id: str, owner: str, hand_off: HandOff) -> None:
        wake, ended_at, carried = hand_off.wake_at, hand_off.ended_at, hand_off.carried
        log_next, log_length = hand_off.log_next, hand_off.log_length
        key = {"key": _s("lease#" + execution_id)}
        # A failed condition means another owner took the expired lease meanwhile: it is theirs now.
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            # dueShard/dueAt: the index entry of a record an earlier engine wrote goes with it.
            update = "REMOVE o, #x, dueShard, dueAt"
            values: Item = {":owner": _s(owner)}
            names = {"#x": "exp"}
            assignments: list[str] = []
            ended = ended_at is not None
            if ended_at is not None:
                # The record stays for the retention period (the same one write unit as deleting it), with
                # the end it carries if any: a late message for the execution then never finds its lease
                # never held (Lease.never_held) and always reads the log.
                assignments.append("#ttl = :ttl")
                names["#ttl"] = "ttl"
                values[":ttl"] = _n(int(ended_at) + self.retention_seconds)
                if carried is None:
                    update += ", pb, pz, ps, pt"
                update += ", mv"
            if ended or wake is None:
                update += ", w"
            elif not isinstance(wake, KeepWake):
                assignments.append("w = :wake")
                values[":wake"] = _n(wake)
            if log_next is None or ended:
                update += ", n"
            else:
                assignments.append("n = :next")
                values[":next"] = _n(log_next)
            if ended:
                update += ", ln"
            elif log_length is not None:
                assignments.append("ln = :length")
                values[":length"] = _n(log_length)
            if carried is not None:
                if carried.body_is_ref:
                    raise InvalidArgument("a carried batch is kept on the record: its body must be inline")
                # Deflated (pz) when that is smaller, the text (pb) otherwise; the other one goes.
                packed = deflate_body(carried.body)
                body_name, other = ("pz", "pb") if packed is not None else ("pb", "pz")
                assignments.append(f"{body_name} = :pb, ps = :ps, pt = :pt")
                update += f", {other}"
                values.update(
                    {
                        ":pb": {"B": packed} if packed is not None else _s(carried.body),
                        ":ps": _n(carried.seq),
                        ":pt": _n(carried.created_at),
                    }
                )
            if assignments:
                update = f"SET {', '.join(assignments)} {update}"
            self._db.update_item(
                TableName=self.coordination_table,
                Key=key,
                UpdateExpression=update,
                ConditionExpression="o = :owner",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnConsumedCapacity=_CAPACITY,
            )

    def get_carried_batch(self, execution_id: str) -> Batch | None:
        response = self._db.get_item(
            TableName=self.coordination_table,
            Key={"key": _s("lease#" + execution_id)},
            ProjectionExpression="pb, pz, ps, pt",
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        return _carried_batch(response.get("Item") or {})

    def put_callback(self, ref: CallbackRef) -> bool:
        item: Item = {
            "key": _s("cb#" + ref.callback_id),
            "eid": _s(ref.execution_id),
            "op": _s(ref.operation_id),
        }
        if ref.version is not None:
            item["v"] = _s(ref.version)
        try:
            self._db.put_item(
                TableName=self.coordination_table,
                Item=item,
                ConditionExpression="attribute_not_exists(#k)",
                ExpressionAttributeNames={"#k": "key"},
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False  # an earlier run of the operation resolved the same (derived) id: it stays
        return True

    def get_callback(self, callback_id: str) -> CallbackRef | None:
        if not callback_id:
            return None
        response = self._db.get_item(
            TableName=self.coordination_table,
            Key={"key": _s("cb#" + callback_id)},
            # The SDK hands the id to user code right after it is written: a sender may ask at once.
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        item = response.get("Item")
        return None if item is None else _callback_ref(callback_id, item)

    def complete_callback(
        self, callback_id: str, now: float, result: ExternalInput | None = None, execution_id: str = ""
    ) -> bool:
        try:
            self._db.update_item(
                **self._callback_completion(callback_id, now, result, execution_id),
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def complete_callback_once(
        self, callback_id: str, now: float, result: ExternalInput
    ) -> CallbackRef | None:
        if not callback_id:
            return None
        try:
            response = self._db.update_item(
                **self._callback_completion(callback_id, now, result, ""),
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException as error:
            current: Item | None = error.response.get("Item")  # type: ignore[assignment]
            return None if not current else _callback_ref(callback_id, current)
        return _callback_ref(callback_id, response.get("Attributes") or {})

    def _callback_completion(
        self, callback_id: str, now: float, result: ExternalInput | None, execution_id: str
    ) -> dict[str, Any]:
        """The conditional UpdateItem that completes a callback once, keeping `result` on its record."""
        # Once completed (or timed out) the record only refuses repeats and holds the result until the
        # worker absorbs it: it expires with the retention period, as ended executions do.
        names = {"#k": "key", "#ttl": "ttl"}
        values: Item = {":now": _n(now), ":ttl": _n(int(now) + self.retention_seconds)}
        update = "SET done = :now, #ttl = :ttl"
        if result is not None:
            fields: Item = {"k": _s(result.kind.value)}
            self._put_text(
                fields, "p", result.payload, is_ref=result.payload_is_ref, execution_id=execution_id
            )
            if result.error is not None:
                self._put_text(
                    fields, "er", json.dumps(result.error), is_ref=False, execution_id=execution_id
                )
            for name, value in fields.items():
                names[f"#r_{name}"] = name
                values[f":r_{name}"] = value
                update += f", #r_{name} = :r_{name}"
        return {
            "TableName": self.coordination_table,
            "Key": {"key": _s("cb#" + callback_id)},
            "UpdateExpression": update,
            "ConditionExpression": "attribute_exists(#k) AND attribute_not_exists(done)",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }

    def reopen_callback(self, callback_id: str) -> None:
        self._db.update_item(
            TableName=self.coordination_table,
            Key={"key": _s("cb#" + callback_id)},
            UpdateExpression="REMOVE done, #ttl, k, p, pR, er, erR",
            ConditionExpression="attribute_exists(#k)",
            ExpressionAttributeNames={"#k": "key", "#ttl": "ttl"},
            ReturnConsumedCapacity=_CAPACITY,
        )

    def get_callback_results(self, callback_ids: Sequence[str]) -> list[ExternalInput]:
        keys = [{"key": _s("cb#" + callback_id)} for callback_id in callback_ids if callback_id]
        results = []
        for item in self._batch_get(self.coordination_table, keys, lambda item: _str(item, "key")):
            kind = _str(item, "k")
            if kind is None:  # open, or timed out: no result
                continue
            error_text = self._text(item, "er")
            results.append(
                ExternalInput(
                    input_id=_str(item, "key") or "",
                    kind=InputKind(kind),
                    created_at=_num(item, "done") or 0.0,
                    operation_id=_str(item, "op"),
                    payload=_str(item, "p"),
                    payload_is_ref=_flag(item, "pR"),
                    error=json.loads(error_text) if error_text is not None else None,
                    on_callback_record=True,
                )
            )
        return results

    def delete_coordination(self, execution_id: str, callback_ids: Sequence[str]) -> int:
        keys = [{"key": _s("lease#" + execution_id)}]
        keys += [
            {"key": _s("cb#" + callback_id)} for callback_id in dict.fromkeys(callback_ids) if callback_id
        ]
        # Counted by a read of the keys (a BatchWriteItem delete tells nothing of what was there); only
        # the callbacks of this execution go.
        found = self._batch_get(self.coordination_table, keys, lambda item: _str(item, "key"))
        mine = [
            {"key": item["key"]}
            for item in found
            if _str(item, "key") == keys[0]["key"]["S"] or _str(item, "eid") == execution_id
        ]
        self._batch_delete(self.coordination_table, mine)
        return len(mine)
