// Shared by the parallel and map twins: the branches the Python handlers use and their projection of a
// BatchResult (Python's completion_reason.value, status.value and counts are the same words and numbers).
export const ok = async () => "ok";
export const fail = async () => {
  throw new Error("branch failed");
};

export const projection = (batch) => ({
  completionReason: batch.completionReason,
  status: batch.status,
  successCount: batch.successCount,
  failureCount: batch.failureCount,
  totalCount: batch.totalCount,
});

export const pick = (summary, keys) => Object.fromEntries(keys.map((key) => [key, summary[key]]));
