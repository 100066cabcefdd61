import assert from 'node:assert/strict';
import { test } from 'node:test';

import { jobRequest } from '../static/js/build/jobs.js';

test('the folder form sends a noise reference (-nr) only when one is chosen', () => {
  assert.deepEqual(jobRequest({ target: 'a', golden: 'b', noiseReference: 'c' }), {
    target: 'a',
    golden: 'b',
    noise_reference: 'c',
    fuzzy_match: false,
    overflow_check: false,
  });
  assert.equal('noise_reference' in jobRequest({ target: 'a', golden: 'b', noiseReference: '' }), false);
});
