"""The `stepwell.http` action reaches only what the operator allowed, within bounded time and size.

A local server on 127.0.0.1 stands in for the internet (support.Server, the `server` fixture): the tests
that must reach it allow its port in the allowlist and the loopback network explicitly, as an operator
would for a private service.
"""
