// chinvex ui: the little script the pages need (no build step, no framework). Everything works
// without it except the live ingest progress; the Content-Security-Policy allows no inline script.
"use strict";

(function () {
  // The context switcher in the header opens the same page for the chosen context.
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });

  // Search: the explain toggle shows or hides the score tables without searching again (the
  // page always has them), and keeps the choice in the address for reloads and links.
  var toggle = document.getElementById("explain-toggle");
  var results = document.getElementById("results");
  if (toggle && results) {
    toggle.addEventListener("change", function () {
      results.classList.toggle("explained", toggle.checked);
      var address = new URL(window.location.href);
      if (toggle.checked) { address.searchParams.set("explain", "1"); } else { address.searchParams.delete("explain"); }
      window.history.replaceState(null, "", address);
    });
  }

  // Ingest: poll the run's status endpoint and move the bar; reload the page when it ends so the
  // history table shows the new run.
  var job = document.getElementById("job");
  if (job && (job.dataset.state === "starting" || job.dataset.state === "running")) {
    var bar = document.getElementById("job-progress");
    var status = document.getElementById("job-status");
    var poll = function () {
      fetch("/api/ingest/" + encodeURIComponent(job.dataset.job), { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (response) {
          if (!response.ok) { throw new Error("status " + response.status); }
          return response.json();
        })
        .then(function (data) {
          bar.max = data.total || 1;
          bar.value = data.done;
          if (data.state === "done" || data.state === "failed") {
            // The server renders the finished run and the new history row.
            window.location.reload();
            return;
          }
          status.textContent = data.state + ": " + data.done + " of " + data.total + " sources, " +
            data.embedded + " chunks embedded";
          window.setTimeout(poll, 250);
        })
        .catch(function (error) {
          status.textContent = "lost contact with the server (" + error.message + "); reload the page";
        });
    };
    poll();
  }
})();
