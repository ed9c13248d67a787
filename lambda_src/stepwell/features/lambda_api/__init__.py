"""Lambda's durable execution API, served by Stepwell: the REST-JSON wire format of botocore's `lambda`
service model (paths under /2015-03-31/functions/.../invocations and /2025-12-01/...), so that
`boto3.client("lambda", endpoint_url=URL)`, `aws lambda ... --endpoint-url URL` and any AWS SDK client work
against a deployment. The module serves it from a Lambda function URL with AWS_IAM auth
(stepwell.wiring.api_function.handler); docs/reference/lambda-api.md says what is served.

One job per module: routes (which operation), access (who may), tenants (who reaches only some tenants),
wire (the HTTP request and answer), arns (execution ARNs and function names), errors (the modeled errors),
settings (the function's environment), invoke, executions, listing, callbacks and lifecycle (the
operations), handler (all of it for one event).
"""
