"""Event-driven workflow definitions per tenant (domain) and subject, run on the durable execution engine.

- `validation.parse_definition`: JSON definition (schema.json) -> `model.Definition`, or errors naming
  the node or edge.
- `flow_control.parse_flow_control`: a definition's `flowControl` block -> the engine's flow limits.
- `store`: definitions (versions kept), contexts and event records; memory and DynamoDB. `ids`: the ids and
  sizes the stores accept.
- `interpreter`: the built-in workflow `stepwell.definition` that runs one context.
- `router.Router.process_event`: events start and resume contexts; `extractors` read an event's domain,
  subject, name, data and id, `event_sources` say which bus sources may speak for which domains.
- `actions`: the action registry (`register_action`, `@action`) and the built-in actions.
- `mermaid.to_mermaid`: a definition as a Mermaid flowchart.
"""

from __future__ import annotations

from pathlib import Path

SCHEMA_PATH = Path(__file__).with_name("schema.json")
