import assert from 'node:assert/strict';
import { test } from 'node:test';

import { statsSeries } from '../static/js/charts/stats_series.js';
import { buildIoTable, statText, visibleGroups } from '../static/js/panels/io_table.js';
import { isTensor } from '../static/js/param_kind.js';

const stats = (max, extra = {}) => ({ type: 'torch.Tensor', dtype: 'torch.float32', shape: '[4]', Max: max, Min: '0', Mean: '0.5', Norm: '2', data_name: '-1', ...extra });
// what the server types for the chart and the number cells (server/param_stats.py)
const typed = (max) => ({ max, min: 0, mean: 0.5, norm: 2 });
const ROWS = [
  { role: 'input', key: 'input.0', paired_by: 'name', target: { name: 'n.input.0', fields: stats('1.0'), stats: typed(1) }, golden: { name: 'n.input.0', fields: stats('1.0'), stats: typed(1) }, comparison: { MaxRelativeErr: '0.0%', 'Max diff': '0', Result: 'pass' }, result: 'pass', messages: [] },
  { role: 'output', key: 'output.0', paired_by: 'name', target: { name: 'n.output.0', fields: stats('1.5'), stats: typed(1.5) }, golden: { name: 'n.output.0', fields: stats('1.0'), stats: typed(1) }, comparison: { MaxRelativeErr: '50.0%', 'Max diff': '0.5', Result: 'error' }, result: 'error', messages: ['too far'] },
  { role: 'output', key: 'output.1', paired_by: null, target: { name: 'n.output.1', fields: stats('N/A'), stats: typed(null) }, golden: null, comparison: {}, result: null, messages: [] },
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

// msprobe copies a scalar's value into its statistics: a str argument and an int one.
const scalar = (type, value, dtype) => ({ type, value, data_name: '-1', requires_grad: 'null', Max: value, Min: value, Mean: value, Norm: value, dtype, shape: '[]' });
const SCALAR_ROWS = [
  ROWS[0],
  { role: 'input', key: 'input.approximate', paired_by: 'name', target: { name: 'n.input.approximate', fields: scalar('str', 'tanh', '<class str>') }, golden: { name: 'n.input.approximate', fields: scalar('str', 'none', '<class str>') }, comparison: { 'Max diff': 'N/A', Result: 'error' }, result: 'error', messages: ['error: scalar arguments differ'] },
  { role: 'input', key: 'input.src', paired_by: 'name', target: { name: 'n.input.src', fields: scalar('int', '7', 'int') }, golden: null, comparison: {}, result: null, messages: [] },
  { role: 'input', key: 'input.1', paired_by: 'name', target: { name: 'n.input.1', fields: { value: 'null' } }, golden: null, comparison: {}, result: null, messages: [] },
];

test('a scalar argument shows its value once, in the value column', () => {
  const table = buildIoTable(SCALAR_ROWS);
  assert.deepEqual(table.statColumns, ['dtype', 'shape', 'Max', 'Min', 'Mean', 'Norm', 'requires_grad', 'value']);
  const [tensor, text, int, masked] = table.groups;
  assert.equal(tensor.target.Max, '1.0');
  assert.equal(tensor.target.value, undefined);
  for (const stat of ['Max', 'Min', 'Mean', 'Norm']) assert.equal(text.target[stat], undefined);
  assert.deepEqual([text.target.value, text.golden.value, int.target.value, masked.target.value], ['tanh', 'none', '7', 'null']);
  assert.equal(text.target.dtype, '<class str>'); // what it is stays shown
  assert.equal(SCALAR_ROWS[1].target.fields.Max, 'tanh'); // the answer is not changed
});

test('isTensor: by type, else by having no value', () => {
  assert.equal(isTensor({ type: 'torch.Tensor', Max: '1' }), true);
  assert.equal(isTensor({ type: 'mindspore.Tensor', Max: '1' }), true);
  assert.equal(isTensor({ type: 'torch.distributed.ReduceOp', value: 'RedOpType.SUM', Max: 'RedOpType.SUM' }), false);
  assert.equal(isTensor({ type: 'int', value: '0', Max: '0' }), false);
  assert.equal(isTensor({ value: 'null' }), false);
  assert.equal(isTensor({ dtype: 'torch.float32', Max: '1' }), true);
  assert.equal(isTensor(null), false);
});

test('the chart plots tensors only, and only the sides that have numbers', () => {
  const { stats: series, sides } = statsSeries(SCALAR_ROWS);
  assert.deepEqual(series.find((s) => s.stat === 'Max').keys, ['input.0']); // not the int 7
  assert.deepEqual(sides, ['target', 'golden']);
  const unmatched = [{ ...ROWS[0], golden: null }];
  assert.deepEqual(statsSeries(unmatched).sides, ['target']);
  const goldenOnly = [{ ...ROWS[0], target: null }];
  assert.deepEqual(statsSeries(goldenOnly).sides, ['golden']);
  assert.equal(statsSeries(SCALAR_ROWS.slice(1)).empty, true); // scalars alone: no chart
});

test('the chart plots the typed statistics, never numbers read out of the display text', () => {
  const row = (fields, numbers) => ({ ...ROWS[0], target: { name: 'n.input.0', fields, stats: numbers }, golden: null });
  // the text says 9 (a display string); the typed value, 3.25, is what is plotted
  const shown = statsSeries([row(stats('9'), typed(3.25))]).stats.find((s) => s.stat === 'Max');
  assert.deepEqual(shown.target, [3.25]);
  // no typed statistics (a side without them): nothing to plot, whatever the text says
  assert.equal(statsSeries([row(stats('9'), undefined)]).empty, true);
  // NaN and infinities arrive as strings and are not plotted; the other statistics are
  const odd = statsSeries([row(stats('nan'), { max: 'nan', min: '-inf', mean: 'inf', norm: 4 })]).stats;
  assert.deepEqual(odd.map((s) => s.keys.length), [0, 0, 0, 1]);
});

test('a statistic cell is formatted from its typed value, other fields shown as stored', () => {
  const fields = stats('0.1234567891', { md5: '1234' });
  assert.equal(statText(fields, typed(0.1234567891), 'Max'), '0.123457');
  assert.equal(statText(fields, { max: 'inf' }, 'Max'), '+Inf');
  assert.equal(statText(fields, { max: 'nan' }, 'Max'), 'NaN');
  assert.equal(statText(fields, null, 'Max'), '0.1234567891'); // no number: the text as stored
  assert.equal(statText(fields, typed(1), 'md5'), '1234'); // not a statistic: never parsed
  assert.equal(statText(fields, typed(1), 'dtype'), 'torch.float32');
  assert.equal(statText({ value: '7' }, typed(7), 'Max'), '–'); // a scalar shows no Max
});
