// The participant view: polls /api/state, draws the page it names, posts actions to
// /api/act. A page is drawn once per page number; a trial's live parts (status,
// conversation, what is awaited, the desktop) are updated in place so a participant's
// typing and focus are never lost to a redraw.
import RFB from '/novnc/core/rfb.js';

const POLL_MS = 400;
const main = document.getElementById('main');
let shown = null;      // the number of the page drawn
let state = null;      // the last state polled
let rfb = null;        // noVNC, during a trial
let fromDraft = false; // the message box was filled from the suggestion

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === 'text') node.textContent = value;
    else if (key === 'html') node.innerHTML = value;  // only the server's rendered consent
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (value !== false && value !== null && value !== undefined) node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

async function act(action) {
  const response = await fetch('/api/act', {
    method: 'POST',
    headers: {'content-type': 'application/json'},
    body: JSON.stringify({number: state.number, ...action}),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) return body;
  await poll();
  return null;
}

function heading(text) {
  return el('h1', {id: 'heading', tabindex: '-1', text});
}

function page(node, className = '') {
  disconnectDesktop();
  main.className = className;
  main.replaceChildren(...node);
  // The new page's heading takes the focus, so a keyboard (and a screen reader)
  // starts at its top.
  const first = main.querySelector('[autofocus]') || document.getElementById('heading');
  if (first) first.focus();
}

function drawConsent(s) {
  page([
    heading('Consent'),
    el('div', {class: 'consent', html: s.html}),
    el('p', {}, el('button', {text: 'I agree', onclick: () => act({do: 'consent', agree: true})}),
      el('button', {class: 'secondary', text: 'I do not agree',
        onclick: () => act({do: 'consent', agree: false})})),
  ]);
}

function drawBrief(s) {
  const later = s.later.length
    ? [el('h2', {text: 'Later in the task'}), el('ol', {}, ...s.later.map(t => el('li', {text: t})))]
    : [];
  page([
    heading(s.practice ? `Practice: ${s.title}` : s.title),
    s.practice ? el('p', {text: 'This is a practice task: it does not count.'}) : null,
    el('h2', {text: 'Your task'}),
    el('p', {class: 'instruction', text: s.instruction}),
    ...later,
    el('p', {text: s.how}),
    el('button', {autofocus: '', text: 'Start', onclick: () => act({do: 'continue'})}),
  ].filter(Boolean));
}

function drawPlain(title, text, button) {
  page([heading(title), el('p', {text}), button].filter(Boolean));
}

function drawBreak(s) {
  const up = s.seconds >= 120 ? `${Math.round(s.seconds / 60)} minutes` : `${Math.round(s.seconds)} seconds`;
  drawPlain('Break', `${s.text} (up to ${up})`,
    el('button', {autofocus: '', text: 'Continue', onclick: () => act({do: 'continue'})}));
}

// --- questionnaires -------------------------------------------------------------

function itemField(item) {
  const name = `item-${item.id}`;
  const required = item.required ? ' (required)' : '';
  const problem = el('p', {class: 'problem', id: `${name}-problem`, role: 'alert'});
  if (item.kind === 'scale' || item.kind === 'likert' || item.kind === 'choice' ||
      item.kind === 'multiple') {
    const many = item.kind === 'multiple';
    const choices = item.options || item.points;
    const perPoint = item.anchors && item.anchors.length === choices.length;
    const inputs = choices.map((value, n) => el('label', {},
      el('input', {type: many ? 'checkbox' : 'radio', name, value: String(value),
        'data-kind': item.kind}),
      String(perPoint ? `${value}: ${item.anchors[n]}` : value)));
    const ends = item.anchors && item.anchors.length === 2
      ? el('div', {class: 'anchors', 'aria-hidden': 'true'},
          el('span', {text: item.anchors[0]}), el('span', {text: item.anchors[1]}))
      : null;
    const legendText = item.prompt + required +
      (ends ? ` (${item.anchors[0]} to ${item.anchors[1]})` : '');
    return el('fieldset', {'data-item': item.id, 'aria-describedby': `${name}-problem`},
      el('legend', {text: legendText}),
      el('div', {class: item.options ? 'options' : 'points'},
        ...inputs),
      ends, problem);
  }
  const input = item.kind === 'text'
    ? el('textarea', {id: name, rows: '3', 'aria-describedby': `${name}-problem`})
    : el('input', {id: name, type: 'number', step: 'any', min: item.min ?? false,
        max: item.max ?? false, 'aria-describedby': `${name}-problem`});
  const range = item.kind === 'number' && (item.min !== null || item.max !== null)
    ? el('p', {class: 'hint', text: `From ${item.min ?? '−∞'} to ${item.max ?? '∞'}${item.unit ? ' ' + item.unit : ''}`})
    : null;
  return el('fieldset', {'data-item': item.id},
    el('label', {for: name, text: item.prompt + required}), range, input, problem);
}

function collect(items) {
  const answers = {};
  for (const item of items) {
    const name = `item-${item.id}`;
    if (item.kind === 'text' || item.kind === 'number') {
      const value = document.getElementById(name).value;
      answers[item.id] = value === '' ? null : (item.kind === 'number' ? Number(value) : value);
    } else if (item.kind === 'multiple') {
      const checked = [...document.querySelectorAll(`input[name="${name}"]:checked`)];
      answers[item.id] = checked.map(box => box.value);
    } else {
      const picked = document.querySelector(`input[name="${name}"]:checked`);
      answers[item.id] = picked === null ? null
        : (item.kind === 'choice' ? picked.value : Number(picked.value));
    }
  }
  return answers;
}

function drawQuestionnaire(s) {
  const form = el('form', {novalidate: ''}, ...s.items.map(itemField),
    el('button', {type: 'submit', text: 'Submit answers'}));
  const summary = el('p', {class: 'problem', role: 'alert', id: 'form-problem', tabindex: '-1'});
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const p of form.querySelectorAll('.problem')) p.textContent = '';
    const refused = await act({do: 'answers', answers: collect(s.items)});
    if (!refused) return;
    summary.textContent = refused.error || 'Your answers were not taken.';
    let first = null;
    for (const [id, why] of Object.entries(refused.problems || {})) {
      const where = document.getElementById(`item-${id}-problem`);
      if (where) where.textContent = why;
      first = first || form.querySelector(`[data-item="${id}"] input, [data-item="${id}"] textarea`);
    }
    (first || summary).focus();
  });
  page([heading(s.title), el('p', {text: s.intro}), summary, form]);
}

// --- the trial --------------------------------------------------------------------

function drawTrial(s) {
  const box = el('textarea', {id: 'message', rows: '3'});
  box.addEventListener('input', () => { if (box.value === '') fromDraft = false; });
  box.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) send();
  });
  const useSuggestion = el('button', {id: 'use-suggestion', type: 'button', class: 'secondary',
    text: 'Use the suggestion', onclick: () => {
      box.value = state.suggestion || ''; fromDraft = true; box.focus();
    }});
  const controls = [
    el('button', {id: 'send', type: 'button', text: 'Send', onclick: send}),
    el('button', {id: 'accept', type: 'button', class: 'secondary',
      text: 'Accept the result', onclick: () => act({do: 'accept'})}),
  ];
  if (s.alone) {
    controls.push(el('button', {id: 'done', type: 'button',
      text: 'Done', onclick: () => act({do: 'done', answer: box.value})}));
  }
  page([
    heading(s.title),
    el('section', {id: 'desk', 'aria-label': 'The desktop'},
      el('div', {id: 'screen'}),
      el('p', {id: 'desk-status', text: 'Connecting to the desktop…'}),
      s.may_act ? el('p', {class: 'hint',
        text: 'Click the desktop to use it. Press F6 to move the keyboard to your message.'}) : null),
    el('section', {id: 'side', 'aria-label': 'The conversation'},
      el('p', {id: 'status', role: 'status'}),
      el('details', {}, el('summary', {text: 'Your task'}), el('p', {text: s.instruction})),
      el('ol', {id: 'talk', role: 'log', 'aria-label': 'Messages'}),
      el('div', {id: 'compose'},
        el('p', {id: 'suggestion', class: 'suggestion', hidden: ''}),
        useSuggestion,
        el('label', {for: 'message', id: 'message-label', text: 'Your message'}),
        box,
        el('p', {id: 'send-problem', class: 'problem', role: 'alert'}),
        el('p', {}, ...controls))),
  ], 'trial');
  updateTrial(s);
}

async function send() {
  const box = document.getElementById('message');
  const refused = await act({do: 'send', text: box.value, from_draft: fromDraft});
  const problem = document.getElementById('send-problem');
  if (refused) { problem.textContent = refused.error; return; }
  problem.textContent = '';
  box.value = '';
  fromDraft = false;
}

function updateTrial(s) {
  document.getElementById('status').textContent = s.status;
  const talk = document.getElementById('talk');
  if (talk.children.length !== s.conversation.length) {
    talk.replaceChildren(...s.conversation.map(m => el('li', {class: m.who},
      el('span', {class: 'who', text: {assistant: 'Assistant', you: 'You', study: 'Task'}[m.who] + ': '}),
      el('span', {text: m.text}))));
    talk.scrollTop = talk.scrollHeight;
  }
  const suggestion = document.getElementById('suggestion');
  suggestion.hidden = !s.suggestion;
  suggestion.textContent = s.suggestion ? `Suggested message: ${s.suggestion}` : '';
  document.getElementById('use-suggestion').hidden = !s.suggestion;
  document.getElementById('message-label').textContent = {
    answer: 'Your answer', review: 'What should change (or accept the result)',
    phase: 'Your message',
  }[s.waiting] || (s.alone ? 'Your answer, if the task asks for one' : 'Your message');
  document.getElementById('send').hidden = !s.may_send;
  document.getElementById('message').disabled = !s.may_send && !s.alone;
  document.getElementById('accept').hidden = s.waiting !== 'review';
  connectDesktop(s.desktop, s.may_act);
}

function connectDesktop(desktop, mayAct) {
  if (!desktop || rfb) return;
  const screen = document.getElementById('screen');
  const said = document.getElementById('desk-status');
  const url = `ws://${location.host}/desktop`;
  rfb = new RFB(screen, url, {credentials: {password: desktop.password}});
  rfb.viewOnly = desktop.view_only;
  rfb.scaleViewport = true;
  rfb.focusOnClick = mayAct;
  rfb.addEventListener('connect', () => {
    said.textContent = mayAct ? 'Connected: you may use the desktop.' : 'Connected (view only).';
  });
  rfb.addEventListener('disconnect', () => {
    said.textContent = 'Disconnected from the desktop; reconnecting…';
    rfb = null;  // the next poll connects again while the trial goes on
  });
}

function disconnectDesktop() {
  if (rfb) { const old = rfb; rfb = null; old.disconnect(); }
}

// F6 takes the keyboard back from the desktop (noVNC sends every other key to it).
window.addEventListener('keydown', (event) => {
  if (event.key === 'F6' && document.getElementById('message')) {
    event.preventDefault();
    event.stopPropagation();
    document.getElementById('message').focus();
  }
}, true);

const DRAW = {
  consent: drawConsent,
  brief: drawBrief,
  trial: drawTrial,
  questionnaire: drawQuestionnaire,
  break: drawBreak,
  waiting: s => drawPlain('Please wait', s.text),
  end: s => drawPlain('Thank you', s.text),
};

async function poll() {
  let response;
  try {
    response = await fetch('/api/state', {cache: 'no-store'});
  } catch (error) {
    return;  // the server is gone (the session ended); the page stays as it was
  }
  if (response.status === 403) {
    drawPlain('Not allowed', 'Open the address DeskLoop printed for this session.');
    return;
  }
  state = await response.json();
  document.title = `Study session: ${state.page}`;
  if (state.number !== shown) {
    shown = state.number;
    DRAW[state.page](state);
  } else if (state.page === 'trial') {
    updateTrial(state);
  }
}

async function loop() {
  await poll();
  setTimeout(loop, POLL_MS);
}
loop();
