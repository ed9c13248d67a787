// The console's only script (served locally; the Content-Security-Policy allows nothing else).
"use strict";

// Forms that change something ask first.
document.addEventListener("submit", (event) => {
  const question = event.target.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

// A running execution's page reloads when its status changes (a callback answered, a stop elsewhere).
document.addEventListener("DOMContentLoaded", () => {
  const summary = document.getElementById("summary");
  if (!summary || summary.dataset.status !== "RUNNING") {
    return;
  }
  const poll = async () => {
    try {
      const response = await fetch(summary.dataset.poll, { headers: { Accept: "application/json" } });
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
