// The page of `attnsim run --html` (sim/html_view.h): markup, CSS and script, all inline. The run itself is
// inserted between kBody and kScript as a JSON blob. Colours tell the memory levels apart: orange is off
// chip (DRAM, HBM), blue is on chip (registers, SRAM), green is a unit; every number's label names its level
// and its unit, so a reader never takes one level for another.
#pragma once

namespace attnsim::html_page {

inline constexpr const char* kHead = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>attnsim step-through</title>
<style>
:root { --off: #c2410c; --off-bg: #fff7ed; --on: #1d4ed8; --on-bg: #eff6ff; --unit: #15803d;
        --unit-bg: #f0fdf4; --hot: #fde047; --ink: #1f2937; --faint: #6b7280; }
* { box-sizing: border-box; }
body { font: 14px/1.35 system-ui, sans-serif; color: var(--ink); margin: 0; padding: 10px 14px; }
h1 { font-size: 18px; margin: 0; }
h2 { font-size: 14px; margin: 0 0 4px; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; }
.sub { color: var(--faint); font-size: 12px; }
.note { background: #fef2f2; border: 1px solid #dc2626; color: #991b1b; padding: 4px 8px; margin: 6px 0; }
#controls { display: flex; align-items: center; gap: 6px; margin: 8px 0; }
#controls button { font-size: 14px; padding: 2px 10px; }
#slider { flex: 1; }
.hint { color: var(--faint); font-size: 12px; }
#counters { display: flex; gap: 8px; flex-wrap: wrap; }
.counter { border: 2px solid; border-radius: 6px; padding: 3px 10px; min-width: 150px; }
.counter .num { font-size: 20px; font-weight: 600; }
.counter .label, .unitname { font-size: 12px; }
.off { border-color: var(--off); background: var(--off-bg); }
.on { border-color: var(--on); background: var(--on-bg); }
.unit { border-color: var(--unit); background: var(--unit-bg); }
.time { border-color: var(--ink); background: #f9fafb; }
#now { margin: 8px 0; padding: 5px 8px; border-left: 5px solid var(--hot); background: #fefce8; }
#machine { display: grid; grid-template-columns: 1fr 1.6fr 0.9fr; gap: 10px; align-items: start; }
.block { border: 2px solid; border-radius: 8px; padding: 6px 8px; }
.block h2 .lvl { font-weight: normal; font-size: 12px; }
table.mem { border-collapse: collapse; width: 100%; }
table.mem td, table.mem th { text-align: right; padding: 1px 6px; font-size: 13px; }
table.mem td:first-child, table.mem th:first-child { text-align: left; }
tr.hot td, .reg.hot, .buf.hot, .unitbox.hot { background: var(--hot); }
.regs { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 5px; align-items: start; }
.reg, .buf { border: 1px solid var(--on); border-radius: 5px; padding: 3px 6px; background: #fff;
             overflow-wrap: anywhere; }
.reg.read, .buf.read { outline: 2px dashed var(--on); }
.rname { font-weight: 600; margin-right: 6px; }
.rval { font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
.rexpr { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; white-space: pre-wrap; }
.rexp { color: var(--faint); font-size: 11px; white-space: pre-wrap; font-family: ui-monospace, monospace; }
.buf.empty { opacity: 0.45; border-style: dashed; }
.bar { height: 10px; background: #dbeafe; border: 1px solid var(--on); margin: 4px 0; }
.bar > div { height: 100%; background: var(--on); }
.unitbox { border: 1px solid var(--unit); border-radius: 5px; padding: 3px 6px; margin-bottom: 5px; background: #fff; }
.unitbox.inflight { outline: 2px dashed var(--unit); }
#lower { display: grid; grid-template-columns: minmax(260px, 0.8fr) 2fr; gap: 10px; margin-top: 10px; }
#tracebox { position: relative; max-height: 360px; overflow-y: auto; border: 1px solid #d1d5db; }
#trace { list-style: none; margin: 0; padding: 0; }
.line { display: grid; grid-template-columns: 44px 1fr auto; gap: 6px; padding: 0 6px; font-size: 13px; }
.line .ln, .line .cyc { color: var(--faint); font-size: 12px; white-space: nowrap; }
.line.future { color: var(--faint); }
.line.current { background: var(--hot); font-weight: 600; }
#gantt { position: relative; border: 1px solid #d1d5db; padding: 4px; }
.grow { display: grid; grid-template-columns: 220px 1fr; align-items: center; height: 15px; }
.glabel { font-size: 11px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.gtrack { position: relative; height: 13px; }
.gbar { position: absolute; top: 1px; height: 11px; border-radius: 2px; font-size: 9px; color: #fff;
        overflow: hidden; text-align: center; line-height: 11px; }
.gbar.u0 { background: var(--off); } .gbar.u1 { background: #7c3aed; } .gbar.u2 { background: var(--unit); }
.gbar.future { opacity: 0.2; }
.gbar.current { outline: 2px solid var(--ink); }
.gaxis { position: relative; height: 16px; margin-left: 220px; font-size: 10px; color: var(--faint); }
.gaxis span { position: absolute; transform: translateX(-50%); }
.gnow { position: absolute; top: 0; bottom: 0; width: 2px; background: var(--ink); opacity: 0.5; }
.legend span { display: inline-block; width: 10px; height: 10px; margin: 0 3px 0 8px; }
</style>
</head>
)html";

inline constexpr const char* kBody = R"html(<body>
<header>
<h1 id="title">attnsim step-through</h1>
<div id="subtitle" class="sub"></div>
<div id="note" class="note" hidden></div>
</header>
<noscript><p class="note">This page needs JavaScript to step through the run.</p></noscript>
<div id="controls">
<button id="first" title="before the first step (Home)">|&#x25C0;</button>
<button id="back" title="one step back (&#x2190;)">&#x25C0;</button>
<button id="forward" title="one step forward (&#x2192;)">&#x25B6;</button>
<button id="last" title="last step (End)">&#x25B6;|</button>
<input type="range" id="slider" min="0" max="0" value="0" aria-label="step">
<span>step <b id="step-no">0</b> of <span id="step-count">0</span></span>
<span class="hint">&#x2190; &#x2192; step &middot; Home/End &middot; PageUp/PageDown &plusmn;10</span>
</div>
<div id="counters"></div>
<div id="now"></div>
<div id="machine">
<div id="offchip" class="block off"></div>
<div id="onchip" class="block on"></div>
<div id="units" class="block unit"></div>
</div>
<div id="lower">
<div><h2>Trace <span class="sub">(step, instruction, issue&ndash;done cycle)</span></h2>
<div id="tracebox"><ol id="trace"></ol></div></div>
<div><h2>Issue and done cycle of each instruction <span class="sub legend" id="legend"></span></h2>
<div id="gantt"></div></div>
</div>
)html";

inline constexpr const char* kScript = R"html(
'use strict';
(function () {
const D = JSON.parse(document.getElementById('run-data').textContent);
const $ = (id) => document.getElementById(id);
const M = D.steps.length;
const tile = D.kind === 'tile';
const UNIT_NAMES = tile ? {dma: 'DMA engine', mxu: 'MXU (matrix unit)', vpu: 'VPU (vector unit)'}
                        : {dram: 'DRAM port', mac: 'MAC unit', alu: 'ALU'};
const MEM = D.memory, MU = D.memory_unit;
const num = (n) => Number(n).toLocaleString('en-US');
let cur = 0;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function html(tag, cls, parts) {  // parts: strings and elements
  const e = el(tag, cls);
  for (const p of parts) e.append(p);
  return e;
}
function span(id, text) { const s = el('span', '', text); if (id) s.id = id; return s; }

function counter(cls, label, level, id, unit) {
  return html('div', 'counter ' + cls, [
    html('div', 'label', [label + ' ', el('i', '', '(' + level + ')')]),
    html('div', 'num', [span(id, '0'), ' ', el('span', 'unitname', unit)])]);
}

function buildHeader() {
  $('title').textContent = 'attnsim step-through: ' + D.trace;
  $('subtitle').textContent = 'machine ' + D.machine + ' (' + D.config + '), ' + D.issue + ' issue; ' +
      'whole run: ' + num(D.instructions_total) + ' instructions, ' + num(D.cycles_total) + ' cycles';
  if (D.note) { $('note').hidden = false; $('note').textContent = D.note; }
  $('step-count').textContent = M;
  $('slider').max = M;
  const c = $('counters');
  c.append(counter('time', 'cycles elapsed', 'clock cycles: the latest Done so far', 'cycle', 'cycles'));
  c.append(counter('off', MEM + ' reads', 'off-chip ' + MEM, 'mem-reads', MU === 'B' ? 'bytes' : 'elements'));
  c.append(counter('off', MEM + ' writes', 'off-chip ' + MEM, 'mem-writes', MU === 'B' ? 'bytes' : 'elements'));
  if (tile) c.append(counter('on', 'SRAM holding data', 'on-chip SRAM, of ' + num(D.sram_capacity) + ' B',
                             'sram-used', 'bytes'));
}

function buildOffchip() {
  const b = $('offchip');
  b.append(html('h2', '', [MEM + ' ', el('span', 'lvl', '(off-chip memory)')]));
  const t = el('table', 'mem');
  const what = MU === 'B' ? 'bytes' : 'elements';
  t.append(html('tr', '', [el('th', '', 'tensor'), el('th', '', 'read (' + what + ')'),
                           el('th', '', 'written (' + what + ')')]));
  D.tensors.forEach((name, i) => {
    const r = html('tr', '', [el('td', 'mono', name), html('td', '', [span('mem-r-' + i, '0')]),
                              html('td', '', [span('mem-w-' + i, '0')])]);
    r.id = 'tensor-' + i;
    t.append(r);
  });
  b.append(t);
  // A single core is simulated without an L2, so on the one-SM configs (h100-sm and the like) every byte
  // here is also what that SM would move to and from L2 on the whole chip (README.md says the same).
  b.append(el('div', 'sub', tile ? 'bytes as the program\'s LOADs and STOREs request them; a single core ' +
                                   'has no L2 here, so on a one-SM config (h100-sm, ...) these are its SM <-> L2 bytes'
                                 : 'one LOAD reads 1 element, one STORE writes 1 element'));
}

function buildRegisters(b) {
  b.append(html('h2', '', ['Register file ', el('span', 'lvl', '(on chip, ' + D.registers +
                                                ' registers; values after the step)')]));
  const g = el('div', 'regs');
  for (let r = 0; r < D.registers; ++r) {
    const cell = html('div', 'reg', [el('span', 'rname', 'R' + r), span('reg-R' + r + '-value', '—')]);
    cell.id = 'reg-R' + r;
    const e = el('div', 'rexpr'); e.id = 'reg-R' + r + '-expr';
    const x = el('div', 'rexp'); x.id = 'reg-R' + r + '-expanded';
    cell.append(e, x);
    g.append(cell);
  }
  b.append(g);
  b.append(el('div', 'sub', 'yellow: written by this step; dashed: read by it'));
}

function buildBuffers(b) {
  b.append(html('h2', '', ['SRAM buffers ', el('span', 'lvl', '(on chip, ' + num(D.sram_capacity) + ' B)')]));
  const bar = el('div', 'bar'); bar.append(el('div')); bar.firstChild.id = 'sram-bar';
  b.append(bar);
  const g = el('div', 'regs');
  const regs = el('div', 'regs');
  D.buffers.forEach((buf, i) => {
    const size = buf.space === 'sram' ? num(buf.bytes) + ' B of SRAM' : 'tile register file';
    const cell = html('div', 'buf empty', [el('span', 'rname mono', buf.name),
                                           el('span', 'sub', buf.shape + ', ' + size)]);
    cell.id = 'buf-' + i;
    (buf.space === 'sram' ? g : regs).append(cell);
  });
  b.append(g);
  if (regs.childElementCount) {
    b.append(html('h2', '', ['Tile registers ', el('span', 'lvl', '(on chip, outside the SRAM)')]));
    b.append(regs);
  }
  b.append(el('div', 'sub', 'yellow: written by this step; dashed outline: read by it; faded: not written ' +
                             'yet (a buffer holds data from its first write). Each buffer starts on a ' +
                             D.sram_alignment + ' B boundary, so its bytes include the padding up to the next.'));
}

function buildUnits() {
  const b = $('units');
  b.append(html('h2', '', ['Units ', el('span', 'lvl', '(cycles busy so far)')]));
  D.units.forEach((u, i) => {
    const box = html('div', 'unitbox', [el('b', '', UNIT_NAMES[u] + ' '), html('span', 'sub',
        ['busy ', span('unit-' + u + '-busy', '0'), ' cycles'])]);
    box.id = 'unit-' + u;
    b.append(box);
    const key = el('span'); key.className = 'gbar u' + i; key.style.position = 'static';
    $('legend').append(key, UNIT_NAMES[u]);
  });
  b.append(el('div', 'sub', 'yellow: the current instruction\'s unit; dashed: also busy in its issue cycle'));
}

function buildTrace() {
  const list = $('trace');
  D.steps.forEach((p, i) => {
    const li = html('li', 'line future', [el('span', 'ln', String(i + 1)), el('code', '', p.text),
                                          el('span', 'cyc', p.issue + '–' + p.done)]);
    li.id = 'line-' + (i + 1);
    li.addEventListener('click', () => go(i + 1));
    list.append(li);
  });
}

// The machine after `s` steps: counters, registers and buffers, from the steps' recorded changes.
function stateAt(s) {
  const st = {reads: D.tensors.map(() => 0), writes: D.tensors.map(() => 0), regs: [], busy: D.units.map(() => 0), end: D.units.map(() => 0),
              cycle: 0, held: (D.buffers || []).map(() => false), sram: 0};
  for (let i = 0; i < s; ++i) {
    const p = D.steps[i];
    for (const [t, r, w] of p.mem) { st.reads[t] += r; st.writes[t] += w; }
    if (p.reg) st.regs[p.reg[0]] = p.reg;
    for (const b of p.writes || []) st.held[b] = true;
    if (tile) st.sram = p.sram;
    // Cycles with at least one of the unit's instructions in flight: overlapping ones (pipelined LOADs)
    // count once. Issue is in program order, so one running end per unit is enough.
    st.busy[p.unit] += Math.max(0, p.done - Math.max(p.issue - 1, st.end[p.unit]));
    st.end[p.unit] = Math.max(st.end[p.unit], p.done);
    st.cycle = Math.max(st.cycle, p.done);
  }
  return st;
}

function showCounters(st) {
  $('cycle').textContent = num(st.cycle);
  $('mem-reads').textContent = num(st.reads.reduce((a, b) => a + b, 0));
  $('mem-writes').textContent = num(st.writes.reduce((a, b) => a + b, 0));
  D.tensors.forEach((_, i) => {
    $('mem-r-' + i).textContent = num(st.reads[i]);
    $('mem-w-' + i).textContent = num(st.writes[i]);
  });
  if (tile) {
    $('sram-used').textContent = num(st.sram);
    $('sram-bar').style.width = (D.sram_capacity ? 100 * st.sram / D.sram_capacity : 0) + '%';
  }
}

function showRegisters(st, p) {
  for (let r = 0; r < D.registers; ++r) {
    const v = st.regs[r];
    $('reg-R' + r + '-value').textContent = v ? v[1] : '—';
    $('reg-R' + r + '-expr').textContent = v ? v[2] : '';
    $('reg-R' + r + '-expanded').textContent = v && v[3] ? '= ' + v[3] : '';
    $('reg-R' + r).classList.toggle('hot', !!(p && p.reg && p.reg[0] === r));
    $('reg-R' + r).classList.toggle('read', !!(p && p.reads.includes(r)));
  }
}

function showBuffers(st, p) {
  D.buffers.forEach((_, i) => {
    const cell = $('buf-' + i);
    cell.classList.toggle('empty', !st.held[i]);
    cell.classList.toggle('hot', !!(p && p.writes.includes(i)));
    cell.classList.toggle('read', !!(p && p.reads.includes(i)));
  });
}

function showUnits(st, s) {
  const p = s ? D.steps[s - 1] : null;
  D.units.forEach((u, i) => {
    $('unit-' + u + '-busy').textContent = num(st.busy[i]);
    $('unit-' + u).classList.toggle('hot', !!(p && p.unit === i));
    let inflight = false;
    for (let j = 0; p && j < s - 1; ++j) {
      const q = D.steps[j];
      if (q.unit === i && q.issue <= p.issue && q.done >= p.issue) inflight = true;
    }
    $('unit-' + u).classList.toggle('inflight', inflight && p.unit !== i);
  });
  D.tensors.forEach((_, t) => $('tensor-' + t).classList.toggle('hot', !!(p && p.mem.some((m) => m[0] === t))));
}

function describe(s) {
  const box = $('now');
  box.replaceChildren();
  if (!s) {
    box.append('Before the first instruction: nothing has run yet. Press → to execute step 1.');
    return;
  }
  const p = D.steps[s - 1];
  const len = p.done - p.issue + 1;
  box.append('Step ' + s + ': ', span('current', p.text), ' on the ' + UNIT_NAMES[D.units[p.unit]] +
             ', issued in cycle ' + p.issue + ', done in cycle ' + p.done + ' (' + len +
             (len === 1 ? ' cycle). ' : ' cycles). '));
  $('current').className = 'mono';
  const moved = p.mem.map(([t, r, w]) => (r ? MEM + ' (off-chip) → chip: ' + num(r) : 'chip → ' + MEM +
      ' (off-chip): ' + num(w)) + ' ' + (MU === 'B' ? 'B' : (r || w) === 1 ? 'element' : 'elements') +
      ' of ' + D.tensors[t] + '. ');
  box.append(moved.join(''));
  if (p.reg) box.append('Writes R' + p.reg[0] + ' = ' + p.reg[1] + (p.reg[2] ? ' (' + p.reg[2] + ')' : '') +
                        ' in the register file (on chip).');
  if (tile && p.writes.length)
    box.append('Writes ' + p.writes.map((b) => D.buffers[b].name + (D.buffers[b].space === 'sram'
        ? ' (SRAM, on chip)' : ' (tile registers, on chip)')).join(', ') + '.');
}

function showTrace(s) {
  for (let i = 1; i <= M; ++i)
    $('line-' + i).className = 'line ' + (i === s ? 'current' : i < s ? 'done' : 'future');
  const box = $('tracebox');
  const li = s ? $('line-' + s) : null;
  // Scroll the list only (scrollIntoView would scroll the whole page as well).
  if (li) box.scrollTop = Math.max(0, li.offsetTop - box.clientHeight / 2);
  else box.scrollTop = 0;
}

// A window of rows around the current step, each instruction a bar from its issue to its done cycle, so
// that instructions in flight together (pipelined issue) overlap on the cycle axis.
function showGantt(s) {
  const g = $('gantt');
  g.replaceChildren();
  if (!M) return;
  const W = 22;
  const hi = Math.min(M, Math.max(s + 6, W));
  const lo = Math.max(0, hi - W);
  let c0 = Infinity, c1 = 0;
  for (let i = lo; i < hi; ++i) { c0 = Math.min(c0, D.steps[i].issue - 1); c1 = Math.max(c1, D.steps[i].done); }
  const span_ = Math.max(1, c1 - c0);
  const x = (c) => (100 * (c - c0) / span_) + '%';
  const axis = el('div', 'gaxis');
  const every = Math.max(1, Math.ceil(span_ / 14));
  for (let c = c0 + 1; c <= c1; c += every) {
    const t = el('span', '', String(c)); t.style.left = x(c - 0.5); axis.append(t);
  }
  g.append(html('div', 'sub', ['cycle (counted from 1; a bar covers the cycles from Issue to Done)']), axis);
  for (let i = lo; i < hi; ++i) {
    const p = D.steps[i];
    const state = i + 1 === s ? 'current' : i + 1 < s ? 'done' : 'future';
    const bar = el('div', 'gbar u' + p.unit + ' ' + state, p.done - p.issue >= 2 ? p.issue + '–' + p.done : '');
    bar.style.left = x(p.issue - 1);
    bar.style.width = x(c0 + p.done - p.issue + 1);
    bar.title = p.text + ': issue ' + p.issue + ', done ' + p.done;
    const track = el('div', 'gtrack');
    track.append(bar);
    if (i + 1 === s) { const now = el('div', 'gnow'); now.style.left = x(p.issue - 1); track.append(now); }
    g.append(html('div', 'grow', [el('span', 'glabel mono', (i + 1) + '  ' + p.text), track]));
  }
}

function go(s) {
  cur = Math.max(0, Math.min(M, s));
  const st = stateAt(cur);
  const p = cur ? D.steps[cur - 1] : null;
  $('step-no').textContent = cur;
  $('slider').value = cur;
  showCounters(st);
  if (tile) showBuffers(st, p); else showRegisters(st, p);
  showUnits(st, cur);
  describe(cur);
  showTrace(cur);
  showGantt(cur);
}

const KEYS = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, PageDown: 10, PageUp: -10};
function onKey(e) {
  if (e.target === $('slider')) return;  // a focused slider moves itself and reports through 'input'
  if (e.key in KEYS) go(cur + KEYS[e.key]);
  else if (e.key === 'Home') go(0);
  else if (e.key === 'End') go(M);
  else return;
  e.preventDefault();
}

// `#step=N` opens step N. For tests/labs/test_html.cpp, `keys=right,left,...` then presses keys (dispatched
// as keydown events to the same handler a real key reaches) and `slider=N` moves the slider (an input event).
const NAMED = {right: 'ArrowRight', left: 'ArrowLeft', up: 'ArrowUp', down: 'ArrowDown', home: 'Home',
               end: 'End', pgup: 'PageUp', pgdn: 'PageDown'};
function applyHash() {
  const args = new URLSearchParams(location.hash.slice(1));
  go(args.has('step') ? parseInt(args.get('step'), 10) || 0 : cur);
  for (const k of (args.get('keys') || '').split(',').filter((k) => k))
    document.dispatchEvent(new KeyboardEvent('keydown', {key: NAMED[k] || k, bubbles: true, cancelable: true}));
  if (args.has('slider')) {
    $('slider').value = args.get('slider');
    $('slider').dispatchEvent(new Event('input', {bubbles: true}));
  }
}

buildHeader();
buildOffchip();
if (tile) buildBuffers($('onchip')); else buildRegisters($('onchip'));
buildUnits();
buildTrace();
document.addEventListener('keydown', onKey);
$('slider').addEventListener('input', () => go(parseInt($('slider').value, 10)));
$('first').addEventListener('click', () => go(0));
$('back').addEventListener('click', () => go(cur - 1));
$('forward').addEventListener('click', () => go(cur + 1));
$('last').addEventListener('click', () => go(M));
window.addEventListener('hashchange', applyHash);
applyHash();
})();
)html";

}  // namespace attnsim::html_page
