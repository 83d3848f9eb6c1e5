// The page contract of the expense approvals app: getTasks, evaluateTask, reset and
// getState. Each task's check reads the app's state (window.ExpenseApp) and says what
// it found; "untouched" means as data.js has it (no edit, no flag, same decision).
(function () {
  "use strict";
  const app = window.ExpenseApp;
  const result = (success, message) => ({ success, message });
  const rep = (id) => app.reports().find((r) => r.id === id);
  const line = (id, i) => rep(id).lines[i];
  const cents = (x) => (typeof x === "number" && Number.isFinite(x) ? Math.round(x * 100) : null);
  const dollars = (c) => (c / 100).toFixed(2);
  const sameLine = (l, s) => l.merchant === s.merchant && l.category === s.category && l.amount === s.amount && !l.flagged;
  // A report as it started, except the line indexes in `lines` (checked by the task).
  function untouched(id, lines = []) {
    const r = rep(id), s = app.start(id);
    return r.status === s.status && r.comment === s.comment
      && r.lines.every((l, i) => lines.includes(i) || sameLine(l, s.lines[i]));
  }
  const othersUntouched = (except) => app.reports().every((r) => except.includes(r.id) || untouched(r.id));
  const noExports = () => app.exports().length === 0;
  const lastExport = () => app.exports()[app.exports().length - 1] || null;
  // The last export has this format and exactly these reports (in any order).
  function exported(format, ids) {
    const e = lastExport();
    return !!e && e.format === format && e.reports.length === ids.length && ids.every((id) => e.reports.includes(id));
  }
  // Only the lines at `indexes` are flagged in report `id`, each with a reason.
  const flaggedExactly = (id, indexes) => rep(id).lines.every((l, i) =>
    (indexes.includes(i) ? l.flagged && l.reason.trim().length > 0 : !l.flagged));
  // Lines other than `changed` are as they started, whatever their flags.
  const linesKept = (id, changed = []) => rep(id).lines.every((l, i) => {
    const s = app.start(id).lines[i];
    return changed.includes(i) || (l.merchant === s.merchant && l.category === s.category && l.amount === s.amount);
  });
  function says(id) {
    const r = rep(id);
    const lines = r.lines.map((l, i) => `${i + 1} ${l.merchant} [${l.category || "-"}] ${dollars(l.amount)}${l.flagged ? ` flagged (${l.reason})` : ""}`);
    return `${id} ${r.status}${r.comment ? ` "${r.comment}"` : ""}: ${lines.join("; ")}`;
  }
  const sayExport = () => { const e = lastExport(); return e ? `last export ${e.file} [${e.reports.join(", ")}]` : "no export"; };
  const answer = (returned, expected) => result(cents(returned) === expected,
    `returned ${JSON.stringify(returned)}, expected ${dollars(expected)}`);
  const mentions = (text, word) => text.toLowerCase().includes(word);

  const TASKS = [
    {
      id: "fix-uber-amount",
      description: "REP-1043's Uber ride is $45.00, not $4,500.00: correct the amount.",
      check: () => result(line("REP-1043", 3).amount === 4500 && untouched("REP-1043", [3]) && line("REP-1043", 3).category === "Ground transport"
        && !line("REP-1043", 3).flagged && othersUntouched(["REP-1043"]) && noExports(), says("REP-1043")),
    },
    {
      id: "uber-amount-54",
      description: "REP-1043's Uber ride is corrected to $54.00.",
      check: () => result(line("REP-1043", 3).amount === 5400 && untouched("REP-1043", [3]) && line("REP-1043", 3).category === "Ground transport"
        && !line("REP-1043", 3).flagged && othersUntouched(["REP-1043"]) && noExports(), says("REP-1043")),
    },
    {
      id: "categorize-jetbrains",
      description: "REP-1042's JetBrains line is filed under Software.",
      check: () => result(line("REP-1042", 4).category === "Software" && line("REP-1042", 4).amount === 18900 && !line("REP-1042", 4).flagged
        && untouched("REP-1042", [4]) && othersUntouched(["REP-1042"]) && noExports(), says("REP-1042")),
    },
    {
      id: "berlin-total",
      description: "What is the total claimed on Tomás Ortega's Berlin report (REP-1042), in dollars?",
      answer_schema: { type: "number" },
      check: (returned) => {
        const a = answer(returned, app.claimed(rep("REP-1042")));
        return result(a.success && othersUntouched([]) && noExports(), a.message);
      },
    },
    {
      id: "approve-lisbon",
      description: "Approve Aiko Tanaka's Lisbon report (REP-1045) as submitted.",
      check: () => result(rep("REP-1045").status === "approved" && linesKept("REP-1045") && flaggedExactly("REP-1045", [])
        && othersUntouched(["REP-1045"]) && noExports(), says("REP-1045")),
    },
    {
      id: "reject-dinner-attendees",
      description: "Reject Samuel Okafor's report (REP-1044) with a comment asking for the attendee list.",
      check: () => {
        const r = rep("REP-1044");
        return result(r.status === "rejected" && mentions(r.comment, "attendee") && linesKept("REP-1044") && flaggedExactly("REP-1044", [])
          && othersUntouched(["REP-1044"]) && noExports(), says("REP-1044"));
      },
    },
    {
      id: "pending-claims-total",
      description: "What do the pending reports claim in total, in dollars?",
      answer_schema: { type: "number" },
      check: (returned) => {
        const total = app.reports().filter((r) => r.status === "pending").reduce((s, r) => s + app.claimed(r), 0);
        const a = answer(returned, total);
        return result(a.success && othersUntouched([]) && noExports(), a.message);
      },
    },
    {
      id: "clean-pending-report",
      description: "Which pending report has no line breaking the policy? Return its number (like REP-1000).",
      answer_schema: { type: "string", pattern: "^\\s*[Rr][Ee][Pp]-\\d{4}\\s*$" },
      check: (returned) => {
        const clean = app.reports().filter((r) => r.status === "pending" && r.lines.every((l) => app.violations(l).length === 0)).map((r) => r.id);
        const said = typeof returned === "string" ? returned.trim().toUpperCase() : null;
        return result(clean.length === 1 && said === clean[0] && othersUntouched([]) && noExports(),
          `returned ${JSON.stringify(returned)}, pending reports within the policy: ${clean.join(", ") || "none"}`);
      },
    },
    {
      id: "flag-lyft-receipt",
      description: "REP-1044's Lyft ride is flagged for its missing receipt; the report stays pending.",
      check: () => {
        const l = line("REP-1044", 1);
        return result(l.flagged && mentions(l.reason, "receipt") && flaggedExactly("REP-1044", [1]) && untouched("REP-1044", [1])
          && linesKept("REP-1044") && othersUntouched(["REP-1044"]) && noExports(), says("REP-1044"));
      },
    },
    {
      id: "marco-not-duplicate",
      description: "REP-1040 reopened and approved, with a comment saying it is not a duplicate.",
      check: () => {
        const r = rep("REP-1040");
        return result(r.status === "approved" && mentions(r.comment, "duplicate") && linesKept("REP-1040") && flaggedExactly("REP-1040", [])
          && othersUntouched(["REP-1040"]) && noExports(), says("REP-1040"));
      },
    },
    {
      id: "lyon-reviewed",
      description: "REP-1041 approved, with only its taxi line (no receipt) flagged.",
      check: () => result(rep("REP-1041").status === "approved" && linesKept("REP-1041") && flaggedExactly("REP-1041", [3])
        && othersUntouched(["REP-1041"]) && noExports(), says("REP-1041")),
    },
    {
      id: "lisbon-approved-exported",
      description: "REP-1045 approved, then a CSV of the approved reports exported.",
      check: () => result(rep("REP-1045").status === "approved" && linesKept("REP-1045") && flaggedExactly("REP-1045", [])
        && othersUntouched(["REP-1045"]) && exported("csv", ["REP-1039", "REP-1045"]), `${says("REP-1045")}; ${sayExport()}`),
    },
    {
      id: "berlin-reimbursed",
      description: "REP-1042 approved with JetBrains under Software and the hotel night (over the limit) flagged; return what is reimbursed.",
      answer_schema: { type: "number" },
      check: (returned) => {
        const r = rep("REP-1042");
        const a = answer(returned, app.reimbursable(r));
        const ok = r.status === "approved" && line("REP-1042", 4).category === "Software" && linesKept("REP-1042", [4])
          && flaggedExactly("REP-1042", [2]) && othersUntouched(["REP-1042"]) && noExports();
        return result(ok && a.success, `${says("REP-1042")}; ${a.message}`);
      },
    },
    {
      id: "count-violations",
      description: "How many lines of the pending reports break the policy (over their category's limit, or no receipt over $25)?",
      answer_schema: { type: "integer" },
      check: (returned) => {
        const n = app.reports().filter((r) => r.status === "pending")
          .reduce((s, r) => s + r.lines.filter((l) => app.violations(l).length > 0).length, 0);
        return result(returned === n && othersUntouched([]) && noExports(), `returned ${JSON.stringify(returned)}, lines breaking the policy: ${n}`);
      },
    },
    {
      id: "berlin-hotel-flagged",
      description: "REP-1042 approved with JetBrains under Software and only the hotel night flagged.",
      check: () => result(rep("REP-1042").status === "approved" && line("REP-1042", 4).category === "Software" && linesKept("REP-1042", [4])
        && flaggedExactly("REP-1042", [2]) && othersUntouched(["REP-1042"]) && noExports(), says("REP-1042")),
    },
    {
      id: "grace-approved",
      description: "REP-1043 approved: Uber corrected to $45.00, the ring light under Office supplies, nothing flagged.",
      check: () => result(rep("REP-1043").status === "approved" && line("REP-1043", 3).amount === 4500
        && line("REP-1043", 2).category === "Office supplies" && linesKept("REP-1043", [2, 3]) && line("REP-1043", 3).category === "Ground transport"
        && flaggedExactly("REP-1043", []) && othersUntouched(["REP-1043"]) && noExports(), says("REP-1043")),
    },
    {
      id: "hannah-pdf",
      description: "The last export is a PDF of Hannah Becker's report (REP-1039) alone; nothing changed.",
      check: () => result(exported("pdf", ["REP-1039"]) && othersUntouched([]), sayExport()),
    },
    {
      id: "samuel-client-dinner",
      description: "REP-1044 was rejected with a comment, then reopened: the dinner is Client entertainment, the Lyft ride flagged, approved; a PDF of REP-1044 alone exported.",
      check: () => {
        const r = rep("REP-1044");
        const rejected = r.history.some((h) => h.action === "rejected" && h.comment.trim());
        const ok = rejected && r.status === "approved" && line("REP-1044", 0).category === "Client entertainment"
          && linesKept("REP-1044", [0]) && line("REP-1044", 0).amount === 26400 && flaggedExactly("REP-1044", [1])
          && othersUntouched(["REP-1044"]) && exported("pdf", ["REP-1044"]);
        return result(ok, `${says("REP-1044")}; rejected before: ${rejected}; ${sayExport()}`);
      },
    },
    {
      id: "receipt-audit",
      description: "Lines over $25 without a receipt flagged (REP-1041 taxi, REP-1044 Lyft); those two reports rejected asking for the receipt; a CSV of all decided reports exported.",
      check: () => {
        const rejected = (id) => rep(id).status === "rejected" && mentions(rep(id).comment, "receipt") && linesKept(id);
        const ok = flaggedExactly("REP-1041", [3]) && flaggedExactly("REP-1044", [1]) && rejected("REP-1041") && rejected("REP-1044")
          && othersUntouched(["REP-1041", "REP-1044"]) && exported("csv", ["REP-1039", "REP-1040", "REP-1041", "REP-1044"]);
        return result(ok, `${says("REP-1041")}; ${says("REP-1044")}; ${sayExport()}`);
      },
    },
    {
      id: "month-end",
      description: "REP-1041 (taxi flagged) and REP-1042 (JetBrains under Software, hotel flagged) approved; a CSV of the approved reports exported.",
      check: () => {
        const ok = rep("REP-1041").status === "approved" && linesKept("REP-1041") && flaggedExactly("REP-1041", [3])
          && rep("REP-1042").status === "approved" && line("REP-1042", 4).category === "Software" && linesKept("REP-1042", [4])
          && flaggedExactly("REP-1042", [2]) && othersUntouched(["REP-1041", "REP-1042"])
          && exported("csv", ["REP-1039", "REP-1041", "REP-1042"]);
        return result(ok, `${says("REP-1041")}; ${says("REP-1042")}; ${sayExport()}`);
      },
    },
    {
      id: "grace-cleanup",
      description: "REP-1043: Uber $45.00, ring light under Office supplies, Canva renamed 'Canva Pro', approved; a PDF of REP-1043 alone exported.",
      check: () => {
        const ok = rep("REP-1043").status === "approved" && line("REP-1043", 3).amount === 4500
          && line("REP-1043", 2).category === "Office supplies" && line("REP-1043", 1).merchant === "Canva Pro"
          && line("REP-1043", 1).amount === 11999 && line("REP-1043", 1).category === "Software" && linesKept("REP-1043", [1, 2, 3])
          && line("REP-1043", 3).category === "Ground transport" && flaggedExactly("REP-1043", [])
          && othersUntouched(["REP-1043"]) && exported("pdf", ["REP-1043"]);
        return result(ok, `${says("REP-1043")}; ${sayExport()}`);
      },
    },
    {
      id: "quarter-close",
      description: "REP-1045 and REP-1042 (JetBrains under Software) approved as submitted; a PDF of the approved reports exported; return the total reimbursed.",
      answer_schema: { type: "number" },
      check: (returned) => {
        const approved = app.reports().filter((r) => r.status === "approved");
        const a = answer(returned, approved.reduce((s, r) => s + app.reimbursable(r), 0));
        const ok = rep("REP-1045").status === "approved" && linesKept("REP-1045") && flaggedExactly("REP-1045", [])
          && rep("REP-1042").status === "approved" && line("REP-1042", 4).category === "Software" && linesKept("REP-1042", [4])
          && flaggedExactly("REP-1042", []) && othersUntouched(["REP-1042", "REP-1045"])
          && exported("pdf", ["REP-1039", "REP-1042", "REP-1045"]);
        return result(ok && a.success, `${says("REP-1042")}; ${says("REP-1045")}; ${sayExport()}; ${a.message}`);
      },
    },
  ];

  window.getTasks = () => TASKS.map(({ id, description, answer_schema }) =>
    Object.assign({ id, description }, answer_schema ? { answer_schema } : {}));
  window.evaluateTask = (id, returned) => {
    const task = TASKS.find((t) => t.id === id);
    if (!task) return result(false, `no task ${id}`);
    return task.check(returned === undefined ? null : returned);
  };
  window.reset = () => { app.reset(); return true; };
  window.getState = () => ({
    selected: app.selected().id,
    status: Object.fromEntries(app.reports().map((r) => [r.id, r.status])),
    flagged: Object.fromEntries(app.reports().map((r) => [r.id, r.lines.filter((l) => l.flagged).map((l) => l.merchant)])),
    claimed: Object.fromEntries(app.reports().map((r) => [r.id, app.claimed(r) / 100])),
    exports: app.exports().map((e) => ({ file: e.file, reports: [...e.reports], reimbursed: e.reimbursed / 100 })),
  });

  window.reset();
})();
