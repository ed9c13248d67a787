"""stepwell.testing.moto_iam's authorization questions for SSM, whose requests moto authorizes against "*":
a role allowed one parameter reads that parameter and no other (the module grants the worker and the API
function ssm:GetParameter on its durable-functions parameter only)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from stepwell.testing.moto_iam import decide, request_checks

ACCOUNT = "123456789012"
PARAMETER_ARN = f"arn:aws:ssm:eu-west-1:{ACCOUNT}:parameter/stepwell/dev/durable-functions"
POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "ssm:GetParameter", "Resource": PARAMETER_ARN}],
}


def _allowed(body: dict[str, object], action: str = "GetParameter") -> bool:
    handler = SimpleNamespace(body=json.dumps(body), raw_body=None)
    checks = request_checks(handler, "ssm", action, "*", region="eu-west-1", account=ACCOUNT)
    return bool(checks) and all(decide([POLICY], check) for check in checks)


def test_a_role_granted_one_parameter_reads_it_and_no_other() -> None:
    assert _allowed({"Name": "/stepwell/dev/durable-functions", "WithDecryption": True})
    assert not _allowed({"Name": "/stepwell/prod/durable-functions"})
    assert not _allowed({"Names": ["/stepwell/dev/durable-functions", "/other"]}, "GetParameters")
    assert not _allowed({"Name": "/stepwell/dev/durable-functions"}, "PutParameter")
    assert not _allowed({})  # no name: asked of "*", which one parameter's grant does not cover
