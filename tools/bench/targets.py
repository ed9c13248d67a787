"""The targets the report measures against (computed, not asserted: nothing here fails the build)."""

TARGET_WRITE_UNITS_PER_STEP = 1.5
TARGET_READ_UNITS_PER_STEP = 1.0
TARGET_USD_PER_MILLION = 1.50
# Issue 12's targets: a resume all-in, an execution's fixed part, the mixed workflow.
TARGET_RESUME_WRITE_UNITS = 4
TARGET_RESUME_SQS_REQUESTS = 2
TARGET_FIXED_WRITE_UNITS = 6
TARGET_MIXED_USD_PER_MILLION = 1.60
TARGET_DEFINITIONS_START_REQUESTS = 12
TARGET_DEFINITIONS_RESUME_REQUESTS = 10
TARGET_LONG_LIVED_READ_RATIO = 1.5
# Issue 41: the worker does not pay for a remote function's run. The worker's billed time per remote run
# grows by at most this share of the CPU time the function's step burns (noise: the machine is shared).
TARGET_REMOTE_WORKER_SHARE_OF_FUNCTION_TIME = 0.1
