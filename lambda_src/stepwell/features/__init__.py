"""Features built on the core: workflows defined as data (definitions), schedules, callback URLs, and the
reconciler's sweeps."""
