import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createApi } from '../static/js/api.js';
import { ruleVerdictRows, ruleVerdictSummary } from '../static/js/panels/rule_verdict.js';
import { buildUrlSearch, parseUrlState, rulesFor, rulesParam } from '../static/js/url_state.js';

function fakeFetch() {
  const calls = [];
  const fetchImpl = async (url) => {
    calls.push(url);
    return { ok: true, status: 200, statusText: 'OK', text: async () => '{}' };
  };
  return { calls, fetchImpl };
}

const KEY = { side: 'target', step: 0, rank: 0 };

test('verdict reads name the rule set the viewer shows, none before a file is open', async () => {
  const { calls, fetchImpl } = fakeFetch();
  const api = createApi({ fetchImpl });
  let rules = null;
  api.setRules(() => rules);
  await api.firstError('g', KEY);
  rules = 'msprobe';
  await api.firstError('g', KEY);
  rules = 'dtype-aware';
  await api.firstError('g', KEY);
  await api.children('g', KEY, { parent: 'M' });
  await api.filter('g', KEY, { precision: ['error'] });
  await api.worst('g', KEY, 'M');
  await api.path('g', KEY, 'M');
  await api.search('g', KEY, { q: 'mlp' });
  await api.node('g', KEY, 'M'); // the stored rows are msprobe's under either set
  assert.deepEqual(calls, [
    '/api/graphs/g/first-error?side=target&step=0&rank=0',
    '/api/graphs/g/first-error?side=target&step=0&rank=0&rules=msprobe',
    '/api/graphs/g/first-error?side=target&step=0&rank=0&rules=dtype-aware',
    '/api/graphs/g/children?side=target&step=0&rank=0&parent=M&rules=dtype-aware',
    '/api/graphs/g/filter?side=target&step=0&rank=0&precision=error&rules=dtype-aware',
    '/api/graphs/g/worst?side=target&step=0&rank=0&name=M&rules=dtype-aware',
    '/api/graphs/g/path?side=target&step=0&rank=0&name=M&rules=dtype-aware',
    '/api/graphs/g/search?side=target&step=0&rank=0&q=mlp&rules=dtype-aware',
    '/api/graphs/g/node?side=target&step=0&rank=0&name=M',
  ]);
});

test('the address keeps a rule set asked for, the file default (null) left out', () => {
  const view = { graph: 'g', step: 0, rank: 1, node: 'n', side: 'target', micro: -1 };
  assert.equal(buildUrlSearch({ ...view, rules: null }), '?graph=g&step=0&rank=1&node=n');
  const search = buildUrlSearch({ ...view, rules: 'msprobe' });
  assert.equal(search, '?graph=g&step=0&rank=1&node=n&rules=msprobe');
  assert.equal(rulesParam(search), 'msprobe');
  assert.equal(rulesParam('?rules=dtype-aware'), 'dtype-aware');
  assert.equal(rulesParam('?rules=evil'), null);
  assert.equal(rulesParam(''), null);
  assert.equal(parseUrlState(search).node, 'n');
});

test('a file is read under dtype-aware by default where it holds those verdicts', () => {
  const ours = { default_rules: 'dtype-aware' };
  const theirs = { default_rules: 'msprobe' }; // msprobe's file, a build, md5 mode
  assert.equal(rulesFor(null, ours), 'dtype-aware');
  assert.equal(rulesFor('msprobe', ours), 'msprobe'); // one switch away
  assert.equal(rulesFor('dtype-aware', ours), 'dtype-aware');
  assert.equal(rulesFor(null, theirs), 'msprobe');
  assert.equal(rulesFor('dtype-aware', theirs), 'msprobe'); // it holds none to show
  assert.equal(rulesFor(null, {}), 'msprobe'); // a server before default_rules
  assert.equal(rulesFor(null, null), 'msprobe');
});

const FOUND = {
  verdict: 'error',
  stored: 'warning',
  introduced: false,
  reason: 'error: d 0.05 beyond the band 0.03 its inputs and own rounding explain',
  params: [
    { key: 'input.0', is_output: false, verdict: 'pass', difference: 0.002, band: 0.00390625, reason: 'input', introduces: false },
    { key: 'output.0', is_output: true, verdict: 'error', difference: 0.05, band: 0.03, reason: 'beyond', introduces: true },
    { key: 'input.approximate', is_output: false, verdict: 'pass', difference: null, band: null, reason: 'argument agrees', introduces: false },
  ],
};

test('the working shows each parameter band beside its measured difference', () => {
  const rows = ruleVerdictRows(FOUND);
  assert.deepEqual(
    rows.map((row) => [row.key, row.role, row.verdict, row.introduces]),
    [
      ['input.0', 'input', 'pass', false],
      ['output.0', 'output', 'error', true],
      ['input.approximate', 'input', 'pass', false],
    ],
  );
  assert.equal(rows[2].d, '–');
  assert.equal(rows[2].band, '–');
  assert.notEqual(rows[1].d, '–');
  const t = (key, params) => (key === 'rules.stored' ? `stored: ${params.level}` : 'introduced here');
  assert.equal(ruleVerdictSummary(FOUND, t), `error (stored: warning): ${FOUND.reason}`);
  assert.equal(ruleVerdictSummary({ ...FOUND, stored: 'error', introduced: true }, t), `error · introduced here: ${FOUND.reason}`);
  assert.deepEqual(ruleVerdictRows(null), []);
});
