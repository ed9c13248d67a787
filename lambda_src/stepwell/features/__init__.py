"""Features built on the core: workflows defined as data (definitions), schedules, callback URLs, AWS's
durable execution API over HTTP (lambda_api), and the reconciler's sweeps."""
