import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ApiError, createApi } from '../static/js/api.js';
import { debounce } from '../static/js/debounce.js';
import { createStore } from '../static/js/state.js';

function fakeFetch(status, body) {
  const calls = [];
  const fetchImpl = async (url, init) => {
    calls.push({ url, init });
    return { ok: status < 400, status, statusText: 'x', text: async () => JSON.stringify(body) };
  };
  return { calls, fetchImpl };
}

test('children pages: graph id segments encoded, empty parameters dropped', async () => {
  const { calls, fetchImpl } = fakeFetch(200, { items: [] });
  const api = createApi({ fetchImpl });
  await api.children('runs/a b', { side: 'target', step: 0, rank: 1 }, { parent: 'Module.x', cursor: 25, limit: 200 });
  assert.equal(calls[0].url, '/api/graphs/runs/a%20b/children?side=target&step=0&rank=1&parent=Module.x&cursor=25&limit=200');
});

test('filters repeat list parameters', async () => {
  const { calls, fetchImpl } = fakeFetch(200, {});
  const api = createApi({ fetchImpl });
  await api.filter('g', { side: 'target', step: 0, rank: 0 }, { precision: ['error', 'warning'], unmatched: true });
  assert.equal(calls[0].url, '/api/graphs/g/filter?side=target&step=0&rank=0&precision=error&precision=warning&unmatched=true');
});

test('errors carry the server code and message', async () => {
  const { fetchImpl } = fakeFetch(409, { error: { code: 'already_matched', message: 'already matched' } });
  const api = createApi({ fetchImpl });
  await assert.rejects(
    api.match('g', { step: 0, rank: 0, target: 'a', golden: 'b' }),
    (error) => error instanceof ApiError && error.status === 409 && error.code === 'already_matched',
  );
});

test('the store notifies only of keys that changed', () => {
  const store = createStore({ a: 1, b: 2 });
  const seen = [];
  store.subscribe((_state, changed) => seen.push([...changed]));
  store.set({ a: 1 });
  store.set({ a: 2, b: 2 });
  assert.deepEqual(seen, [['a']]);
  assert.equal(store.get().a, 2);
});

test('debounce runs once after quiet', async () => {
  let runs = 0;
  const later = debounce(() => runs++, 20);
  later();
  later();
  later();
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(runs, 1);
});
