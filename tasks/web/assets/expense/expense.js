// The expense approvals app. State: the reports (lines with category, amount, receipt
// and flag; a status and comment per report), the selected report and line, the
// export dialog and the exports made. render() updates the page in place (elements
// are reused, so a field's commit on blur never swaps the element a click lands on)
// and puts the selection and the counts in the title, which reference solutions wait on.
(function () {
  "use strict";
  const POLICY = window.EXPENSE_POLICY;
  const LIMIT = Object.fromEntries(POLICY.limits);
  const $ = (id) => document.getElementById(id);
  let reports = [];
  let selected = 0;
  let line = 0;
  let exports = [];
  let dialog = { open: false, scope: "approved", format: "csv" };
  let message = { editor: "", decision: "" };

  const money = (cents) => "$" + (cents / 100).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  // "45", "45.5", "$1,234.50" -> cents; null when it is not an amount.
  function parseMoney(text) {
    const t = text.replace(/[$,\s]/g, "");
    if (!/^\d+(\.\d{1,2})?$/.test(t)) return null;
    return Math.round(parseFloat(t) * 100);
  }
  const claimed = (r) => r.lines.reduce((s, l) => s + l.amount, 0);
  const flaggedSum = (r) => r.lines.reduce((s, l) => s + (l.flagged ? l.amount : 0), 0);
  const reimbursable = (r) => claimed(r) - flaggedSum(r);
  // What the policy says about a line (the page shows it; flagging stays the reviewer's call).
  function violations(l) {
    const v = [];
    if (l.category && l.amount > LIMIT[l.category]) v.push(`over the ${l.category} limit by ${money(l.amount - LIMIT[l.category])}`);
    if (!l.receipt && l.amount > POLICY.receiptOver) v.push(`no receipt for a line over ${money(POLICY.receiptOver)}`);
    return v;
  }
  const report = () => reports[selected];
  const current = () => report().lines[line];
  const locked = () => report().status !== "pending";
  const count = (status) => reports.filter((r) => r.status === status).length;

  function fresh() {
    return window.EXPENSE_REPORTS.map((r) => Object.assign({}, r, {
      draft: "", history: [],
      lines: r.lines.map((l) => Object.assign({ flagged: false, reason: "" }, l)),
    }));
  }

  // ---- drawing ----------------------------------------------------------------------
  function buildStatic() {
    const list = $("reports");
    list.textContent = "";
    reports.forEach((r, i) => {
      const el = document.createElement("div");
      el.className = "report";
      el.tabIndex = 0;
      el.setAttribute("role", "option");
      el.innerHTML = '<div class="who"></div><div class="what"></div><span class="sum"></span><span class="st"></span>';
      el.addEventListener("click", () => selectReport(i));
      el.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); selectReport(i); }
        if (e.key === "ArrowDown" && i + 1 < reports.length) { e.preventDefault(); selectReport(i + 1); list.children[i + 1].focus(); }
        if (e.key === "ArrowUp" && i > 0) { e.preventDefault(); selectReport(i - 1); list.children[i - 1].focus(); }
      });
      list.appendChild(el);
    });
    const limits = $("limits");
    limits.textContent = "";
    for (const [cat, cents] of POLICY.limits) {
      const tr = limits.insertRow();
      tr.insertCell().textContent = cat;
      const td = tr.insertCell();
      td.className = "lim";
      td.textContent = money(cents);
    }
    $("receipt-rule").textContent = `Receipt required for any line over ${money(POLICY.receiptOver)}.`;
    const cats = $("ed-cats");
    cats.textContent = "";
    for (const [cat] of POLICY.limits) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = cat;
      b.dataset.cat = cat;
      b.addEventListener("click", () => setCategory(cat));
      cats.appendChild(b);
    }
  }

  function buildLines() {
    const body = document.querySelector("#lines tbody");
    body.textContent = "";
    report().lines.forEach((_, i) => {
      const tr = body.insertRow();
      tr.tabIndex = 0;
      for (const cls of ["n", "date", "merchant", "cat", "rcpt", "amt", "review"]) tr.insertCell().className = cls;
      tr.addEventListener("click", () => selectLine(i));
      tr.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); selectLine(i); }
        if (e.key === "ArrowDown" && i + 1 < body.rows.length) { e.preventDefault(); selectLine(i + 1); body.rows[i + 1].focus(); }
        if (e.key === "ArrowUp" && i > 0) { e.preventDefault(); selectLine(i - 1); body.rows[i - 1].focus(); }
      });
    });
    body.dataset.report = report().id;
  }

  function render() {
    reports.forEach((r, i) => {
      const el = $("reports").children[i];
      el.className = "report" + (i === selected ? " selected" : "");
      el.setAttribute("aria-selected", String(i === selected));
      el.querySelector(".who").textContent = r.employee;
      el.querySelector(".what").textContent = `${r.id} · ${r.title}`;
      el.querySelector(".sum").textContent = money(claimed(r));
      const st = el.querySelector(".st");
      st.className = "st " + r.status;
      st.textContent = r.status;
    });
    const r = report();
    if (document.querySelector("#lines tbody").dataset.report !== r.id) buildLines();
    $("rep-title").textContent = `${r.title}`;
    $("rep-sub").textContent = `${r.employee} · ${r.dept} · ${r.id} · submitted ${r.submitted}`;
    $("rep-status").className = "badge " + r.status;
    $("rep-status").textContent = r.status;
    const rows = document.querySelector("#lines tbody").rows;
    r.lines.forEach((l, i) => {
      const c = rows[i].cells;
      rows[i].className = i === line ? "selected" : "";
      c[0].textContent = i + 1;
      c[1].textContent = l.date;
      c[2].textContent = l.merchant;
      c[3].textContent = l.category || "No category";
      c[3].className = "cat" + (l.category ? "" : " none");
      c[4].textContent = l.receipt ? "Attached" : "Missing";
      c[4].className = "rcpt" + (l.receipt ? "" : " missing");
      c[5].textContent = money(l.amount);
      c[6].innerHTML = l.flagged ? '<span class="flagged">⚑ Flagged</span>' : "";
      c[6].title = l.flagged ? l.reason : "";
    });
    const flagged = r.lines.filter((l) => l.flagged).length;
    $("totals").innerHTML = `Claimed <b>${money(claimed(r))}</b> <span>· Flagged (not reimbursed)</span> <b>${money(flaggedSum(r))}</b>`
      + (r.status === "rejected" ? " <span>· Rejected: nothing is reimbursed</span>"
        : ` <span>· ${r.status === "approved" ? "Reimbursed" : "To reimburse"}</span> <b>${money(reimbursable(r))}</b>`);
    renderEditor(r, current());
    renderDecision(r);
    const summary = `${count("pending")} pending · ${count("approved")} approved · ${count("rejected")} rejected`;
    $("summary").textContent = summary + (exports.length ? ` · ${exports.length} export${exports.length === 1 ? "" : "s"}` : "");
    renderDialog();
    const l = current();
    const state = `${r.id} ${r.status}, line ${line + 1} ${l.merchant} [${l.category || "no category"}] ${money(l.amount)}`
      + `${l.flagged ? " flagged" : ""}, flagged ${flagged} · pending ${count("pending")} · approved ${count("approved")}`
      + ` · rejected ${count("rejected")} · exports ${exports.length}`;
    document.title = dialog.open ? `Export summary: ${scopeLabel()}, ${dialog.format.toUpperCase()} · ${state}` : `Expenses: ${state}`;
  }

  function renderEditor(r, l) {
    const off = locked();
    $("editor").className = off ? "off" : "";
    $("ed-head").textContent = `Line ${line + 1} of ${r.lines.length} · ${l.date} · ${l.merchant}` + (off ? ` (report ${r.status}: reopen it to edit)` : "");
    for (const id of ["ed-merchant", "ed-amount", "flag-reason", "flag"]) $(id).disabled = off;
    $("ed-merchant").value = l.merchant;
    $("ed-amount").value = (l.amount / 100).toFixed(2);
    $("ed-receipt").textContent = l.receipt ? "Receipt attached" : "No receipt";
    for (const b of $("ed-cats").children) {
      b.className = b.dataset.cat === l.category ? "on" : "";
      b.disabled = off;
    }
    if (l.flagged) $("flag-reason").value = l.reason;
    $("flag-reason").readOnly = l.flagged;
    $("flag").textContent = l.flagged ? "Clear flag" : "Flag violation";
    $("flag").className = l.flagged ? "clear" : "";
    const limit = l.category ? `Limit for ${l.category}: ${money(LIMIT[l.category])} per receipt.` : "Choose a category to see its limit.";
    const v = violations(l);
    $("ed-policy").innerHTML = "";
    $("ed-policy").append(limit);
    if (v.length) {
      const w = document.createElement("div");
      w.className = "warn";
      w.textContent = "⚠ Policy: " + v.join("; ");
      $("ed-policy").append(w);
    }
    $("ed-error").textContent = message.editor;
  }

  function renderDecision(r) {
    const off = locked();
    $("comment").value = off ? r.comment : r.draft;
    $("comment").readOnly = off;
    $("approve").disabled = off;
    $("reject").disabled = off;
    $("reopen").disabled = !off;
    const who = r.status === "approved" ? "Approved" : "Rejected";
    $("decision-msg").textContent = message.decision
      || (off ? `${who}${r.comment ? ": “" + r.comment + "”" : " without a comment"}.`
        + (r.status === "approved" ? ` Reimbursed: ${money(reimbursable(r))}.` : " Nothing is reimbursed.") : "");
    $("decision-msg").style.color = message.decision ? "" : "#1d6b34";
  }

  // ---- actions ----------------------------------------------------------------------
  function say(editor, decision) { message = { editor: editor || "", decision: decision || "" }; }
  function selectReport(i) {
    if (i !== selected) { selected = i; line = 0; $("flag-reason").value = ""; }
    say(); render();
  }
  function selectLine(i) {
    if (i !== line) { line = i; $("flag-reason").value = ""; }
    say(); render();
  }
  function commitMerchant() {
    if (locked()) return;
    const v = $("ed-merchant").value.trim();
    if (!v) { say("The merchant cannot be empty."); render(); return; }
    if (v !== current().merchant) { current().merchant = v; say(); render(); }
  }
  function commitAmount() {
    if (locked()) return;
    const cents = parseMoney($("ed-amount").value);
    if (cents === null || cents === 0) { say("Enter an amount in dollars, like 45.00."); render(); return; }
    if (cents !== current().amount) { current().amount = cents; say(); render(); }
  }
  function setCategory(cat) {
    if (locked()) return;
    current().category = cat;
    say(); render();
  }
  function toggleFlag() {
    if (locked()) return;
    const l = current();
    if (l.flagged) {
      l.flagged = false; l.reason = ""; $("flag-reason").value = "";
      say(); render(); return;
    }
    const reason = $("flag-reason").value.trim();
    if (!reason) { say("Write a reason before flagging the line."); render(); $("flag-reason").focus(); return; }
    l.flagged = true; l.reason = reason;
    say(); render();
  }
  function decide(status) {
    const r = report();
    if (locked()) return;
    const comment = $("comment").value.trim();
    if (status === "approved") {
      const missing = r.lines.findIndex((l) => !l.category);
      if (missing >= 0) { say("", `Line ${missing + 1} (${r.lines[missing].merchant}) has no category: choose one before approving.`); render(); return; }
    } else if (!comment) {
      say("", "Write a comment saying why before rejecting."); render(); $("comment").focus(); return;
    }
    r.status = status; r.comment = comment; r.draft = "";
    r.history.push({ action: status, comment });
    say(); render();
  }
  function reopen() {
    const r = report();
    if (!locked()) return;
    r.history.push({ action: "reopened", comment: "" });
    r.status = "pending"; r.comment = ""; r.draft = "";
    say(); render();
  }

  // ---- export -------------------------------------------------------------------------
  function scopeLabel() { return { decided: "All decided", approved: "Approved only", selected: `This report (${report().id})` }[dialog.scope]; }
  function scoped() {
    if (dialog.scope === "selected") return [report()];
    return reports.filter((r) => (dialog.scope === "decided" ? r.status !== "pending" : r.status === "approved"));
  }
  const paid = (r) => (r.status === "approved" ? reimbursable(r) : 0);
  function exportFile() {
    const what = dialog.scope === "selected" ? report().id.toLowerCase() : dialog.scope;
    return `expenses-${what}-2026-11.${dialog.format}`;
  }
  function preview(list) {
    if (!list.length) return "No reports to export.";
    if (dialog.format === "csv") {
      return ["report,employee,department,status,claimed,flagged,reimbursed"].concat(list.map((r) =>
        [r.id, r.employee, r.dept, r.status, (claimed(r) / 100).toFixed(2), (flaggedSum(r) / 100).toFixed(2), (paid(r) / 100).toFixed(2)].join(","))).join("\n");
    }
    return ["BRIGHTLINE · EXPENSE SUMMARY · NOVEMBER 2026", ""].concat(list.map((r) =>
      `${r.id}  ${r.employee.padEnd(15)} ${r.status.padEnd(9)} ${money(claimed(r)).padStart(10)}  paid ${money(paid(r)).padStart(10)}`),
    ["", `Total reimbursed: ${money(list.reduce((s, r) => s + paid(r), 0))}`]).join("\n");
  }
  function renderDialog() {
    $("export").hidden = !dialog.open;
    if (!dialog.open) return;
    for (const b of $("scopes").children) b.className = b.dataset.scope === dialog.scope ? "on" : "";
    for (const b of $("formats").children) b.className = b.dataset.format === dialog.format ? "on" : "";
    const list = scoped();
    $("export-file").textContent = `File: ${exportFile()} · ${list.length} report${list.length === 1 ? "" : "s"}`
      + (dialog.scope === "selected" ? ` (${report().id}, ${report().employee})` : "");
    $("export-preview").textContent = preview(list);
    $("export-go").disabled = list.length === 0;
  }
  function openDialog() { dialog.open = true; say(); render(); $("export-go").focus(); }
  function closeDialog() { dialog.open = false; render(); $("export-open").focus(); }
  function doExport() {
    const list = scoped();
    if (!list.length) return;
    const total = list.reduce((s, r) => s + paid(r), 0);
    exports.push({
      file: exportFile(), scope: dialog.scope, format: dialog.format, reports: list.map((r) => r.id),
      statuses: list.map((r) => r.status), reimbursed: total,
    });
    dialog.open = false;
    $("toast").textContent = `Exported ${exportFile()}: ${list.length} report${list.length === 1 ? "" : "s"}, ${money(total)} reimbursed.`;
    render();
  }

  // ---- wiring -------------------------------------------------------------------------
  const onEnter = (id, fn) => $(id).addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); fn(); } });
  $("ed-merchant").addEventListener("change", commitMerchant);
  $("ed-amount").addEventListener("change", commitAmount);
  onEnter("ed-merchant", commitMerchant);
  onEnter("ed-amount", commitAmount);
  onEnter("flag-reason", toggleFlag);
  $("flag").addEventListener("click", toggleFlag);
  $("comment").addEventListener("input", () => { if (!locked()) report().draft = $("comment").value; });
  $("approve").addEventListener("click", () => decide("approved"));
  $("reject").addEventListener("click", () => decide("rejected"));
  $("reopen").addEventListener("click", reopen);
  $("export-open").addEventListener("click", openDialog);
  $("export-cancel").addEventListener("click", closeDialog);
  $("export-go").addEventListener("click", doExport);
  for (const b of $("scopes").children) b.addEventListener("click", () => { dialog.scope = b.dataset.scope; render(); });
  for (const b of $("formats").children) b.addEventListener("click", () => { dialog.format = b.dataset.format; render(); });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && dialog.open) closeDialog(); });

  // For tasks.js (the page contract) only: the agent drives the page over VNC.
  window.ExpenseApp = {
    reports: () => reports, exports: () => exports, selected: () => reports[selected],
    claimed, flaggedSum, reimbursable, violations, money,
    start: (id) => window.EXPENSE_REPORTS.find((r) => r.id === id),
    reset() {
      reports = fresh();
      selected = 0; line = 0; exports = [];
      dialog = { open: false, scope: "approved", format: "csv" };
      say();
      $("flag-reason").value = "";
      $("toast").textContent = "";
      buildStatic();
      document.querySelector("#lines tbody").dataset.report = "";
      render();
    },
  };
})();
