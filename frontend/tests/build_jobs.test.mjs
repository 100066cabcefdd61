import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createApi } from '../static/js/api.js';
import { FIRST_POLL_MS, MAX_POLL_MS, dumpOptions, followJob, jobRequest, monitorRunOptions, monitorVerdictRows, nextDelay, progressText, uploadForm, verdictRows } from '../static/js/build/jobs.js';
import { translate } from '../static/js/i18n.js';

const t = (key, params) => translate('en', key, params);

test('following a job backs off until it ends', async () => {
  const states = ['queued', 'running', 'running', 'running', 'done'];
  const seen = [];
  const slept = [];
  const api = { job: async () => ({ status: states.shift(), progress: 0 }) };
  const last = await followJob(api, 'j', {
    onUpdate: (job) => seen.push(job.status),
    sleep: async (ms) => slept.push(ms),
  });
  assert.equal(last.status, 'done');
  assert.deepEqual(seen, ['queued', 'running', 'running', 'running', 'done']);
  assert.equal(slept[0], FIRST_POLL_MS);
  assert.ok(slept.every((ms, index) => index === 0 || ms >= slept[index - 1]));
  let delay = FIRST_POLL_MS;
  for (let index = 0; index < 20; index += 1) delay = nextDelay(delay);
  assert.equal(delay, MAX_POLL_MS);
});

test('following stops when aborted', async () => {
  const controller = new AbortController();
  let polls = 0;
  const api = {
    job: async () => {
      polls += 1;
      return { status: 'running', progress: 5 };
    },
  };
  const result = await followJob(api, 'j', { signal: controller.signal, sleep: async () => controller.abort() });
  assert.equal(result, null);
  assert.equal(polls, 1);
});

test('requests leave out empty choices', () => {
  assert.deepEqual(jobRequest({ target: 'runs/a', golden: '', layerMapping: '' }), {
    target: 'runs/a',
    fuzzy_match: false,
    overflow_check: false,
  });
  assert.deepEqual(jobRequest({ target: 'a', golden: 'b', layerMapping: 'm.yaml', fuzzyMatch: true }), {
    target: 'a',
    golden: 'b',
    layer_mapping: 'm.yaml',
    fuzzy_match: true,
    overflow_check: false,
  });
  const form = uploadForm({ target: new Blob(['x']), overflowCheck: true });
  assert.deepEqual([...form.keys()], ['target', 'fuzzy_match', 'overflow_check']);
  assert.equal(form.get('overflow_check'), 'true');
});

test('dump folders: buildable first, the others disabled with the reason', () => {
  const options = dumpOptions(
    [
      { path: 'bad', kind: null, steps: [], ranks: [], error: 'bad/rank0: missing construct.json' },
      { path: 'run', kind: 'steps', steps: [0, 1], ranks: [0, 1], error: null },
      { path: 'run/step0/rank0', kind: 'rank', steps: [0], ranks: [0], error: null },
    ],
    t,
  );
  assert.deepEqual(
    options.map((option) => [option.value, option.disabled]),
    [['run', false], ['run/step0/rank0', false], ['bad', true]],
  );
  assert.equal(options[0].label, 'run (2 step(s) × 2 rank(s))');
  assert.equal(options[1].label, 'run/step0/rank0 (step 0, rank 0)');
  assert.equal(options[2].title, 'bad/rank0: missing construct.json');
});

test('progress and verdict texts', () => {
  assert.equal(
    progressText({ status: 'running', progress: 40, parts_total: 4, parts_done: 2, message: '2/4 step 0 rank 1' }, t),
    'running · 40% · 2/4 ranks · 2/4 step 0 rank 1',
  );
  const rows = verdictRows(
    {
      counts: { pass: 82, warning: 8, error: 1, unmatched: 0 },
      overflow: { medium: 0, high: 1, critical: 0 },
      first_error: {
        name: 'Functional.gelu.0.forward',
        step: 0,
        rank: 0,
        level: 'error',
        worst_metric: { parameter: 'input.approximate', metric: null, shown: null, message: 'error: scalar arguments differ' },
      },
    },
    t,
  );
  assert.deepEqual(rows[0], ['Nodes (target)', '82 pass · 8 warning · 1 error · 0 unmatched']);
  assert.deepEqual(rows[1], ['Overflow', '0 medium · 1 high · 0 critical']);
  assert.deepEqual(rows[2], ['First error', 'Functional.gelu.0.forward (step 0, rank 0) · error: scalar arguments differ']);
});

test('the api client sends the saved token and multipart bodies as they are', async () => {
  const calls = [];
  const fetchImpl = async (url, init) => {
    calls.push({ url, init });
    return { ok: true, status: 201, statusText: 'Created', text: async () => '{"job_id": "x"}' };
  };
  const api = createApi({ fetchImpl, token: () => 'gbt_abc' });
  const form = uploadForm({ target: new Blob(['x']) });
  await api.upload(form);
  assert.equal(calls[0].url, '/api/uploads');
  assert.equal(calls[0].init.headers.Authorization, 'Bearer gbt_abc');
  assert.equal(calls[0].init.body, form);
  assert.equal(calls[0].init.headers['Content-Type'], undefined);
  await createApi({ fetchImpl, token: () => null }).listJobs();
  assert.equal(calls[1].url, '/api/jobs?limit=20');
  assert.equal(calls[1].init.headers.Authorization, undefined);
});

test('a monitor verdict shows the summary and the first departure, or that the runs agree', () => {
  const t = (key, params) => (params ? `${key}:${JSON.stringify(params)}` : key);
  const first = { step: 20, module: 'blocks.2.mlp', kind: 'forward', metric: 'actv', target: 'blocks.2.mlp.output', rank: 0 };
  const rows = monitorVerdictRows({ summary: 'the line', first_departure: first }, t);
  assert.deepEqual(rows[0], ['build.summary', 'the line']);
  assert.equal(rows[1][1], `build.firstDepartureLine:${JSON.stringify(first)}`);
  assert.deepEqual(monitorVerdictRows({ summary: 's', first_departure: null }, t)[1], ['build.firstDeparture', 'build.noDeparture']);
  assert.deepEqual(monitorRunOptions([{ path: 'exp/a', kind: 'folder' }]).map((o) => o.value), ['exp/a']);
});
