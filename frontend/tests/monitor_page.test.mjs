import assert from 'node:assert/strict';
import { test } from 'node:test';

import { scoreCells, stepMarkers } from '../static/js/monitor/monitor_page.js';

test('a score grid runs from 0 to at least 2; a one-sided NaN or infinity is drawn at the top', () => {
  const { z, text, zmin, zmax } = scoreCells([[0, 0.5, 'Infinity'], [null, 3, 'NaN']]);
  assert.deepEqual([zmin, zmax], [0, 3]);
  assert.deepEqual(z, [[0, 0.5, 3], [null, 3, 3]]);
  assert.equal(text[0][2], 'not finite on one side');
  assert.equal(scoreCells([[0.1]]).zmax, 2);
});

test('the first departure and the target\'s spikes are marked at their step columns', () => {
  const report = { first_departure: { step: 20 }, spikes: { target: [{ step: 22 }, { step: 99 }] } };
  const shapes = stepMarkers(report, 'actv', [18, 19, 20, 21, 22]);
  assert.deepEqual(shapes.map((s) => s.x0), [2, 4]); // step 99 is not shown: no marker
  assert.equal(shapes[1].line.dash, 'dot');
  assert.deepEqual(stepMarkers({ first_departure: null, spikes: {} }, 'actv', [0]), []);
});
