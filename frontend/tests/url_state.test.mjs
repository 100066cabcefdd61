import assert from 'node:assert/strict';
import { test } from 'node:test';

import { buildUrlSearch, indexParam, parseUrlState } from '../static/js/url_state.js';

test('a full view survives a round trip', () => {
  const view = { graph: 'runs/compare_1', step: 1, rank: 3, node: 'Module.a.forward.0', side: 'golden', micro: 2 };
  assert.deepEqual(parseUrlState(buildUrlSearch(view)), view);
});

test('defaults are left out of the query string', () => {
  assert.equal(buildUrlSearch({ graph: 'g', step: 0, rank: 0, node: null, side: 'target', micro: -1 }), '?graph=g&step=0&rank=0');
  assert.equal(buildUrlSearch({}), '');
});

test('a link writes a side as target/golden, and one written with msprobe\'s NPU/Bench still opens', () => {
  assert.equal(buildUrlSearch({ graph: 'g', step: 0, rank: 0, node: 'n', side: 'golden' }), '?graph=g&step=0&rank=0&node=n&side=golden');
  assert.equal(parseUrlState('?graph=g&side=Bench').side, 'golden');
  assert.equal(parseUrlState('?graph=g&side=NPU').side, 'target');
  assert.equal(parseUrlState('?graph=g&side=target').side, 'target');
  assert.equal(parseUrlState('?graph=g&side=bench').side, null);
});

test('missing or malformed parts read as null', () => {
  assert.deepEqual(parseUrlState('?graph=g&step=x&rank=&side=evil'), {
    graph: 'g', step: null, rank: null, node: null, side: null, micro: null,
  });
  assert.deepEqual(parseUrlState(''), { graph: null, step: null, rank: null, node: null, side: null, micro: null });
});

test('names with reserved characters are encoded', () => {
  const node = 'Tensor.__add__.0.forward&x=1#y';
  const search = buildUrlSearch({ graph: 'a b/c', step: 0, rank: 0, node });
  assert.equal(parseUrlState(search).node, node);
  assert.equal(parseUrlState(search).graph, 'a b/c');
});

test('a step, rank or depth parameter is a non-negative integer or null', () => {
  assert.equal(indexParam('12'), 12);
  assert.equal(indexParam('0'), 0);
  for (const text of [null, '', '-1', '1.5', 'x', ' 3']) assert.equal(indexParam(text), null);
});
