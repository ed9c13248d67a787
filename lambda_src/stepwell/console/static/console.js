// The console's only script (served locally; the Content-Security-Policy allows nothing else).
"use strict";

// Forms that change something ask first.
document.addEventListener("submit", (event) => {
  const question = event.target.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

// The page of an execution that has not ended, or is being deleted, reloads when its status changes (a
// callback answered, a stop, pause or resume elsewhere, a pause settled) or when it is gone (deleted).
document.addEventListener("DOMContentLoaded", () => {
  const summary = document.getElementById("summary");
  if (!summary || !summary.dataset.poll) {
    return;
  }
  const poll = async () => {
    try {
      const response = await fetch(summary.dataset.poll, { headers: { Accept: "application/json" } });
      if (response.status === 404) {
        window.location.reload();
        return;
      }
      if (response.ok) {
        const body = await response.json();
        if (body.Execution && body.Execution.Status !== summary.dataset.status) {
          window.location.reload();
          return;
        }
      }
    } catch (error) {
      // The console may have stopped; keep the page as it is and try again.
    }
    window.setTimeout(poll, 2000);
  };
  window.setTimeout(poll, 2000);
});
