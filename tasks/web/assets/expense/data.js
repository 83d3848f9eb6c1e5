// Mock data for the expense approvals app: the policy and the reports as they start
// (reset() returns to them). Amounts are in cents, so that sums are exact.
window.EXPENSE_POLICY = {
  receiptOver: 2500, // a receipt is required for any line over $25.00
  limits: [
    // [category, limit per receipt in cents]
    ["Airfare", 80000],
    ["Lodging", 25000],
    ["Meals", 7500],
    ["Ground transport", 12000],
    ["Client entertainment", 30000],
    ["Conference fees", 100000],
    ["Office supplies", 15000],
    ["Software", 20000],
  ],
};

// Each line: date, merchant, category ("" = not categorised yet), amount in cents and
// whether a receipt is attached.
window.EXPENSE_REPORTS = [
  {
    id: "REP-1041", employee: "Priya Raman", dept: "Sales", title: "Client visit, Lyon",
    submitted: "14 Nov 2026", status: "pending", comment: "",
    lines: [
      { date: "09 Nov", merchant: "Air France", category: "Airfare", amount: 41280, receipt: true },
      { date: "10 Nov", merchant: "Hôtel Le Royal", category: "Lodging", amount: 23600, receipt: true },
      { date: "10 Nov", merchant: "Brasserie Georges", category: "Meals", amount: 5840, receipt: true },
      { date: "11 Nov", merchant: "Taxi Lyon Part-Dieu", category: "Ground transport", amount: 3250, receipt: false },
      { date: "11 Nov", merchant: "Bouchon Daniel et Denise", category: "Client entertainment", amount: 28600, receipt: true },
    ],
  },
  {
    id: "REP-1042", employee: "Tomás Ortega", dept: "Engineering", title: "KubeSummit Berlin",
    submitted: "07 Nov 2026", status: "pending", comment: "",
    lines: [
      { date: "03 Nov", merchant: "KubeSummit GmbH", category: "Conference fees", amount: 95000, receipt: true },
      { date: "03 Nov", merchant: "Lufthansa", category: "Airfare", amount: 38920, receipt: true },
      { date: "04 Nov", merchant: "Motel One Berlin", category: "Lodging", amount: 31200, receipt: true },
      { date: "05 Nov", merchant: "Curry 36", category: "Meals", amount: 1490, receipt: false },
      { date: "05 Nov", merchant: "JetBrains", category: "", amount: 18900, receipt: true },
    ],
  },
  {
    id: "REP-1043", employee: "Grace Liu", dept: "Marketing", title: "Webinar studio kit",
    submitted: "16 Nov 2026", status: "pending", comment: "",
    lines: [
      { date: "12 Nov", merchant: "B&H Photo", category: "Office supplies", amount: 12999, receipt: true },
      { date: "12 Nov", merchant: "Canva", category: "Software", amount: 11999, receipt: true },
      { date: "13 Nov", merchant: "Amazon (ring light)", category: "", amount: 4550, receipt: true },
      { date: "15 Nov", merchant: "Uber", category: "Ground transport", amount: 450000, receipt: true },
    ],
  },
  {
    id: "REP-1044", employee: "Samuel Okafor", dept: "Finance", title: "Quarter-close dinner",
    submitted: "21 Nov 2026", status: "pending", comment: "",
    lines: [
      { date: "20 Nov", merchant: "Nobu Downtown", category: "Meals", amount: 26400, receipt: true },
      { date: "20 Nov", merchant: "Lyft", category: "Ground transport", amount: 2840, receipt: false },
    ],
  },
  {
    id: "REP-1045", employee: "Aiko Tanaka", dept: "Design", title: "Config Lisbon",
    submitted: "24 Nov 2026", status: "pending", comment: "",
    lines: [
      { date: "17 Nov", merchant: "Config Conference", category: "Conference fees", amount: 68000, receipt: true },
      { date: "17 Nov", merchant: "TAP Air Portugal", category: "Airfare", amount: 25410, receipt: true },
      { date: "18 Nov", merchant: "Memmo Alfama", category: "Lodging", amount: 19800, receipt: true },
      { date: "19 Nov", merchant: "Time Out Market", category: "Meals", amount: 2360, receipt: false },
    ],
  },
  {
    id: "REP-1039", employee: "Hannah Becker", dept: "Support", title: "Customer onsite, Leeds",
    submitted: "02 Nov 2026", status: "approved", comment: "Within policy.",
    lines: [
      { date: "29 Oct", merchant: "LNER", category: "Ground transport", amount: 9640, receipt: true },
      { date: "29 Oct", merchant: "Quebecs Hotel", category: "Lodging", amount: 16400, receipt: true },
      { date: "30 Oct", merchant: "Ox Club", category: "Meals", amount: 4170, receipt: true },
    ],
  },
  {
    id: "REP-1040", employee: "Marco Bianchi", dept: "Sales", title: "Milan trade fair",
    submitted: "05 Nov 2026", status: "rejected", comment: "Duplicate of REP-1031, already reimbursed.",
    lines: [
      { date: "28 Oct", merchant: "Fiera Milano", category: "Conference fees", amount: 42000, receipt: true },
      { date: "28 Oct", merchant: "Hotel Berna", category: "Lodging", amount: 18900, receipt: true },
    ],
  },
];
