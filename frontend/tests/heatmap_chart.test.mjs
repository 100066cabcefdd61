import assert from 'node:assert/strict';
import { test } from 'node:test';

import { heatmapCells } from '../static/js/trends/heatmap_chart.js';

const t = (key) => key;

test('the API\'s "Infinity" and "NaN" strings are the worst there is, drawn at the top of the scale', () => {
  const answer = { values: [[0.5, 'Infinity'], [null, 'NaN'], [-2, '-Infinity']] };
  const { z, text, zmin, zmax } = heatmapCells(answer, 'max', t);
  assert.deepEqual([zmin, zmax], [-2, 2]); // diverging around 0: the larger side's bound
  assert.deepEqual(z, [[0.5, 0.5], [null, 0.5], [-2, -2]]);
  assert.deepEqual(text, [['0.500000', '∞'], ['trends.noValue', 'NaN'], ['-2.00000', '−∞']]);
});

test('the excess: within the band stays in the lower half, an argument that starts an error on top', () => {
  const answer = { values: [[0.25, 'Infinity'], [0.8, null]] };
  const { z, text, zmin, zmax } = heatmapCells(answer, 'excess', t);
  assert.deepEqual([zmin, zmax], [0, 2]);
  assert.deepEqual(z, [[0.25, 2], [0.8, null]]);
  assert.deepEqual(text, [['0.250 × band', '∞'], ['0.800 × band', 'trends.noValue']]);
  const faulty = heatmapCells({ values: [[0.3, 6.1]] }, 'excess', t);
  assert.equal(faulty.zmax, 6.1);
});
