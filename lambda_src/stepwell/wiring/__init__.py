"""Wiring: an engine built from the deployment's settings (build.py) and the Lambda handlers the module
configures (entry.py for the worker, callback_function.py for callback URLs, api_function.py for the durable
execution API)."""
