"""The store ports' contracts (stepwell.ports), one module per concern, each test run on both stores."""
