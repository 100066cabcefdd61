import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createApi } from '../static/js/api.js';
import { percent, visibleSuggestions } from '../static/js/panels/suggestions_panel.js';

function recordingFetch(body = {}) {
  const calls = [];
  const fetchImpl = async (url, init) => {
    calls.push({ url, init });
    return { ok: true, status: 200, statusText: 'OK', text: async () => JSON.stringify(body) };
  };
  return { calls, fetchImpl };
}

test('suggestions are listed, accepted and rejected on their own routes', async () => {
  const { calls, fetchImpl } = recordingFetch({ suggestions: [], fused: [] });
  const api = createApi({ fetchImpl });
  await api.suggestions('runs/a b', { step: 0, rank: 1, minConfidence: 0, under: 'Module.x' });
  await api.acceptSuggestion('g', { step: 0, rank: 0, target: 'a', golden: 'b' });
  await api.acceptAllSuggestions('g', { step: 0, rank: 0, min_confidence: 0.7 });
  await api.rejectSuggestion('g', { step: 0, rank: 0, target: 'a', golden: 'b' });
  assert.equal(calls[0].url, '/api/graphs/runs/a%20b/suggestions?step=0&rank=1&min_confidence=0&under=Module.x');
  assert.deepEqual(
    calls.slice(1).map((call) => [call.init.method, call.url]),
    [
      ['POST', '/api/graphs/g/suggestions/accept'],
      ['POST', '/api/graphs/g/suggestions/accept-all'],
      ['POST', '/api/graphs/g/suggestions/reject'],
    ],
  );
  assert.deepEqual(JSON.parse(calls[2].init.body), { step: 0, rank: 0, min_confidence: 0.7 });
});

test('the list shows the proposals at or above the confidence, the first ones only', () => {
  const items = [0.95, 0.6, 0.59, 0.8].map((confidence, index) => ({ target: `t${index}`, confidence }));
  const { rows, total } = visibleSuggestions(items, 0.6, 2);
  assert.equal(total, 3);
  assert.deepEqual(rows.map((row) => row.target), ['t0', 't1']);
  assert.equal(percent(0.8333), '83%');
});
