// The page contract (getTasks, evaluateTask, reset, getState) of the studio booking
// calendar. Each task judges the calendar's state, and the returned answer where it
// asks for one; every task also requires that nothing it does not name has changed.
(function () {
  "use strict";
  const { S, D, conflicts, occurs, live, hhmm, dayLabel } = window.Studio;
  const result = (success, message) => ({ success, message });
  // Titles compare without case, punctuation or the kind of dash: "Harbour doc - trailer"
  // is "Harbour doc — trailer".
  const norm = (s) => String(s).toLowerCase().replace(/[^a-z0-9]+/g, " ").trim();
  const FIELDS = ["title", "room", "week", "day", "start", "end", "person", "repeat", "cancelled"];
  const startOf = (id) => Object.assign({ week: 0, repeat: "none", cancelled: false }, D.bookings.find((b) => b.id === id));
  const byId = (id) => S.bookings.find((b) => b.id === id);
  const sameGear = (a, b) => a.length === b.length && a.every((g) => b.includes(g));
  const unchanged = (b) => { const s = startOf(b.id); return FIELDS.every((f) => b[f] === s[f]) && sameGear(b.gear, s.gear); };
  const added = () => S.bookings.filter((b) => b.id >= 100 && !b.cancelled);
  const addedNamed = (title) => added().filter((b) => norm(b.title) === norm(title));
  const says = (b) => (b ? `${b.title}: ${D.rooms.find((r) => r.id === b.room).short} ${dayLabel(b.week, b.day)} `
    + `${hhmm(b.start)}–${hhmm(b.end)}, ${b.person}, gear [${b.gear.join(", ")}], repeat ${b.repeat}${b.cancelled ? ", CANCELLED" : ""}` : "missing");
  const time = (t) => { const [h, m] = t.split(":").map(Number); return h * 60 + m; };

  // `b` matches `want` ({room, week, day, start: "HH:MM", end, person, gear, repeat,
  // cancelled, title}); fields left out must be as the booking started (a new one:
  // defaults), except the title, which only a start booking's `want` names.
  function matches(b, want) {
    if (!b) return false;
    const base = b.id < 100 ? startOf(b.id) : { week: 0, repeat: "none", cancelled: false, gear: [] };
    const w = Object.assign({}, base, want);
    if (want.start) w.start = time(want.start);
    if (want.end) w.end = time(want.end);
    return ["room", "week", "day", "start", "end", "person", "repeat", "cancelled"].every((f) => w[f] === undefined || b[f] === w[f])
      && sameGear(b.gear, w.gear) && (!want.title || norm(b.title) === norm(want.title));
  }
  // Every start booking not in `changed` is as it started, and the new bookings are
  // exactly one for each title in `created` (a new booking cancelled again is gone).
  function othersUntouched(changed, created) {
    const stray = S.bookings.filter((b) => b.id < 100 && !changed.includes(b.id) && !unchanged(b));
    const titles = added().map((b) => norm(b.title)).sort();
    const wanted = created.map(norm).sort();
    return stray.length === 0 && titles.length === wanted.length && titles.every((t, i) => t === wanted[i]);
  }
  // A task: the bookings `want` names (start id or new title -> fields) match, nothing
  // else changed, and no conflict was added.
  function bookingsTask(want) {
    return () => {
      const changed = Object.keys(want).filter((k) => /^\d+$/.test(k)).map(Number);
      const created = Object.keys(want).filter((k) => !/^\d+$/.test(k));
      const found = Object.keys(want).map((k) => (/^\d+$/.test(k) ? byId(Number(k)) : addedNamed(k)[0]));
      const ok = Object.keys(want).every((k, i) => matches(found[i], want[k]))
        && othersUntouched(changed, created) && newConflicts().length === 0;
      const n = newConflicts().length;
      return result(ok, found.map(says).join("; ") + `; ${n} new conflict(s); ${added().length} new booking(s)`);
    };
  }
  const untouchedAll = () => othersUntouched([], []);
  // Conflicts other than the one the calendar starts with (Studio B, Tuesday: bookings
  // 6 and 7, while both are as they started): a task must not add any.
  const newConflicts = () => conflicts().filter((c) => !(c.a === 6 && c.b === 7 && unchanged(byId(6)) && unchanged(byId(7))));
  // The hours a room is booked in week 0, from the calendar's state.
  const hoursIn = (roomId) => live().filter((b) => b.room === roomId)
    .reduce((sum, b) => sum + [0, 1, 2, 3, 4].filter((d) => occurs(b, 0, d)).length * (b.end - b.start), 0) / 60;
  const freeRooms = (day, from, to) => D.rooms.filter((r) => !live().some((b) => b.room === r.id && occurs(b, 0, day)
    && b.start < time(to) && time(from) < b.end)).map((r) => r.id);
  const roomIdOf = (text) => (D.rooms.find((r) => [r.id, r.name, r.short].some((n) => norm(n) === norm(text))) || {}).id;

  const TASKS = [
    { id: "cancel-alder-review", description: "Friday's 'Client review — Alder Coffee' is cancelled; nothing else changed.",
      check: bookingsTask({ 17: { cancelled: true } }) },
    { id: "filter-booth", description: "The calendar shows the Podcast Booth only; no booking changed.",
      check: () => result(S.filter === "booth" && untouchedAll(), `filter: ${S.filter}`) },
    { id: "who-lumen-thursday", description: "Who has Studio B booked on Thursday afternoon? Return their name.",
      answer_schema: { type: "string" },
      check: (returned) => {
        const b = live().find((x) => x.room === "studioB" && occurs(x, 0, 3) && x.end > 780);
        const who = b ? D.people.find((p) => p.id === b.person).name : "nobody";
        const ok = typeof returned === "string" && norm(returned).includes(norm(who.split(" ")[0])) && untouchedAll();
        return result(ok, `returned ${JSON.stringify(returned)}; Studio B on Thursday afternoon: ${who}`);
      } },
    { id: "book-harbour-trailer", description: "Edit Suite 2 is booked for Priya on Wednesday 10:00–13:00 as 'Harbour doc — trailer'.",
      check: bookingsTask({ "Harbour doc trailer": { room: "edit2", day: 2, start: "10:00", end: "13:00", person: "priya" } }) },
    { id: "standup-every-weekday", description: "'Team stand-up' repeats every weekday.",
      check: bookingsTask({ 1: { repeat: "weekdays" } }) },
    { id: "vo-until-1130", description: "Tuesday's 'VO record — Velo ad' ends at 11:30.",
      check: bookingsTask({ 8: { end: "11:30" } }) },
    { id: "vo-until-1200", description: "Tuesday's 'VO record — Velo ad' ends at 12:00.",
      check: bookingsTask({ 8: { end: "12:00" } }) },
    { id: "interview-to-studio-a", description: "The Studio B double booking on Tuesday is resolved: the Dr. Ellis interview is in Studio A, same time.",
      check: bookingsTask({ 7: { room: "studioA" } }) },
    { id: "interview-weekly-series", description: "The Dr. Ellis interview is a weekly series in Studio A on Tuesdays, two hours from 12:00 or later, with the A7S III and the teleprompter, and nothing clashes.",
      check: () => {
        const b = byId(7);
        const ok = b.room === "studioA" && b.day === 1 && b.week === 0 && b.start >= 720 && b.end === b.start + 120
          && b.repeat === "weekly" && sameGear(b.gear, ["a7s", "prompter"]) && b.person === "maya" && !b.cancelled
          && othersUntouched([7], []) && conflicts().length === 0;
        return result(ok, `${says(b)}; ${conflicts().length} conflict(s)`);
      } },
    { id: "promo-free-camera", description: "Studio B is booked for Maya on Wednesday 10:00–12:00 as 'Promo — Northlight' with the camera that is free then (the A7S III).",
      check: bookingsTask({ "Promo Northlight": { room: "studioB", day: 2, start: "10:00", end: "12:00", person: "maya", gear: ["a7s"] } }) },
    { id: "lanterns-day-2", description: "Studio A is booked for Jonas next Monday (14 December) 09:00–17:00 as 'Music video — Lanterns day 2' with the FX6 and the light kit.",
      check: bookingsTask({ "Music video Lanterns day 2": { room: "studioA", week: 1, day: 0, start: "09:00", end: "17:00", person: "jonas", gear: ["fx6", "lights"] } }) },
    { id: "fx6-days", description: "On which weekdays this week is the FX6 camera booked? Return the days' names.",
      answer_schema: { type: "array", items: { type: "string" } },
      check: (returned) => {
        const names = ["mon", "tue", "wed", "thu", "fri"];
        const days = names.filter((_, d) => live().some((b) => b.gear.includes("fx6") && occurs(b, 0, d)));
        const got = Array.isArray(returned) ? returned.map((x) => norm(x).slice(0, 3)).sort() : [];
        const ok = got.length === days.length && [...days].sort().every((d, i) => d === got[i]) && untouchedAll();
        return result(ok, `returned ${JSON.stringify(returned)}; the FX6 is booked on ${days.join(", ")}`);
      } },
    { id: "podcast-weekly-thursday", description: "Ep. 42's booking is 'Podcast: Frame Rate (weekly)', repeating weekly on Thursdays 15:00–16:00 in the booth; Monday's ep. 41 is cancelled.",
      check: bookingsTask({ 12: { day: 3, repeat: "weekly", title: "Podcast: Frame Rate (weekly)" }, 5: { cancelled: true } }) },
    { id: "audiobook-3-later", description: "Friday's 'Audiobook — chapter 3' runs an hour later, 12:00–13:30.",
      check: bookingsTask({ 19: { start: "12:00", end: "13:30" } }) },
    { id: "swap-thursday-suites", description: "On Thursday the sound mix is in Edit Suite 1 and the Harbour doc review in Edit Suite 2, same times.",
      check: bookingsTask({ 13: { room: "edit1" }, 14: { room: "edit2" } }) },
    { id: "most-hours", description: "Who has the most hours booked this week, and how many? Return {person, hours}.",
      answer_schema: { type: "object", properties: { person: { type: "string" }, hours: { type: "number" } }, required: ["person", "hours"] },
      check: (returned) => {
        const hours = D.people.map((p) => [p, live().filter((b) => b.person === p.id)
          .reduce((sum, b) => sum + [0, 1, 2, 3, 4].filter((d) => occurs(b, 0, d)).length * (b.end - b.start), 0) / 60]);
        const [top, h] = hours.reduce((best, x) => (x[1] > best[1] ? x : best));
        const r = returned && typeof returned === "object" ? returned : {};
        const ok = typeof r.person === "string" && norm(r.person).includes(norm(top.name.split(" ")[0]))
          && r.hours === h && untouchedAll();
        return result(ok, `returned ${JSON.stringify(returned)}; most hours: ${top.name}, ${h} h`);
      } },
    { id: "velo-reshuffle", description: "The Velo ad green screen is on Wednesday 09:00–12:00 in Studio B with the A7S III and the teleprompter; its VO record is in the booth on Wednesday 13:00–14:00; nothing clashes.",
      check: bookingsTask({ 6: { day: 2, gear: ["a7s", "prompter"] }, 8: { day: 2, start: "13:00", end: "14:00" } }) },
    { id: "lanterns-thursday-selects", description: "The Lanterns shoot is on Thursday (same time, Studio A) and Edit Suite 1 is booked for Priya on Friday 09:00–12:00 as 'Lanterns — selects'.",
      check: bookingsTask({ 10: { day: 3 }, "Lanterns selects": { room: "edit1", day: 4, start: "09:00", end: "12:00", person: "priya" } }) },
    { id: "colour-weekly-thursday", description: "Edit Suite 2 is booked for Hana every Thursday 14:00–18:00 from this week as 'Colour — weekly block'.",
      check: bookingsTask({ "Colour weekly block": { room: "edit2", day: 3, start: "14:00", end: "18:00", person: "hana", repeat: "weekly" } }) },
    { id: "studio-a-hours", description: "The calendar shows Studio A only; how many hours is Studio A booked this week? Return the number.",
      answer_schema: { type: "number" },
      check: (returned) => result(S.filter === "studioA" && returned === hoursIn("studioA") && untouchedAll(),
        `filter: ${S.filter}; returned ${JSON.stringify(returned)}; Studio A is booked ${hoursIn("studioA")} h`) },
    { id: "free-thursday-morning", description: "Which rooms are free all Thursday morning, 09:00–12:00? Return their names.",
      answer_schema: { type: "array", items: { type: "string" } },
      check: (returned) => {
        const free = freeRooms(3, "09:00", "12:00").sort();
        const got = Array.isArray(returned) ? returned.map(roomIdOf).sort() : [];
        const ok = got.length === free.length && got.every((r, i) => r === free[i]) && untouchedAll();
        return result(ok, `returned ${JSON.stringify(returned)}; free: ${free.join(", ")}`);
      } },
    { id: "velo-pickups-morning", description: "Studio B is booked for Jonas on Thursday 09:00–12:00 as 'Velo ad — pickups' with the FX6.",
      check: bookingsTask({ "Velo ad pickups": { room: "studioB", day: 3, start: "09:00", end: "12:00", person: "jonas", gear: ["fx6"] } }) },
    { id: "velo-pickups-lights", description: "'Velo ad — pickups' runs 09:00–12:30 on Thursday in Studio B with the FX6 and the light kit.",
      check: bookingsTask({ "Velo ad pickups": { room: "studioB", day: 3, start: "09:00", end: "12:30", person: "jonas", gear: ["fx6", "lights"] } }) },
    { id: "podcast-43-afternoon", description: "The Podcast Booth is booked for Sam on Thursday 15:00–16:30 as 'Podcast: Frame Rate ep. 43' with the SM7B mics and the Zoom H6.",
      check: bookingsTask({ "Podcast Frame Rate ep 43": { room: "booth", day: 3, start: "15:00", end: "16:30", person: "sam", gear: ["sm7b", "h6"] } }) },
    { id: "harbour-colour-wednesday", description: "Edit Suite 2 is booked for Hana on Wednesday 13:00–16:00 as 'Colour — Harbour doc'.",
      check: bookingsTask({ "Colour Harbour doc": { room: "edit2", day: 2, start: "13:00", end: "16:00", person: "hana" } }) },
    { id: "alder-slips-a-week", description: "Alder Coffee moved a week: the shoot, the grade and the edit are a week later (same day, time, room, gear), the client review is cancelled.",
      check: bookingsTask({ 2: { week: 1 }, 9: { week: 1 }, 17: { cancelled: true }, 18: { week: 1 } }) },
    { id: "velo-finish", description: "Velo ad: a grade with Hana in Edit Suite 2 on Wednesday 09:00–13:00, the sound mix on Friday 09:00–12:00, a client review with Maya in Studio A on Friday 14:00–15:00.",
      check: bookingsTask({ "Grade Velo ad": { room: "edit2", day: 2, start: "09:00", end: "13:00", person: "hana" }, 13: { day: 4 },
        "Client review Velo ad": { room: "studioA", day: 4, start: "14:00", end: "15:00", person: "maya" } }) },
    { id: "birch-first-plan", description: "Birch Bakery: shoot in Studio A Tuesday 13:00–17:00 (Jonas, FX6, light kit), edit in Edit Suite 2 Wednesday 09:00–17:00 (Priya), VO in the Podcast Booth Tuesday 16:00–17:00 (Leo, SM7B).",
      check: bookingsTask({ "Birch Bakery shoot": { room: "studioA", day: 1, start: "13:00", end: "17:00", person: "jonas", gear: ["fx6", "lights"] },
        "Birch Bakery edit": { room: "edit2", day: 2, start: "09:00", end: "17:00", person: "priya" },
        "Birch Bakery VO": { room: "booth", day: 1, start: "16:00", end: "17:00", person: "leo", gear: ["sm7b"] } }) },
    { id: "birch-moved", description: "Birch Bakery after the client's change: the shoot on Thursday, the edit on Friday (same hours and rooms), the VO still on Tuesday.",
      check: bookingsTask({ "Birch Bakery shoot": { room: "studioA", day: 3, start: "13:00", end: "17:00", person: "jonas", gear: ["fx6", "lights"] },
        "Birch Bakery edit": { room: "edit2", day: 4, start: "09:00", end: "17:00", person: "priya" },
        "Birch Bakery VO": { room: "booth", day: 1, start: "16:00", end: "17:00", person: "leo", gear: ["sm7b"] } }) },
    { id: "audiobook-earliest", description: "'Audiobook — chapters 4–5' is booked for Leo in the Podcast Booth in the earliest 4-hour block this week (Tuesday 11:00–15:00) with the SM7B mics and the Zoom H6.",
      check: bookingsTask({ "Audiobook chapters 4 5": { room: "booth", day: 1, start: "11:00", end: "15:00", person: "leo", gear: ["sm7b", "h6"] } }) },
    { id: "audiobook-weekly-answered", description: "The 4-hour audiobook block (Tuesday 11:00–15:00, Podcast Booth) repeats weekly; return its day and start time.",
      answer_schema: { type: "string" },
      check: (returned) => {
        const text = norm(returned === null ? "" : returned);
        const said = /\btue/.test(text) && /\b11\b/.test(text);
        const r = bookingsTask({ "Audiobook chapters 4 5": { room: "booth", day: 1, start: "11:00", end: "15:00", person: "leo", gear: ["sm7b", "h6"], repeat: "weekly" } })();
        return result(r.success && said, `${r.message}; returned ${JSON.stringify(returned)}`);
      } },
  ];

  window.getTasks = () => TASKS.map(({ id, description, answer_schema }) =>
    Object.assign({ id, description }, answer_schema ? { answer_schema } : {}));
  window.evaluateTask = (id, returned) => {
    const task = TASKS.find((t) => t.id === id);
    if (!task) return result(false, `no task ${id}`);
    return task.check(returned === undefined ? null : returned);
  };
  window.reset = () => { window.Studio.reset(); return true; };
  window.getState = () => ({
    filter: S.filter,
    week: S.week,
    day: S.day,
    open: S.draft ? S.draft.id : null,
    conflicts: conflicts().length,
    bookings: live().length,
    titles: live().map((b) => b.title),
  });

  window.reset();
})();
