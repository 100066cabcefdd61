import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  MAX_XLSX_ROWS,
  buildTableSearch,
  columnKind,
  columnLayout,
  displayOrder,
  nextSort,
  nodeHref,
  parseTableState,
  tableParams,
} from '../static/js/table/table_model.js';

const VIEW = {
  graph: 'runs/compare 1',
  step: 2,
  rank: 1,
  results: ['error', 'warning'],
  name: 'conv2d&x',
  sort: 'MaxRelativeErr',
  descending: true,
};

test('a whole view survives the address bar', () => {
  assert.deepEqual(parseTableState(buildTableSearch(VIEW)), VIEW);
});

test('defaults are left out, and unknown or malformed parts read as defaults', () => {
  const plain = { graph: 'g', step: 0, rank: 0, results: [], name: '', sort: null, descending: false };
  assert.equal(buildTableSearch(plain), '?graph=g&step=0&rank=0');
  assert.deepEqual(parseTableState('?graph=g&step=x&result=evil&result=pass&result=pass&descending=yes'), {
    graph: 'g', step: null, rank: null, results: ['pass'], name: '', sort: null, descending: false,
  });
  // descending means nothing without a sort
  assert.equal(buildTableSearch({ ...plain, descending: true }), '?graph=g&step=0&rank=0');
});

test("the API's query: repeated result, no empty name, descending only with a sort", () => {
  assert.deepEqual(tableParams(VIEW), {
    step: 2, rank: 1, result: ['error', 'warning'], name: 'conv2d&x', sort: 'MaxRelativeErr', descending: true,
  });
  assert.deepEqual(tableParams({ ...VIEW, results: [], name: '  ', sort: null }), {
    step: 2, rank: 1, result: [], name: null, sort: null, descending: false,
  });
});

test('a header click sorts ascending, then descending, then back to the table order', () => {
  const plain = { sort: null, descending: false };
  const up = nextSort(plain, 'Max diff');
  assert.deepEqual(up, { sort: 'Max diff', descending: false });
  const down = nextSort(up, 'Max diff');
  assert.deepEqual(down, { sort: 'Max diff', descending: true });
  assert.deepEqual(nextSort(down, 'Max diff'), plain);
  // another column starts over, ascending
  assert.deepEqual(nextSort(down, 'NPU max'), { sort: 'NPU max', descending: false });
});

test('columns: names, verdicts and long text by name; every other msprobe column is a number', () => {
  assert.equal(columnKind('NPU Name'), 'name');
  assert.equal(columnKind('Bench Name'), 'name');
  assert.equal(columnKind('Result'), 'level');
  assert.equal(columnKind('Divergence Starts Here'), 'level');
  assert.equal(columnKind('NPU_Stack_Info'), 'long');
  assert.equal(columnKind('Err_message'), 'long');
  assert.equal(columnKind('NPU Dtype'), 'text');
  assert.equal(columnKind('BENCH MD5'), 'text');
  for (const name of ['Max diff', 'MaxRelativeErr', 'Cosine', 'One Thousandth Err Ratio', 'Bench l2norm']) {
    assert.equal(columnKind(name), 'number', name);
  }
});

test('the layout: one width per column, a grid template, and the total width', () => {
  const layout = columnLayout(['NPU Name', 'Max diff', 'Result']);
  assert.deepEqual(layout.columns, ['NPU Name', 'Result', 'Max diff']); // the verdict first
  assert.deepEqual(layout.order, [0, 2, 1]);
  assert.deepEqual(layout.kinds, ['name', 'level', 'number']);
  assert.equal(layout.template, layout.widths.map((width) => `${width}px`).join(' '));
  assert.equal(layout.width, layout.widths.reduce((sum, width) => sum + width, 0));
  assert.ok(layout.widths[0] > layout.widths[1], 'a name column is wider than a number column');
});

test("a row's link opens the viewer on its node, step and rank", () => {
  assert.equal(
    nodeHref(VIEW, 'Functional.conv2d.0.forward'),
    '/?graph=runs%2Fcompare+1&step=2&rank=1&node=Functional.conv2d.0.forward',
  );
});

test("the XLSX limit is the server's", () => {
  assert.equal(MAX_XLSX_ROWS, 100_000);
});

test("the verdict, its reason and the relative errors are shown first; the rest in msprobe's order", () => {
  // msprobe 26.2 compare's summary header, then graphboard's own column
  const columns = [
    'NPU Name', 'Bench Name', 'NPU Dtype', 'Bench Dtype', 'NPU Tensor Shape', 'Bench Tensor Shape',
    'NPU Requires_grad', 'Bench Requires_grad', 'Max diff', 'Min diff', 'Mean diff', 'L2norm diff',
    'MaxRelativeErr', 'MinRelativeErr', 'MeanRelativeErr', 'NormRelativeErr', 'NPU max', 'NPU min',
    'NPU mean', 'NPU l2norm', 'Bench max', 'Bench min', 'Bench mean', 'Bench l2norm',
    'Requires_grad Consistent', 'Result', 'Err_message', 'NPU_Stack_Info', 'Divergence Starts Here',
  ];
  const shown = displayOrder(columns).map((index) => columns[index]);
  assert.deepEqual(shown.slice(0, 8), [
    'NPU Name', 'Result', 'Divergence Starts Here', 'Err_message',
    'MaxRelativeErr', 'MinRelativeErr', 'MeanRelativeErr', 'NormRelativeErr',
  ]);
  assert.deepEqual(shown.slice(8), columns.filter((name) => !shown.slice(0, 8).includes(name)));
  assert.deepEqual([...shown].sort(), [...columns].sort()); // every column once
  const layout = columnLayout(columns);
  const resultRight = layout.widths.slice(0, shown.indexOf('MaxRelativeErr') + 1).reduce((a, b) => a + b, 0);
  assert.ok(resultRight <= 1280 - 32, `MaxRelativeErr ends at ${resultRight}px: in a 1280px window`);
});
