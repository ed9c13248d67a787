"""The engine's core: the execution log (journal), the engine that runs a handler against it, the checkpoint
service the SDK talks to, and the worker that handles one message. It speaks only to the ports
(stepwell.ports) and never imports an AWS SDK: the adapters (stepwell.aws, stepwell.memory) plug in."""
