"""`stepwell console`: a local web page over a deployment (the `console` extra; never in the Lambda zip).

It reads and acts on the deployment with the operator's own credentials through `client_config`:
executions by status, workflow, domain and subject; an execution's timeline, input, result and error;
buttons to answer a callback, stop an execution and redrive the dead-letter queue; definitions as graphs
with a subject's contexts. See docs/console.md. Flask is imported by stepwell.console.app only, so the
timeline and graph helpers here work without the extra.
"""
