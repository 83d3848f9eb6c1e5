// The tagger and its page contract. State: each item's tags and reviewed flag, and
// which item is selected. render() redraws from the state and puts the selection, its
// tags and the review progress in the title, which reference solutions wait on.
(function () {
  "use strict";
  let items = [];
  let selected = 0;

  function render() {
    const list = document.getElementById("items");
    list.textContent = "";
    items.forEach((item, i) => {
      const li = document.createElement("li");
      li.className = i === selected ? "selected" : "";
      li.innerHTML = '<div class="file"></div><div class="sub"></div>';
      li.querySelector(".file").textContent = item.file + (item.reviewed ? " ✓" : "");
      li.querySelector(".sub").textContent = `${item.kind} · ${item.tags.join(", ") || "no tags"}`;
      li.addEventListener("click", () => { selected = i; render(); });
      list.appendChild(li);
    });
    const item = items[selected];
    document.getElementById("name").textContent = item.file;
    document.getElementById("kind").textContent = item.kind;
    document.getElementById("preview").style.background = item.look;
    const chips = document.getElementById("chips");
    chips.textContent = "";
    for (const tag of item.tags) {
      const chip = document.createElement("span");
      chip.className = "chip";
      chip.textContent = tag;
      const x = document.createElement("button");
      x.textContent = "✕";
      x.title = "Remove tag " + tag;
      x.addEventListener("click", () => { item.tags = item.tags.filter((t) => t !== tag); render(); });
      chip.appendChild(x);
      chips.appendChild(chip);
    }
    const reviewed = document.getElementById("reviewed");
    reviewed.textContent = item.reviewed ? "Reviewed ✓" : "Mark as reviewed";
    reviewed.className = item.reviewed ? "on" : "";
    const done = items.filter((i) => i.reviewed).length;
    document.getElementById("progress").textContent = `${done}/${items.length} reviewed`;
    document.title = `Media Library: ${item.file} [${item.tags.join(", ")}]${item.reviewed ? " reviewed" : ""} · ${done}/${items.length} reviewed`;
  }

  document.getElementById("tag-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = document.getElementById("new-tag");
    const tag = input.value.trim().toLowerCase();
    const item = items[selected];
    if (tag && !item.tags.includes(tag)) item.tags.push(tag);
    input.value = "";
    render();
  });
  document.getElementById("reviewed").addEventListener("click", () => {
    items[selected].reviewed = !items[selected].reviewed;
    render();
  });

  // ---- page contract ------------------------------------------------------------
  const result = (success, message) => ({ success, message });
  const item = (file) => items.find((i) => i.file === file);
  const start = (file) => window.MEDIA.find((m) => m.file === file);
  const same = (a, b) => a.length === b.length && a.every((t) => b.includes(t));
  const has = (file, tags) => same(item(file).tags, tags);
  const says = (file) => `${file}: [${item(file).tags.join(", ")}]${item(file).reviewed ? ", reviewed" : ""}`;
  // Every item not named is as it started (tags and not reviewed).
  const othersUntouched = (except) => items.every((i) => except.includes(i.file)
    || (same(i.tags, start(i.file).tags) && !i.reviewed));

  const TASKS = [
    {
      id: "tag-sunset-beach",
      description: "Add the tag 'beach' to sunset-pier.jpg.",
      check: () => result(has("sunset-pier.jpg", ["sunset", "beach"]) && othersUntouched(["sunset-pier.jpg"]), says("sunset-pier.jpg")),
    },
    {
      id: "finalize-interview",
      description: "interview-01.mp4 is final: replace its 'draft' tag with 'final'.",
      check: () => result(has("interview-01.mp4", ["interview", "final"]) && othersUntouched(["interview-01.mp4"]), says("interview-01.mp4")),
    },
    {
      id: "interview-02-reviewed",
      description: "interview-02.mp4: no 'draft' tag, and marked as reviewed.",
      check: () => result(has("interview-02.mp4", ["interview"]) && item("interview-02.mp4").reviewed
        && othersUntouched(["interview-02.mp4"]), says("interview-02.mp4")),
    },
    {
      id: "drone-algarve",
      description: "drone-coast.mp4 is tagged with its location, 'algarve'.",
      check: () => result(has("drone-coast.mp4", ["aerial", "algarve"]) && othersUntouched(["drone-coast.mp4"]), says("drone-coast.mp4")),
    },
    {
      id: "audio-pass",
      description: "Every audio file is tagged 'audio' and marked as reviewed; nothing else changed.",
      check: () => {
        const audio = items.filter((i) => i.kind === "audio");
        const ok = audio.every((i) => same(i.tags, [...start(i.file).tags, "audio"]) && i.reviewed)
          && othersUntouched(audio.map((i) => i.file));
        return result(ok, audio.map((i) => says(i.file)).join("; "));
      },
    },
    {
      id: "count-drafts",
      description: "How many files are tagged 'draft'? Return the number.",
      answer_schema: { type: "integer" },
      check: (returned) => {
        const n = items.filter((i) => i.tags.includes("draft")).length;
        return result(returned === n, `returned ${JSON.stringify(returned)}, files tagged draft: ${n}`);
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
  window.reset = () => {
    items = window.MEDIA.map((m) => ({ ...m, tags: [...m.tags], reviewed: false }));
    selected = 0;
    document.getElementById("new-tag").value = "";
    render();
    return true;
  };
  window.getState = () => ({
    selected: items[selected].file,
    tags: Object.fromEntries(items.map((i) => [i.file, [...i.tags]])),
    reviewed: items.filter((i) => i.reviewed).map((i) => i.file),
  });

  window.reset();
})();
