"""AWS adapters: the ports (stepwell.ports) implemented on DynamoDB, SQS, S3, EventBridge, Scheduler and
Lambda,
and the boto3 clients they share (clients.py)."""
