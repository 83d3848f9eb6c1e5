// The store and its page contract. State: the license chosen on each tile, the cart
// (one line per photo) and the placed orders. render() redraws from the state and puts
// the cart or the last order in the title, which reference solutions wait on.
(function () {
  "use strict";
  let chosen = {};
  let cart = [];
  let orders = [];

  const photo = (id) => window.PHOTOS.find((p) => p.id === id);
  const price = (line) => photo(line.id)[line.license];
  const total = (lines) => lines.reduce((sum, l) => sum + price(l), 0);

  function render() {
    const grid = document.getElementById("grid");
    grid.textContent = "";
    for (const p of window.PHOTOS) grid.appendChild(tile(p));
    const lines = document.getElementById("lines");
    lines.textContent = "";
    for (const line of cart) {
      const li = document.createElement("li");
      li.dataset.id = line.id;
      li.innerHTML = '<div class="what"></div><div class="lic"></div>';
      li.querySelector(".what").textContent = photo(line.id).name;
      li.querySelector(".lic").textContent = `${line.license} license · $${price(line)}`;
      const remove = document.createElement("button");
      remove.className = "remove";
      remove.textContent = "✕";
      remove.title = "Remove";
      remove.addEventListener("click", () => { cart = cart.filter((l) => l !== line); render(); });
      li.appendChild(remove);
      lines.appendChild(li);
    }
    document.getElementById("total").textContent = `Total: $${total(cart)}`;
    document.getElementById("checkout").disabled = cart.length === 0;
    const last = orders[orders.length - 1];
    document.getElementById("receipt").textContent =
      last ? `Order #${last.number} placed: ${last.lines.length} photos, $${last.total}` : "";
    const summary = `cart ${cart.length} items, $${total(cart)}`;
    document.getElementById("summary").textContent = summary;
    document.title = last && cart.length === 0
      ? `Lumen Stock: order #${last.number} placed (${last.lines.length} items, $${last.total})`
      : `Lumen Stock: ${summary}`;
  }

  function tile(p) {
    const el = document.createElement("article");
    el.className = "tile";
    el.dataset.id = p.id;
    const license = chosen[p.id] || "standard";
    el.innerHTML = `<div class="picture"></div><div class="meta"><div class="name"></div>
      <div class="by"></div><div class="tags"></div></div><div class="licenses"></div>`;
    el.querySelector(".picture").style.background = p.picture;
    el.querySelector(".name").textContent = p.name;
    el.querySelector(".by").textContent = "by " + p.by;
    el.querySelector(".tags").textContent = p.tags.join(", ");
    const licenses = el.querySelector(".licenses");
    for (const kind of ["standard", "extended"]) {
      const b = document.createElement("button");
      b.className = "license " + kind + (kind === license ? " chosen" : "");
      b.textContent = `${kind === "standard" ? "Standard" : "Extended"} $${p[kind]}`;
      b.addEventListener("click", () => { chosen[p.id] = kind; render(); });
      licenses.appendChild(b);
    }
    const add = document.createElement("button");
    add.className = "add";
    add.textContent = "Add to cart";
    add.addEventListener("click", () => {
      const existing = cart.find((l) => l.id === p.id);
      if (existing) existing.license = license;
      else cart.push({ id: p.id, license });
      render();
    });
    el.appendChild(add);
    return el;
  }

  document.getElementById("checkout").addEventListener("click", () => {
    if (!cart.length) return;
    orders.push({ number: 1001 + orders.length, lines: cart.map((l) => ({ ...l })), total: total(cart) });
    cart = [];
    render();
  });

  // ---- page contract ------------------------------------------------------------
  const result = (success, message) => ({ success, message });
  const describe = (lines) => lines.map((l) => `${photo(l.id).name} (${l.license})`).join(", ") || "nothing";
  // Exactly these lines (photo id → license), in any order.
  const exactly = (lines, want) => lines.length === Object.keys(want).length
    && lines.every((l) => want[l.id] === l.license);
  const oneOrder = (want) => orders.length === 1 && cart.length === 0 && exactly(orders[0].lines, want);
  const ordered = () => orders.length ? describe(orders[0].lines) + ` in ${orders.length} order(s)` : "no order";

  const TASKS = [
    {
      id: "cart-harbour-standard",
      description: "Put 'Harbour at dawn' with a standard license in the cart (nothing else, no checkout).",
      check: () => result(orders.length === 0 && exactly(cart, { harbour: "standard" }), `cart: ${describe(cart)}`),
    },
    {
      id: "cart-lake-extended",
      description: "Put 'Alpine lake' with an extended license in the cart (nothing else, no checkout).",
      check: () => result(orders.length === 0 && exactly(cart, { lake: "extended" }), `cart: ${describe(cart)}`),
    },
    {
      id: "order-urban-extended",
      description: "Buy 'City rain' and 'Night market', both with extended licenses, in one order.",
      check: () => result(oneOrder({ rain: "extended", market: "extended" }), ordered()),
    },
    {
      id: "order-rain-extended",
      description: "Buy 'City rain' with an extended license, alone, in one order.",
      check: () => result(oneOrder({ rain: "extended" }), ordered()),
    },
    {
      id: "order-campaign",
      description: "One order: every water photo with a standard license, every food photo with an extended license.",
      check: () => result(oneOrder({ harbour: "standard", lake: "standard", market: "extended", coffee: "extended" }), ordered()),
    },
    {
      id: "cheapest-extended",
      description: "Which photo has the cheapest extended license? Return its name.",
      answer_schema: { type: "string" },
      check: (returned) => result(returned === "Coffee still life", `returned ${JSON.stringify(returned)}`),
    },
  ];

  window.getTasks = () => TASKS.map(({ id, description, answer_schema }) =>
    Object.assign({ id, description }, answer_schema ? { answer_schema } : {}));
  window.evaluateTask = (id, returned) => {
    const task = TASKS.find((t) => t.id === id);
    if (!task) return result(false, `no task ${id}`);
    return task.check(returned === undefined ? null : returned);
  };
  window.reset = () => { chosen = {}; cart = []; orders = []; render(); return true; };
  window.getState = () => ({
    cart: cart.map((l) => ({ name: photo(l.id).name, license: l.license })),
    cartTotal: total(cart),
    orderedTotal: orders.reduce((sum, o) => sum + o.total, 0),
    orders: orders.map((o) => ({ number: o.number, total: o.total, photos: o.lines.map((l) => photo(l.id).name) })),
  });

  window.reset();
})();
