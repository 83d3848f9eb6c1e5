// The board and its page contract. All state lives in `cards`; render() redraws the
// whole board from it and puts the column counts in the title, which reference
// solutions wait on.
(function () {
  "use strict";
  const COLUMNS = [
    ["todo", "To do"], ["doing", "In progress"], ["review", "Review"], ["done", "Done"],
  ];
  const NEXT = { todo: "doing", doing: "review" };
  let cards = [];
  let nextId = 100;

  function copyStart() {
    return window.KANBAN_START.map((c) => Object.assign({ approved: false, changes: 0 }, c));
  }

  function count(column) { return cards.filter((c) => c.column === column).length; }

  function render() {
    const board = document.getElementById("board");
    board.textContent = "";
    for (const [key, label] of COLUMNS) {
      const col = document.createElement("section");
      col.className = "column";
      col.id = "col-" + key;
      const h = document.createElement("h2");
      h.textContent = `${label} (${count(key)})`;
      col.appendChild(h);
      for (const card of cards.filter((c) => c.column === key)) col.appendChild(cardElement(card));
      board.appendChild(col);
    }
    document.title = "Board: " + COLUMNS.map(([k, l]) => `${l} ${count(k)}`).join(" · ");
  }

  function button(cls, text, onClick) {
    const b = document.createElement("button");
    b.className = cls;
    b.textContent = text;
    b.addEventListener("click", onClick);
    return b;
  }

  function cardElement(card) {
    const el = document.createElement("div");
    el.className = "card" + (card.approved ? " approved" : "") + (card.changes ? " changes-requested" : "");
    el.dataset.id = card.id;
    const title = document.createElement("div");
    title.className = "title";
    title.textContent = card.title;
    const who = document.createElement("div");
    who.className = "who";
    who.textContent = card.who;
    const actions = document.createElement("div");
    actions.className = "actions";
    if (NEXT[card.column]) {
      const label = card.column === "todo" ? "Start ▶" : "Review ▶";
      actions.appendChild(button("next", label, () => { card.column = NEXT[card.column]; render(); }));
    } else if (card.column === "review") {
      actions.appendChild(button("approve", "Approve", () => {
        card.column = "done"; card.approved = true; render();
      }));
      actions.appendChild(button("changes", "Request changes", () => {
        card.column = "doing"; card.changes += 1; render();
      }));
    }
    el.append(title, who, actions);
    return el;
  }

  document.getElementById("add-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = document.getElementById("new-title");
    const title = input.value.trim();
    if (title) {
      cards.push({ id: nextId++, title, who: "me", column: "todo", approved: false, changes: 0 });
      input.value = "";
      render();
    }
  });

  // ---- page contract ------------------------------------------------------------
  const find = (title) => cards.find((c) => c.title.toLowerCase() === title.toLowerCase());
  const where = (title) => (find(title) || {}).column || null;
  // Every start card other than `except` is where it started (nothing else disturbed).
  function othersUntouched(except) {
    return window.KANBAN_START.every((s) => except.includes(s.title) || where(s.title) === s.column)
      && cards.every((c) => c.id < 100 || except.includes(c.title));
  }
  const result = (success, message) => ({ success, message });

  const TASKS = [
    {
      id: "start-login-fix",
      description: "Move 'Fix login timeout' from To do to In progress.",
      check: () => result(where("Fix login timeout") === "doing" && othersUntouched(["Fix login timeout"]),
        `'Fix login timeout' is in ${where("Fix login timeout")}`),
    },
    {
      id: "approve-dark-mode",
      description: "Approve the card in review ('Dark mode toggle').",
      check: () => {
        const c = find("Dark mode toggle");
        return result(c.column === "done" && c.approved && othersUntouched(["Dark mode toggle"]),
          `'Dark mode toggle' is in ${c.column}, approved: ${c.approved}`);
      },
    },
    {
      id: "add-release-notes",
      description: "Add a card 'Write release notes' and start it (In progress).",
      check: () => result(where("Write release notes") === "doing" && othersUntouched(["Write release notes"]),
        `'Write release notes' is in ${where("Write release notes")}`),
    },
    {
      id: "search-filters-to-review",
      description: "Send 'Search filters' to review.",
      check: () => result(where("Search filters") === "review" && othersUntouched(["Search filters"]),
        `'Search filters' is in ${where("Search filters")}`),
    },
    {
      id: "search-filters-done",
      description: "'Search filters' went through review and was approved.",
      check: () => {
        const c = find("Search filters");
        return result(c.column === "done" && c.approved && othersUntouched(["Search filters"]),
          `'Search filters' is in ${c.column}, approved: ${c.approved}`);
      },
    },
    {
      id: "dark-mode-reworked",
      description: "'Dark mode toggle' had changes requested, went back to review and was approved.",
      check: () => {
        const c = find("Dark mode toggle");
        return result(c.column === "done" && c.approved && c.changes === 1 && othersUntouched(["Dark mode toggle"]),
          `'Dark mode toggle' is in ${c.column}, approved: ${c.approved}, changes requested ${c.changes}×`);
      },
    },
    {
      id: "sprint-wrap-up",
      description: "Approve 'Dark mode toggle', send both In-progress cards to review, and start 'Compress hero images'.",
      check: () => {
        const ok = where("Dark mode toggle") === "done" && find("Dark mode toggle").approved
          && where("Search filters") === "review" && where("Invoice PDF export") === "review"
          && where("Compress hero images") === "doing"
          && othersUntouched(["Dark mode toggle", "Search filters", "Invoice PDF export", "Compress hero images"]);
        return result(ok, document.title);
      },
    },
    {
      id: "count-in-progress",
      description: "How many cards are in progress? Return the number.",
      answer_schema: { type: "integer" },
      check: (returned) => result(returned === count("doing"), `returned ${JSON.stringify(returned)}, in progress: ${count("doing")}`),
    },
  ];

  window.getTasks = () => TASKS.map(({ id, description, answer_schema }) =>
    Object.assign({ id, description }, answer_schema ? { answer_schema } : {}));
  window.evaluateTask = (id, returned) => {
    const task = TASKS.find((t) => t.id === id);
    if (!task) return result(false, `no task ${id}`);
    return task.check(returned === undefined ? null : returned);
  };
  window.reset = () => {
    cards = copyStart();
    nextId = 100;
    document.getElementById("new-title").value = "";
    render();
    return true;
  };
  window.getState = () => ({
    columns: Object.fromEntries(COLUMNS.map(([k]) => [k, cards.filter((c) => c.column === k).map((c) => c.title)])),
    counts: Object.fromEntries(COLUMNS.map(([k]) => [k, count(k)])),
  });

  window.reset();
})();
