import assert from 'node:assert/strict';
import { test } from 'node:test';

import { statsSeries } from '../static/js/charts/stats_series.js';
import { buildIoTable, visibleGroups } from '../static/js/panels/io_table.js';

const stats = (max, extra = {}) => ({ type: 'torch.Tensor', dtype: 'torch.float32', shape: '[4]', Max: max, Min: '0', Mean: '0.5', Norm: '2', data_name: '-1', ...extra });
const ROWS = [
  { role: 'input', key: 'input.0', paired_by: 'name', target: { name: 'n.input.0', fields: stats('1.0') }, golden: { name: 'n.input.0', fields: stats('1.0') }, comparison: { MaxRelativeErr: '0.0%', 'Max diff': '0', Result: 'pass' }, result: 'pass', messages: [] },
  { role: 'output', key: 'output.0', paired_by: 'name', target: { name: 'n.output.0', fields: stats('1.5') }, golden: { name: 'n.output.0', fields: stats('1.0') }, comparison: { MaxRelativeErr: '50.0%', 'Max diff': '0.5', Result: 'error' }, result: 'error', messages: ['too far'] },
  { role: 'output', key: 'output.1', paired_by: null, target: { name: 'n.output.1', fields: stats('N/A') }, golden: null, comparison: {}, result: null, messages: [] },
];

test('columns: statistics in a fixed order, hidden bookkeeping fields dropped', () => {
  const table = buildIoTable(ROWS);
  assert.deepEqual(table.statColumns, ['dtype', 'shape', 'Max', 'Min', 'Mean', 'Norm']);
  assert.deepEqual(table.metricColumns, ['Max diff', 'MaxRelativeErr']);
});

test('the worst cell is the largest relative error', () => {
  const table = buildIoTable(ROWS);
  assert.deepEqual(table.worst, { group: 1, column: 'MaxRelativeErr' });
});

test('differences only hides agreeing pairs but keeps one-sided and flagged ones', () => {
  const table = buildIoTable(ROWS);
  assert.deepEqual(visibleGroups(table, false).map((g) => g.group.key), ['input.0', 'output.0', 'output.1']);
  assert.deepEqual(visibleGroups(table, true).map((g) => g.group.key), ['output.0', 'output.1']);
});

test('chart series keep numeric statistics per parameter', () => {
  const { stats: series, empty } = statsSeries(ROWS);
  assert.equal(empty, false);
  const max = series.find((s) => s.stat === 'Max');
  assert.deepEqual(max.keys, ['input.0', 'output.0']);
  assert.deepEqual(max.target, [1, 1.5]);
  assert.deepEqual(max.golden, [1, 1]);
  assert.equal(statsSeries([]).empty, true);
});

test('no worst cell when every error is zero', () => {
  const rows = [{ ...ROWS[0], comparison: { MaxRelativeErr: '0%', 'Max diff': '0', Result: 'pass' } }];
  assert.equal(buildIoTable(rows).worst, null);
});
