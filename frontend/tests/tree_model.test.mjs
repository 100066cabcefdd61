import assert from 'node:assert/strict';
import { test } from 'node:test';

import { TreeModel } from '../static/js/tree/tree_model.js';

const node = (name, order, parent = 'root', childCount = 0) => ({ name, node_order: order, parent, child_count: childCount });
const names = (rows) => rows.map((row) => (row.kind === 'node' ? row.name : `gap(${row.gap.after},${row.gap.before})`));

function rootWith(childCount) {
  const model = new TreeModel();
  model.setRoot(node('root', 10_000, null, childCount));
  return model;
}

test('the root starts expanded with one gap over its unloaded children', () => {
  const model = rootWith(3);
  assert.equal(model.isExpanded('root'), true);
  assert.equal(model.needsChildren('root'), true);
  model.firstGap('root');
  assert.deepEqual(names(model.rows()), ['root', 'gap(-1,null)']);
});

test('a first page fills the gap and leaves a gap for the rest', () => {
  const model = rootWith(5);
  const gap = model.firstGap('root');
  const added = model.applyPage(gap, [node('a', 1), node('b', 3)], 3);
  assert.deepEqual(added, ['a', 'b']);
  assert.deepEqual(names(model.rows()), ['root', 'a', 'b', 'gap(3,null)']);
  assert.equal(model.unloadedCount('root'), 3);
});

test('the last page closes the list', () => {
  const model = rootWith(3);
  model.applyPage(model.firstGap('root'), [node('a', 1), node('b', 3)], 3);
  model.applyPage(model.firstGap('root'), [node('c', 7)], null);
  assert.deepEqual(names(model.rows()), ['root', 'a', 'b', 'c']);
  assert.equal(model.firstGap('root'), undefined ?? null);
});

test('a reveal jumps into the middle, leaving gaps before and after', () => {
  const model = rootWith(100);
  model.applyPage(model.firstGap('root'), [node('c0', 0), node('c1', 1)], 1);
  const gap = model.gapFor('root', 50);
  assert.deepEqual([gap.after, gap.before], [1, null]);
  model.applyPage(gap, [node('c50', 50), node('c51', 51)], 51, 49);
  assert.deepEqual(names(model.rows()), ['root', 'c0', 'c1', 'gap(1,50)', 'c50', 'c51', 'gap(51,null)']);
  // Filling the gap before stops where the loaded stretch starts.
  const before = model.gapFor('root', 10);
  model.applyPage(before, [node('c2', 2), node('c49', 49), node('c50', 50)], 50);
  assert.deepEqual(names(model.rows()), ['root', 'c0', 'c1', 'c2', 'c49', 'c50', 'c51', 'gap(51,null)']);
});

test('a page never lists a child twice', () => {
  const model = rootWith(3);
  model.applyPage(model.firstGap('root'), [node('a', 1)], 1);
  model.applyPage(model.firstGap('root'), [node('a', 1), node('b', 2)], null);
  assert.deepEqual(names(model.rows()), ['root', 'a', 'b']);
});

test('a stale page for a gap already filled changes nothing', () => {
  const model = rootWith(2);
  const gap = model.firstGap('root');
  model.applyPage(gap, [node('a', 1), node('b', 2)], null);
  assert.deepEqual(model.applyPage(gap, [node('x', 5)], null), []);
  assert.deepEqual(names(model.rows()), ['root', 'a', 'b']);
});

test('collapsing hides children but keeps them loaded', () => {
  const model = rootWith(1);
  model.applyPage(model.firstGap('root'), [node('m', 5, 'root', 2)], null);
  model.applyPage(model.firstGap('m'), [node('m.x', 1, 'm'), node('m.y', 2, 'm')], null);
  model.setExpanded('m', true);
  assert.deepEqual(names(model.rows()), ['root', 'm', 'm.x', 'm.y']);
  assert.equal(model.indexOf('m.y'), 3);
  model.setExpanded('m', false);
  assert.deepEqual(names(model.rows()), ['root', 'm']);
  assert.equal(model.indexOf('m.y'), -1);
  assert.equal(model.needsChildren('m'), false);
  model.setExpanded('m', true);
  assert.equal(model.rows().length, 4);
});

test('leaves cannot be expanded and depths follow the hierarchy', () => {
  const model = rootWith(1);
  model.applyPage(model.firstGap('root'), [node('m', 5, 'root', 1)], null);
  model.applyPage(model.firstGap('m'), [node('leaf', 1, 'm')], null);
  model.setExpanded('m', true);
  assert.equal(model.setExpanded('leaf', true), false);
  assert.deepEqual(model.rows().map((row) => row.depth), [0, 1, 2]);
});

test('100,000 children flatten without recursion and index in linear time', () => {
  const model = rootWith(100_000);
  const items = Array.from({ length: 100_000 }, (_, i) => node(`c${i}`, i));
  model.applyPage(model.firstGap('root'), items, null);
  const started = performance.now();
  assert.equal(model.rows().length, 100_001);
  assert.equal(model.indexOf('c99999'), 100_000);
  assert.ok(performance.now() - started < 2000);
});

test('upsert refreshes data in place without touching structure', () => {
  const model = rootWith(1);
  model.applyPage(model.firstGap('root'), [node('a', 1)], null);
  const version = model.structureVersion;
  model.upsert({ ...node('a', 1), color: '#FF704D' });
  assert.equal(model.get('a').color, '#FF704D');
  assert.equal(model.structureVersion, version);
});
