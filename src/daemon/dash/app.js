// loom dashboard: four views (#/cluster, #/queue, #/usage, #/job/N) over loomd's
// /api/rpc, updated live from /events (Server-Sent Events). Plain JavaScript.
'use strict';

const S = { csrf: null, view: null, timers: [], refresh: null, queue: null, job: null, usage: 'all' };
const PAGE = 50;
const TERMINAL = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT'];
const $ = (sel) => document.querySelector(sel);

function esc(v) {
  return String(v == null ? '' : v).replace(/[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}
function bytes(n) {
  if (n == null) return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + ' ' + u[i];
}
function dur(s) {
  if (s == null || isNaN(s)) return '—';
  s = Math.max(0, Math.floor(s));
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = s % 60;
  return (h ? h + 'h ' : '') + (h || m ? m + 'm ' : '') + x + 's';
}
function since(t) { return t ? (Date.now() - Date.parse(t)) / 1000 : null; }
function badge(st) { return `<span class="state ${esc(st)}">${esc(st)}</span>`; }
function bar(frac) {
  const p = Math.round(Math.min(1, Math.max(0, frac || 0)) * 100);
  return `<span class="bar" title="${p}%"><i data-w="${p}"></i></span> ${p}%`;
}
// Bar widths are set through the CSSOM: the page's Content-Security-Policy
// allows no inline style attributes.
function render(html) {
  const v = $('#view');
  v.innerHTML = html;
  v.querySelectorAll('.bar > i[data-w]').forEach((i) => { i.style.width = i.dataset.w + '%'; });
}
function showError(msg) {
  const e = $('#error');
  e.textContent = msg;
  e.hidden = false;
  clearTimeout(showError.t);
  showError.t = setTimeout(() => { e.hidden = true; }, 6000);
}

async function api(method, params) {
  const r = await fetch('/api/rpc', {
    method: 'POST', credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-Loom-CSRF': S.csrf },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: params || {} }),
  });
  if (r.status === 401) { location.reload(); throw new Error('session ended'); }
  if (!r.ok) throw new Error(`${method}: HTTP ${r.status}: ${await r.text()}`);
  const j = await r.json();
  if (j.error) throw new Error(`${method}: ${j.error.message}${j.error.data ? ': ' + JSON.stringify(j.error.data) : ''}`);
  return j.result;
}

function every(ms, fn) { S.timers.push(setInterval(fn, ms)); }
function soon(fn) { clearTimeout(S.refresh); S.refresh = setTimeout(fn, 200); }

// ------------------------------------------------------------------ cluster

async function viewCluster() {
  const [nodes, info, snap] = await Promise.all([
    api('node.list'), api('server.info'),
    api('monitor.snapshot', { groups: 'cpu,memory,gpu' }).catch(() => null)]);
  if (S.view !== 'cluster') return;
  const sc = info.scheduler || {};
  const jobs = info.jobs || {};
  let h = `<div class="cards">
    <div class="card">Pending<b id="c-pending">${jobs.PENDING || 0}</b></div>
    <div class="card">Running<b id="c-running">${jobs.RUNNING || 0}</b></div>
    <div class="card">GPUs in use<b>${((sc.gpu_milli_used || 0) / 1000).toFixed(1)} / ${((sc.gpu_milli_total || 0) / 1000).toFixed(0)}</b></div>
    <div class="card">GPU occupancy<b>${sc.gpu_occupancy != null ? (sc.gpu_occupancy * 100).toFixed(0) + '%' : '—'}</b></div>
  </div><h2>Nodes</h2><table id="nodes"><thead><tr><th>node</th><th>state</th><th>CPU allocated</th>
  <th>memory allocated</th><th>GPUs (share allocated)</th><th>jobs</th></tr></thead><tbody>`;
  for (const n of nodes.nodes) {
    const gpus = (n.gpus || []).map((g) => `<span class="gpu">${esc(n.gpu_type)} ${g.index} ${bar(1 - g.free_milli / 1000)}</span>`).join('');
    h += `<tr data-node="${esc(n.name)}"><td>${esc(n.name)}</td><td>${n.available ? 'up' : '<b>down</b>'}</td>
      <td>${bar(1 - n.cpu_free_milli / Math.max(1, n.cpu_milli))} of ${(n.cpu_milli / 1000).toFixed(0)}</td>
      <td>${bar(1 - n.memory_free_bytes / Math.max(1, n.memory_bytes))} of ${bytes(n.memory_bytes)}</td>
      <td>${gpus || '<span class="muted">none</span>'}</td>
      <td>${(n.jobs || []).map((id) => `<a href="#/job/${id}">${id}</a>`).join(' ')}</td></tr>`;
  }
  if (!nodes.nodes.length) h += '<tr><td colspan="6" class="muted">no nodes (loomd runs with --executor none)</td></tr>';
  h += '</tbody></table><h2>Utilization (this host, from the monitor)</h2>' + utilization(snap);
  render(h);
}

function utilization(snap) {
  if (!snap) return '<p class="muted">monitor unavailable</p>';
  const s = snap.snapshot || {};
  let h = '<table id="util"><thead><tr><th>device</th><th>utilization</th><th>memory</th></tr></thead><tbody>';
  if (s.cpu && s.cpu.available) h += `<tr><td>CPU (${(s.cpu.cores || []).length} cores)</td><td>${bar(s.cpu.busy_fraction)}</td><td></td></tr>`;
  if (s.memory && s.memory.available) h += `<tr><td>memory</td><td></td><td>${bar(s.memory.used_bytes / s.memory.total_bytes)} of ${bytes(s.memory.total_bytes)}</td></tr>`;
  if (s.gpu && s.gpu.available) {
    for (const g of s.gpu.devices || []) {
      h += `<tr><td>GPU ${g.index} ${esc(g.name)}</td><td>${g.utilization_gpu_ratio != null ? bar(g.utilization_gpu_ratio) : '—'}</td>
        <td>${g.memory_total_bytes ? bar(g.memory_used_bytes / g.memory_total_bytes) + ' of ' + bytes(g.memory_total_bytes) : '—'}</td></tr>`;
    }
  } else {
    h += `<tr><td>GPU</td><td colspan="2" class="muted">${esc((s.gpu && s.gpu.reason) || 'no GPU here')}</td></tr>`;
  }
  return h + '</tbody></table>';
}

// -------------------------------------------------------------------- queue

// Times in the browser's zone, named (a bare "10:03:12" leaves the reader
// guessing whether it is UTC, loomd's or theirs).
const TZ = { timeZoneName: 'short' };
function when(t) { return new Date(t).toLocaleString(undefined, TZ); }

// Pending and running in queue order (oldest first); finished newest
// first, the jobs that just ended on the first page.
const TABS = {
  pending: { label: 'Pending', state: ['PENDING'], newest: false },
  running: { label: 'Running', state: ['RUNNING'], newest: false },
  finished: { label: 'Finished', state: TERMINAL, newest: true },
};

async function viewQueue() {
  if (!S.queue) S.queue = { tab: 'pending', cursors: [null], page: 0 };
  const q = S.queue;
  const [res, info] = await Promise.all([
    api('job.list', { state: TABS[q.tab].state, limit: PAGE, cursor: q.cursors[q.page], newest_first: TABS[q.tab].newest }),
    api('server.info')]);
  const total = TABS[q.tab].state.reduce((n, st) => n + ((info.jobs || {})[st] || 0), 0);
  if (S.view !== 'queue') return;
  q.next = res.next_cursor;
  const tabs = Object.entries(TABS).map(([k, t]) =>
    `<button type="button" data-tab="${k}" class="${k === q.tab ? 'active' : ''}">${t.label}</button>`).join(' ');
  let h = `<div class="tabs">${tabs}</div><div class="pager">
    <button type="button" id="prev" ${q.page ? '' : 'disabled'}>‹ Previous</button>
    <span id="pageno">page ${q.page + 1} of ${Math.max(1, Math.ceil(total / PAGE))}</span>
    <span class="muted">(${total} jobs)</span>
    <button type="button" id="next" ${q.next ? '' : 'disabled'}>Next ›</button></div>
    <table id="jobs"><thead><tr><th>id</th><th>name</th><th>state</th><th>${q.tab === 'pending' ? 'reason' : q.tab === 'running' ? 'elapsed' : 'ended'}</th>
    <th>user</th><th>resources</th><th>node</th><th>submitted</th></tr></thead><tbody>`;
  for (const j of res.jobs) h += jobRow(j, q.tab);
  if (!res.jobs.length) h += '<tr><td colspan="8" class="muted">no jobs</td></tr>';
  render(h + '</tbody></table>');
  document.querySelectorAll('[data-tab]').forEach((b) => b.addEventListener('click', () => {
    S.queue = { tab: b.dataset.tab, cursors: [null], page: 0 };
    viewQueue().catch((e) => showError(e.message));
  }));
  $('#prev').addEventListener('click', () => { q.page--; viewQueue().catch((e) => showError(e.message)); });
  $('#next').addEventListener('click', () => { q.cursors[q.page + 1] = q.next; q.page++; viewQueue().catch((e) => showError(e.message)); });
}

function resources(r) {
  const p = [`${r.cpus} CPU`];
  if (r.memory) p.push(bytes(r.memory));
  if (r.gpus) p.push(`${r.gpus} GPU${r.gpu_share && r.gpu_share !== 1000 ? ' ×' + (r.gpu_share / 1000) : ''}`);
  if (r.gpu_memory) p.push(bytes(r.gpu_memory) + ' GPU mem');
  return p.join(', ');
}

function jobRow(j, tab) {
  let col = '';
  if (tab === 'pending') col = j.reason ? esc(j.reason) : '<span class="muted">—</span>';
  else if (tab === 'running') col = `<span class="elapsed" data-start="${esc(j.start_time)}">${dur(since(j.start_time))}</span>`;
  else col = esc(j.end_time ? when(j.end_time) : '');
  return `<tr data-id="${j.id}"><td><a href="#/job/${j.id}">${j.id}</a></td><td>${esc(j.name)}</td>
    <td class="st">${badge(j.state)}</td><td>${col}</td><td>${esc(owner(j))}</td><td>${esc(resources(j.resources || {}))}</td>
    <td>${esc(j.run && j.run.node || '')}</td><td>${esc(new Date(j.submit_time).toLocaleTimeString(undefined, TZ))}</td></tr>`;
}

function owner(j) { return (j.owner && j.owner.user) || '—'; }

function tickElapsed() {
  document.querySelectorAll('.elapsed').forEach((e) => { e.textContent = dur(since(e.dataset.start)); });
}

// -------------------------------------------------------------------- usage

// What each user and account held (usage.report), over a window; re-read
// when a job ends or starts (events) and every 10 s while jobs run.
const WINDOWS = { all: ['All time', 0], day: ['Last 24 hours', 86400], week: ['Last 7 days', 7 * 86400] };

function gibHours(s) { return s == null ? '—' : (s / 3600).toFixed(s >= 360000 ? 0 : 3); }

async function viewUsage() {
  const w = WINDOWS[S.usage] || WINDOWS.all;
  const params = w[1] ? { since: new Date(Date.now() - w[1] * 1000).toISOString().replace(/\.\d+Z$/, 'Z') } : {};
  const res = await api('usage.report', params);
  if (S.view !== 'usage') return;
  const rows = res.rows || [];
  const total = rows.reduce((t, r) => {
    for (const k of ['jobs', 'gpu_seconds', 'cpu_seconds', 'memory_gib_seconds', 'wall_seconds']) t[k] += r[k] || 0;
    return t;
  }, { jobs: 0, gpu_seconds: 0, cpu_seconds: 0, memory_gib_seconds: 0, wall_seconds: 0 });
  const tabs = Object.entries(WINDOWS).map(([k, t]) =>
    `<button type="button" data-window="${k}" class="${k === S.usage ? 'active' : ''}">${t[0]}</button>`).join(' ');
  let h = `<div class="tabs">${tabs}</div>
    <p class="muted">From ${esc(res.since ? when(res.since) : 'the first job')} to
    <span id="usage-until">${esc(when(res.until))}</span>; running jobs count up to now.</p>
    <table id="usage"><thead><tr><th>user</th><th>account</th><th>jobs</th><th>GPU time</th><th>share of GPU time</th>
    <th>CPU time</th><th>memory GiB-hours</th><th>run time</th></tr></thead><tbody>`;
  for (const r of rows) {
    h += `<tr data-user="${esc(r.user)}"><td>${r.user ? esc(r.user) : '<span class="muted">no owner</span>'}</td>
      <td>${esc(r.account)}</td><td>${r.jobs}</td><td>${dur(r.gpu_seconds)}</td>
      <td>${total.gpu_seconds ? bar(r.gpu_seconds / total.gpu_seconds) : '—'}</td><td>${dur(r.cpu_seconds)}</td>
      <td>${gibHours(r.memory_gib_seconds)}</td><td>${dur(r.wall_seconds)}</td></tr>`;
  }
  if (!rows.length) h += '<tr><td colspan="8" class="muted">no job has run in this window</td></tr>';
  else {
    h += `<tr class="total"><td>all</td><td></td><td>${total.jobs}</td><td>${dur(total.gpu_seconds)}</td><td></td>
      <td>${dur(total.cpu_seconds)}</td><td>${gibHours(total.memory_gib_seconds)}</td><td>${dur(total.wall_seconds)}</td></tr>`;
  }
  render(h + '</tbody></table>');
  document.querySelectorAll('[data-window]').forEach((b) => b.addEventListener('click', () => {
    S.usage = b.dataset.window;
    viewUsage().catch((e) => showError(e.message));
  }));
}

// ---------------------------------------------------------------------- job

async function viewJob(id) {
  let job;
  try {
    ({ job } = await api('job.get', { id }));
  } catch (e) { // another user's job (multi-user): loomd's permission error, on the page
    if (S.view === 'job' && S.job.id === id) render(`<h2>Job ${id}</h2><p class="denied" id="denied">${esc(e.message)}</p>`);
    throw e;
  }
  if (S.view !== 'job' || S.job.id !== id) return;
  S.job.state = job.state;
  const live = !TERMINAL.includes(job.state);
  let h = `<h2>Job ${job.id} · ${esc(job.name)} ${badge(job.state)}
    ${live ? '<button type="button" class="danger" id="cancel">Cancel job</button>' : ''}</h2>
    <div class="grid"><div><h2>Resources</h2><dl>
    <dt>owner</dt><dd>${esc(owner(job))}${job.owner && job.owner.account ? ' · account ' + esc(job.owner.account) : ''}</dd>
    <dt>request</dt><dd>${esc(resources(job.resources || {}))}</dd>
    <dt>time limit</dt><dd>${job.time_limit ? dur(job.time_limit) : 'none'}</dd>
    <dt>priority</dt><dd>${job.priority}</dd>
    <dt>node</dt><dd>${esc(job.run && job.run.node || '—')}</dd>
    <dt>GPUs</dt><dd>${esc(job.run && job.run.gpus ? job.run.gpus.join(', ') : '—')}</dd>
    <dt>reason</dt><dd>${esc(job.reason || '—')}</dd>
    <dt>elapsed</dt><dd>${job.start_time ? `<span ${job.end_time ? '' : `class="elapsed" data-start="${esc(job.start_time)}"`}>${dur(((job.end_time ? Date.parse(job.end_time) : Date.now()) - Date.parse(job.start_time)) / 1000)}</span>` : '—'}</dd>
    </dl></div><div><h2>Estimate and measured usage</h2>${usage(job)}</div>
    <div><h2>Events</h2><ol class="timeline" id="timeline">${timeline(job.events || [])}</ol></div></div>
    <h2>Output <span class="muted" id="logpath"></span></h2><pre class="log" id="log"></pre>`;
  render(h);
  if (live) $('#cancel').addEventListener('click', () => cancelJob(job.id));
  S.job.offset = -1;
  S.job.text = '';
  await followLog();
}

function usage(job) {
  const e = job.estimate, o = job.run && job.run.outcome;
  let h = '<dl>';
  if (e) {
    h += `<dt>model</dt><dd>${esc(e.model && e.model.path)}</dd><dt>parameters</dt><dd>${esc(e.params)}</dd>
      <dt>estimated peak</dt><dd>${bytes(e.memory && e.memory.total)}</dd><dt>GPU memory request</dt><dd>${bytes(e.request_bytes)}</dd>
      <dt>step time (est.)</dt><dd>${e.step_time_s != null ? (e.step_time_s * 1000).toFixed(2) + ' ms' : '—'}</dd>`;
  } else {
    h += '<dt>estimate</dt><dd class="muted">none (the job named no model)</dd>';
  }
  if (o) {
    h += `<dt>measured peak RSS</dt><dd>${bytes(o.max_rss_bytes)}</dd><dt>CPU time</dt><dd>${dur((o.cpu_user_s || 0) + (o.cpu_sys_s || 0))}</dd>
      <dt>exit</dt><dd>${o.signal ? 'signal ' + esc(o.signal) : 'code ' + esc(o.exit_code)}</dd>`;
  } else {
    h += '<dt>measured</dt><dd class="muted">once the job has ended</dd>';
  }
  return h + '</dl>';
}

function timeline(events) {
  let prev = null;
  return events.map((ev) => {
    const t = Date.parse(ev.time);
    const gap = prev != null ? ` <span class="muted">+${dur((t - prev) / 1000)}</span>` : '';
    prev = t;
    return `<li>${ev.from ? badge(ev.from) + ' → ' : ''}${badge(ev.to)}${gap}<br>
      <span class="muted">${esc(when(t))}</span>${ev.reason ? ' · ' + esc(ev.reason) : ''}</li>`;
  }).join('');
}

async function followLog() {
  const j = S.job;
  if (!j || j.busy) return;
  j.busy = true;
  try {
    const r = await fetch(`/api/log?id=${j.id}&offset=${j.offset}`, { credentials: 'same-origin' });
    if (!r.ok) return;
    const d = await r.json();
    if (S.job !== j) return;
    const pre = $('#log');
    $('#logpath').textContent = d.path || d.error || '';
    if (d.reason && !j.text) pre.textContent = `No output: ${d.reason}`;
    if (d.data == null) return;
    if (d.offset !== j.offset && j.offset >= 0 && d.offset === 0) j.text = '';
    if (d.data.length) {
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      j.text = (j.text + d.data).slice(-65536);
      pre.textContent = j.text;
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    }
    j.offset = d.next;
  } finally {
    j.busy = false;
  }
}

async function cancelJob(id) {
  const b = $('#cancel');
  b.disabled = true;
  try {
    await api('job.cancel', { id, reason: 'cancelled from the dashboard' });
    await viewJob(id);
  } catch (e) {
    b.disabled = false;
    showError(e.message);
  }
}

// ---------------------------------------------------------- routing, live

function route() {
  S.timers.forEach(clearInterval);
  S.timers = [];
  const m = location.hash.match(/^#\/job\/(\d+)$/);
  const view = m ? 'job' : location.hash === '#/queue' ? 'queue' : location.hash === '#/usage' ? 'usage' : 'cluster';
  S.view = view;
  document.querySelectorAll('header nav a').forEach((a) => a.classList.toggle('active', a.id === 'nav-' + view));
  $('#nav-job').innerHTML = m ? `<a href="${esc(location.hash)}" class="active">Job ${m[1]}</a>` : '';
  let p;
  if (view === 'job') {
    S.job = { id: Number(m[1]), offset: -1, text: '' };
    p = viewJob(S.job.id);
    every(1000, () => { tickElapsed(); if (S.job && !TERMINAL.includes(S.job.state)) followLog(); });
  } else if (view === 'queue') {
    p = viewQueue();
    every(1000, tickElapsed);
  } else if (view === 'usage') {
    p = viewUsage();
    every(10000, () => viewUsage().catch((e) => showError(e.message)));
  } else {
    p = viewCluster();
    every(3000, () => viewCluster().catch((e) => showError(e.message)));
  }
  p.catch((e) => showError(e.message));
}

function onJobEvent(ev) {
  if (S.view === 'queue') {
    const row = document.querySelector(`#jobs tr[data-id="${ev.id}"] td.st`);
    if (row) row.innerHTML = badge(ev.state);
    soon(() => viewQueue().catch((e) => showError(e.message)));
  } else if (S.view === 'job' && S.job && S.job.id === ev.id) {
    soon(() => viewJob(ev.id).catch((e) => showError(e.message)));
  } else if (S.view === 'cluster') {
    soon(() => viewCluster().catch((e) => showError(e.message)));
  } else if (S.view === 'usage' && ev.state !== 'PENDING') {
    soon(() => viewUsage().catch((e) => showError(e.message)));
  }
}

function connect() {
  const es = new EventSource('/events');
  const live = $('#live');
  es.addEventListener('hello', () => live.classList.remove('off'));
  es.addEventListener('job', (m) => onJobEvent(JSON.parse(m.data)));
  es.addEventListener('node', () => { if (S.view === 'cluster') soon(() => viewCluster().catch((e) => showError(e.message))); });
  const all = () => soon(route);
  es.addEventListener('jobs', all);
  es.addEventListener('reset', all);
  es.onerror = () => live.classList.add('off');
}

async function start() {
  const r = await fetch('/api/session', { credentials: 'same-origin' });
  if (!r.ok) { $('#view').textContent = 'No session: run `loom dash` and open the URL it prints.'; return; }
  const s = await r.json();
  S.csrf = s.csrf;
  $('#who').textContent = s.who;
  $('#logout').addEventListener('click', async () => {
    await fetch('/logout', { method: 'POST', headers: { 'X-Loom-CSRF': S.csrf }, credentials: 'same-origin' });
    location.reload();
  });
  window.addEventListener('hashchange', route);
  route();
  connect();
}

start().catch((e) => showError(e.message));
