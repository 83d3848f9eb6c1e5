// Mock data: the board as it starts (reset() returns to it).
window.KANBAN_START = [
  { id: 1, title: "Fix login timeout", who: "Ana", column: "todo" },
  { id: 2, title: "Update privacy page", who: "Ben", column: "todo" },
  { id: 3, title: "Compress hero images", who: "Chen", column: "todo" },
  { id: 4, title: "Search filters", who: "Dana", column: "doing" },
  { id: 5, title: "Invoice PDF export", who: "Eli", column: "doing" },
  { id: 6, title: "Dark mode toggle", who: "Ana", column: "review" },
  { id: 7, title: "Onboarding emails", who: "Ben", column: "done", approved: true },
];
