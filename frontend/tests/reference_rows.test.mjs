import assert from 'node:assert/strict';
import { test } from 'node:test';

import { buildIoTable, referenceOf, statText } from '../static/js/panels/io_table.js';

// a row of /node for a file built with -nr (server/reference_rows.py)
const stats = (max) => ({ type: 'torch.Tensor', dtype: 'torch.bfloat16', shape: '[2, 4]', Max: String(max), Min: '0', Mean: '0.5', Norm: '2' });
const typed = (max) => ({ max, min: 0, mean: 0.5, norm: 2 });
const REFERENCE = { dtype: 'torch.bfloat16', shape: [2, 4], stats: { max: 1.0009765625, min: 0, mean: 0.5, norm: 2 }, d_target: 0.104, d_reference: 0.000979, band: 0.00977, verdict: 'error' };
const ROW = { role: 'output', key: 'output.0', paired_by: 'name', target: { name: 'n.output.0', fields: stats(1.1), stats: typed(1.1) }, golden: { name: 'n.output.0', fields: stats(1), stats: typed(1) }, comparison: {}, result: 'error', messages: [], reference: REFERENCE };

test('a reference row shows its statistics in the same columns as target and golden', () => {
  const table = buildIoTable([ROW]);
  const { reference } = table.groups[0];
  assert.deepEqual(table.statColumns, ['dtype', 'shape', 'Max', 'Min', 'Mean', 'Norm']);
  assert.equal(statText(reference.fields, reference.stats, 'dtype'), 'torch.bfloat16');
  assert.equal(statText(reference.fields, reference.stats, 'shape'), '[2, 4]');
  assert.notEqual(statText(reference.fields, reference.stats, 'Max'), '–');
  assert.deepEqual([reference.dTarget, reference.dReference, reference.band, reference.verdict], [0.104, 0.000979, 0.00977, 'error']);
});

test('no reference: no third row', () => {
  assert.equal(referenceOf(null), null);
  assert.equal(buildIoTable([{ ...ROW, reference: null }]).groups[0].reference, null);
  assert.equal(buildIoTable([{ ...ROW, reference: undefined }]).groups[0].reference, null);
});
