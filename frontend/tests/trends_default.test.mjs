import assert from 'node:assert/strict';
import { test } from 'node:test';

import { cellTarget, defaultStatistic, parseTrendsState } from '../static/js/trends/trends_page.js';

test('a compare opens on the excess where it holds dtype-aware verdicts, else on msprobe\'s error', () => {
  const compare = { graph_type: 'compare' };
  assert.equal(defaultStatistic({ config: compare, default_rules: 'dtype-aware' }), 'excess');
  assert.equal(defaultStatistic({ config: compare, default_rules: 'msprobe' }), 'error');
  assert.equal(defaultStatistic({ config: compare }), 'error'); // a server before default_rules
  assert.equal(defaultStatistic({ config: { graph_type: 'build' }, default_rules: 'msprobe' }), 'norm');
});

test('the side is target, golden or diff; an older link\'s NPU/Bench still reads', () => {
  assert.equal(parseTrendsState('?side=golden').side, 'golden');
  assert.equal(parseTrendsState('?side=Bench').side, 'golden');
  assert.equal(parseTrendsState('?side=NPU').side, 'target');
  assert.equal(parseTrendsState('?side=diff').side, 'diff');
  assert.equal(parseTrendsState('?side=gpu').side, null);
});

test('a golden cell opens the viewer on the golden side, spelled golden', () => {
  const answer = { nodes: [['Module.a.forward.0']], cols: [3], rows: ['Module.a'], step: null, rank: 1 };
  const state = { graph: 'g', view: 'module-step', statistic: 'norm', side: 'golden' };
  assert.equal(cellTarget(state, answer, 0, 0), '/?graph=g&step=3&rank=1&node=Module.a.forward.0&side=golden');
  assert.equal(cellTarget({ ...state, side: 'diff' }, answer, 0, 0), '/?graph=g&step=3&rank=1&node=Module.a.forward.0');
});
