// The booking calendar: state, conflicts, rendering, the editor and drag-to-move.
// All state lives in `S`; render() redraws everything from it and puts the view, the
// counts and the open booking in the document title, which reference solutions wait on.
// contract.js reads the state through window.Studio.
(function () {
  "use strict";
  const D = window.STUDIO;
  const DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri"];
  const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  const REPEATS = [["none", "Never"], ["weekly", "Weekly"], ["weekdays", "Every weekday"]];
  const OPEN = 8 * 60, CLOSE = 19 * 60, HOUR_PX = 56, COL_PX = 160, WEEKS = 5;
  const S = { bookings: [], nextId: 100, filter: "all", week: 0, day: 0, open: null, draft: null, msg: "", status: "" };

  // ---- time and dates -------------------------------------------------------------
  const pad = (n) => String(n).padStart(2, "0");
  const hhmm = (m) => `${pad(Math.floor(m / 60))}:${pad(m % 60)}`;
  function date(week, day) {
    const d = new Date(D.firstMonday + "T12:00:00");
    d.setDate(d.getDate() + week * 7 + day);
    return d;
  }
  const dayLabel = (week, day) => `${DAYS[day]} ${date(week, day).getDate()} ${MONTHS[date(week, day).getMonth()]}`;
  // "9", "9:30", "09:30", "0930", "9.30" -> minutes; null when it is not a time.
  function parseTime(text) {
    const m = /^\s*(\d{1,2})(?:[:.h]?(\d{2}))?\s*$/.exec(text);
    if (!m) return null;
    const h = Number(m[1]), min = Number(m[2] || 0);
    return h < 24 && min < 60 ? h * 60 + min : null;
  }
  const room = (id) => D.rooms.find((r) => r.id === id);
  const person = (id) => D.people.find((p) => p.id === id);
  const gearName = (id) => D.gear.find((g) => g.id === id).name;

  // ---- occurrences and conflicts ----------------------------------------------------
  // The days (of `week`) a booking happens on: its own day, every week from its own
  // for a weekly one, every weekday from its own day on for an "every weekday" one.
  function daysOf(b, week) {
    if (b.cancelled || week < b.week) return [];
    if (b.repeat === "weekdays") return [0, 1, 2, 3, 4].filter((d) => week > b.week || d >= b.day);
    if (b.repeat === "weekly" || week === b.week) return [b.day];
    return [];
  }
  const occurs = (b, week, day) => daysOf(b, week).includes(day);
  const live = () => S.bookings.filter((b) => !b.cancelled);
  // Every pair of bookings that clash somewhere in the weeks the calendar shows: the same
  // room, or a piece of gear in both, at overlapping times on one day.
  function conflicts() {
    const found = [];
    const bs = live();
    for (let i = 0; i < bs.length; i++) {
      for (let j = i + 1; j < bs.length; j++) {
        const a = bs[i], b = bs[j];
        if (!(a.start < b.end && b.start < a.end)) continue;
        const shared = a.gear.filter((g) => b.gear.includes(g));
        if (a.room !== b.room && !shared.length) continue;
        let at = null;
        for (let w = 0; w < WEEKS && !at; w++) {
          const d = daysOf(a, w).find((x) => occurs(b, w, x));
          if (d !== undefined) at = { week: w, day: d };
        }
        if (!at) continue;
        const what = a.room === b.room ? room(a.room).name : shared.map(gearName).join(", ");
        found.push({ a: a.id, b: b.id, what, week: at.week, day: at.day });
      }
    }
    return found;
  }
  const conflictIds = () => new Set(conflicts().flatMap((c) => [c.a, c.b]));

  // ---- rendering ----------------------------------------------------------------------
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function button(text, on, click, cls) {
    const b = el("button", (cls || "") + (on ? " on" : ""), text);
    b.type = "button";
    b.addEventListener("click", click);
    return b;
  }
  // The grid's five columns: rooms on one day (all rooms), or days of one room.
  function columns() {
    if (S.filter === "all") return D.rooms.map((r) => ({ room: r.id, day: S.day, label: r.name }));
    return DAYS.map((_, d) => ({ room: S.filter, day: d, label: dayLabel(S.week, d) }));
  }

  function renderHeader() {
    document.getElementById("week-label").textContent =
      `${date(S.week, 0).getDate()} – ${dayLabel(S.week, 4).slice(4)} ${date(S.week, 4).getFullYear()}`;
    document.getElementById("prev-week").disabled = S.week === 0;
    document.getElementById("next-week").disabled = S.week === WEEKS - 1;
    const filters = document.getElementById("filters");
    filters.textContent = "";
    filters.appendChild(button("All rooms", S.filter === "all", () => { S.filter = "all"; render(); }));
    for (const r of D.rooms) filters.appendChild(button(r.name, S.filter === r.id, () => { S.filter = r.id; render(); }));
    const cs = conflicts();
    const badge = document.getElementById("conflicts");
    badge.className = cs.length ? "bad" : "";
    badge.textContent = cs.length ? `⚠ ${cs.length} conflict${cs.length > 1 ? "s" : ""}` : "✓ No conflicts";
    const days = document.getElementById("days");
    days.textContent = "";
    if (S.filter === "all") {
      DAYS.forEach((_, d) => days.appendChild(button(dayLabel(S.week, d), d === S.day, () => { S.day = d; render(); })));
    } else {
      const r = room(S.filter);
      days.appendChild(el("div", "room-info", `${r.name} · ${r.note} · week of ${dayLabel(S.week, 0)}`));
    }
    const heads = document.getElementById("columns");
    heads.textContent = "";
    for (const c of columns()) heads.appendChild(el("div", "", c.label));
  }

  function renderGrid() {
    const grid = document.getElementById("grid");
    grid.textContent = "";
    for (let h = OPEN; h < CLOSE; h += 60) {
      const row = el("div", "hour");
      row.style.top = `${((h - OPEN) / 60) * HOUR_PX}px`;
      row.appendChild(el("span", "", hhmm(h)));
      grid.appendChild(row);
    }
    const clash = conflictIds();
    columns().forEach((c, i) => {
      const col = el("div", "col");
      col.style.left = `${60 + i * COL_PX}px`;
      col.dataset.room = c.room;
      col.dataset.day = c.day;
      col.addEventListener("click", (event) => {
        if (event.target !== col) return;
        const start = OPEN + Math.floor(event.offsetY / HOUR_PX) * 60;
        openDraft({ room: c.room, week: S.week, day: c.day, start, end: Math.min(start + 60, CLOSE) });
      });
      // Lanes, so that bookings that overlap in one column (a double booking) sit side by side.
      const here = live().filter((b) => b.room === c.room && occurs(b, S.week, c.day)).sort((a, b) => a.start - b.start);
      const lanes = [];
      const laneOf = new Map();
      for (const b of here) {
        let lane = lanes.findIndex((end) => end <= b.start);
        if (lane < 0) { lane = lanes.length; lanes.push(0); }
        lanes[lane] = b.end;
        laneOf.set(b.id, lane);
      }
      for (const b of here) col.appendChild(blockElement(b, laneOf.get(b.id), lanes.length, clash.has(b.id)));
      grid.appendChild(col);
    });
  }

  function blockElement(b, lane, lanes, clash) {
    const width = (COL_PX - 8) / lanes;
    const e = el("div", `booking p-${b.person}` + (S.open === b.id ? " open" : "") + (clash ? " conflict" : ""));
    e.dataset.id = b.id;
    e.style.left = `${4 + lane * width}px`;
    e.style.width = `${width - 2}px`;
    e.style.top = `${((b.start - OPEN) / 60) * HOUR_PX + 1}px`;
    e.style.height = `${((b.end - b.start) / 60) * HOUR_PX - 2}px`;
    e.appendChild(el("b", "", (clash ? "⚠ " : "") + (b.repeat !== "none" ? "↻ " : "") + b.title));
    e.appendChild(el("div", "meta", `${hhmm(b.start)}–${hhmm(b.end)} · ${person(b.person).name.split(" ")[0]}`));
    // The gear line only where there is room for it (an hour and a half or more).
    if (b.gear.length && b.end - b.start >= 90) e.appendChild(el("div", "meta", b.gear.map(gearName).join(", ")));
    e.addEventListener("mousedown", (event) => startDrag(event, b, e));
    return e;
  }

  function renderEditor() {
    const form = document.getElementById("editor");
    document.getElementById("panel-empty").style.display = S.draft ? "none" : "block";
    form.style.display = S.draft ? "block" : "none";
    if (!S.draft) return;
    const d = S.draft;
    document.getElementById("ed-heading").textContent = d.id ? "Booking details" : "New booking";
    const fill = (id, items) => { const box = document.getElementById(id); box.textContent = ""; items.forEach((i) => box.appendChild(i)); };
    fill("ed-rooms", D.rooms.map((r) => button(r.short, d.room === r.id, () => { d.room = r.id; renderEditor(); })));
    document.getElementById("ed-week").textContent = `week of ${dayLabel(d.week, 0)}`;
    fill("ed-date", [
      button("‹", false, () => { if (d.week > 0) d.week -= 1; renderEditor(); }, "arrow"),
      ...DAYS.map((name, i) => button(`${name} ${date(d.week, i).getDate()}`, d.day === i, () => { d.day = i; renderEditor(); })),
      button("›", false, () => { if (d.week < WEEKS - 1) d.week += 1; renderEditor(); }, "arrow"),
    ]);
    fill("ed-people", D.people.map((p) => button(p.name, d.person === p.id, () => { d.person = p.id; renderEditor(); })));
    fill("ed-gear", D.gear.map((g) => button(g.name, d.gear.includes(g.id), () => {
      d.gear = d.gear.includes(g.id) ? d.gear.filter((x) => x !== g.id) : [...d.gear, g.id];
      renderEditor();
    })));
    fill("ed-repeat", REPEATS.map(([v, label]) => button(label, d.repeat === v, () => { d.repeat = v; renderEditor(); })));
    const msg = document.getElementById("ed-msg");
    msg.textContent = S.msg || clashNote(d.id);
    msg.className = S.msg.startsWith("Saved") ? "ok" : "";
    document.getElementById("ed-cancel-booking").style.display = d.id ? "block" : "none";
  }

  // What an open booking clashes with, so that a double booking explains itself.
  function clashNote(id) {
    const notes = conflicts().filter((c) => c.a === id || c.b === id).map((c) => {
      const other = S.bookings.find((b) => b.id === (c.a === id ? c.b : c.a));
      return `${c.what} with “${other.title}”`;
    });
    return notes.length ? `⚠ Double-booked: ${notes.join("; ")}.` : "";
  }

  function describe(b) {
    const rep = b.repeat === "weekly" ? ", weekly" : b.repeat === "weekdays" ? ", every weekday" : "";
    return `${b.title} (${room(b.room).short} ${dayLabel(b.week, b.day)} ${hhmm(b.start)}–${hhmm(b.end)}${rep})`;
  }

  function render() {
    renderHeader();
    renderGrid();
    renderEditor();
    document.getElementById("status").textContent = S.status;
    const view = S.filter === "all" ? `all rooms ${dayLabel(S.week, S.day)}` : `${room(S.filter).name} week of ${dayLabel(S.week, 0)}`;
    const n = conflicts().length;
    const open = S.draft ? (S.draft.id ? `open: ${describe(S.bookings.find((b) => b.id === S.draft.id))}` : "new booking") : "nothing open";
    document.title = `Studio: ${view} · ${live().length} bookings · ${n} conflict${n === 1 ? "" : "s"} · ${open}`
      + (S.msg && !S.msg.startsWith("Saved") ? " · error" : "");
  }

  // ---- the editor ---------------------------------------------------------------------
  // The form holds a draft; only Save changes the booking.
  function openDraft(fields) {
    S.draft = Object.assign({ id: null, title: "", person: null, gear: [], repeat: "none" }, fields);
    S.open = S.draft.id;
    S.msg = "";
    document.getElementById("ed-title").value = S.draft.title;
    document.getElementById("ed-start").value = hhmm(S.draft.start);
    document.getElementById("ed-end").value = hhmm(S.draft.end);
    render();
  }
  function openBooking(b) { openDraft(Object.assign({}, b, { gear: [...b.gear] })); }

  function save(event) {
    event.preventDefault();
    const d = S.draft;
    d.title = document.getElementById("ed-title").value.trim();
    const start = parseTime(document.getElementById("ed-start").value);
    const end = parseTime(document.getElementById("ed-end").value);
    if (!d.title) S.msg = "Give the booking a title.";
    else if (start === null || end === null) S.msg = "Times are like 09:30.";
    else if (start < OPEN || end > CLOSE) S.msg = "The studio is open 08:00–19:00.";
    else if (end <= start) S.msg = "The booking must end after it starts.";
    else if (!d.person) S.msg = "Who is it for? Choose a person under Booked by.";
    else S.msg = "";
    if (S.msg) { render(); return; }
    const fields = { title: d.title, room: d.room, week: d.week, day: d.day, start, end, person: d.person, gear: [...d.gear], repeat: d.repeat };
    let b = S.bookings.find((x) => x.id === d.id);
    if (b) Object.assign(b, fields);
    else { b = Object.assign({ id: S.nextId++, cancelled: false }, fields); S.bookings.push(b); }
    openBooking(b);
    const clash = conflicts().filter((c) => c.a === b.id || c.b === b.id);
    S.msg = clash.length ? `Saved. But it clashes: ${clash.map((c) => c.what).join("; ")} double-booked.` : "Saved.";
    S.status = `Saved “${b.title}”.`;
    // Show where it now is: its day (all rooms) or its week.
    S.week = b.week;
    if (S.filter === "all") S.day = b.day;
    render();
  }

  function cancelBooking() {
    const b = S.bookings.find((x) => x.id === S.draft.id);
    b.cancelled = true;
    S.status = `Cancelled “${b.title}” (${room(b.room).short}, ${dayLabel(b.week, b.day)}).`;
    closeEditor();
  }
  function closeEditor() { S.draft = null; S.open = null; S.msg = ""; render(); }

  // ---- drag to move -----------------------------------------------------------------------
  let drag = null;
  function startDrag(event, b, e) {
    if (event.button !== 0) return;
    event.preventDefault();
    drag = { b, e, x: event.clientX, y: event.clientY, top: parseFloat(e.style.top), moved: false };
  }
  // Where a drag would put the booking: the column under the pointer, the start snapped
  // to a quarter hour, the length kept.
  function dropTarget(event) {
    const gridBox = document.getElementById("grid").getBoundingClientRect();
    const i = Math.floor((event.clientX - gridBox.left - 60) / COL_PX);
    const c = columns()[Math.max(0, Math.min(4, i))];
    const len = drag.b.end - drag.b.start;
    const top = drag.top + (event.clientY - drag.y);
    let start = OPEN + Math.round((top / HOUR_PX) * 4) * 15;
    start = Math.max(OPEN, Math.min(CLOSE - len, start));
    return { room: c.room, day: c.day, start, end: start + len, col: Math.max(0, Math.min(4, i)) };
  }
  document.addEventListener("mousemove", (event) => {
    if (!drag) return;
    if (!drag.moved && Math.abs(event.clientX - drag.x) + Math.abs(event.clientY - drag.y) < 5) return;
    drag.moved = true;
    const t = dropTarget(event);
    drag.e.classList.add("dragging");
    drag.e.style.top = `${((t.start - OPEN) / 60) * HOUR_PX + 1}px`;
    drag.e.style.transform = `translateX(${(t.col - columns().findIndex((c) => c.room === drag.b.room && c.day === drag.b.day)) * COL_PX}px)`;
  });
  document.addEventListener("mouseup", (event) => {
    if (!drag) return;
    const { b } = drag;
    // A drag whose pointer jumped straight to its end (no move event between) still moves.
    if (drag.moved || Math.abs(event.clientX - drag.x) + Math.abs(event.clientY - drag.y) >= 5) {
      const t = dropTarget(event);
      // A series that happens every weekday keeps its days; only its room and time move.
      Object.assign(b, { room: t.room, start: t.start, end: t.end }, b.repeat === "weekdays" ? {} : { day: t.day });
      S.status = `Moved “${b.title}” to ${room(b.room).short}, ${dayLabel(b.week, b.day)} ${hhmm(b.start)}.`;
    }
    drag = null;
    openBooking(b);
  });

  // ---- wiring -----------------------------------------------------------------------------
  document.getElementById("editor").addEventListener("submit", save);
  document.getElementById("ed-close").addEventListener("click", closeEditor);
  document.getElementById("ed-cancel-booking").addEventListener("click", cancelBooking);
  document.getElementById("prev-week").addEventListener("click", () => { if (S.week > 0) S.week -= 1; render(); });
  document.getElementById("next-week").addEventListener("click", () => { if (S.week < WEEKS - 1) S.week += 1; render(); });
  document.getElementById("new-booking").addEventListener("click", () => openDraft({
    room: S.filter === "all" ? D.rooms[0].id : S.filter, week: S.week, day: S.filter === "all" ? S.day : 0, start: 9 * 60, end: 10 * 60,
  }));
  document.getElementById("conflicts").addEventListener("click", () => {
    const c = conflicts()[0];
    if (!c) return;
    S.filter = "all"; S.week = c.week; S.day = c.day;
    openBooking(S.bookings.find((b) => b.id === c.a));
  });
  const legend = document.getElementById("legend");
  for (const p of D.people) {
    const li = el("li");
    const swatch = el("i", `p-${p.id}`);
    li.append(swatch, `${p.name} · ${p.role}`);
    legend.appendChild(li);
  }

  function reset() {
    S.bookings = D.bookings.map((b) => Object.assign({ week: 0, repeat: "none", cancelled: false }, b, { gear: [...b.gear] }));
    Object.assign(S, { nextId: 100, filter: "all", week: 0, day: 0, open: null, draft: null, msg: "", status: "" });
    for (const id of ["ed-title", "ed-start", "ed-end"]) document.getElementById(id).value = "";
    drag = null;
    render();
  }

  window.Studio = { S, D, conflicts, occurs, daysOf, live, hhmm, dayLabel, room, reset, render };
})();
