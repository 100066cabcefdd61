// The Table page without the DOM: its view in the address bar
// (?graph=&step=&rank=[&result=...][&name=][&sort=[&descending=1]]), the API's query for it,
// the next sort of a header click, how each column is drawn, and a row's link to the viewer.

import { buildUrlSearch, indexParam } from '../url_state.js';

// The Result values the API filters by, in the order the page offers them.
export const RESULTS = ['error', 'warning', 'pass'];
// The server refuses an XLSX of more rows (MAX_XLSX_ROWS in server/routes/table.py).
export const MAX_XLSX_ROWS = 100_000;

// Columns drawn other than as a number, by their msprobe (or graphboard) name; every other
// column of msprobe's headers (differences, errors, statistics) holds numbers or N/A.
const KINDS = new Map([
  ['NPU Name', 'name'],
  ['Bench Name', 'name'],
  ['Result', 'level'],
  ['Divergence Starts Here', 'level'],
  ['Err_message', 'long'],
  ['NPU_Stack_Info', 'long'],
  ['Data_name', 'long'],
  ['NPU Dtype', 'text'],
  ['Bench Dtype', 'text'],
  ['NPU Tensor Shape', 'text'],
  ['Bench Tensor Shape', 'text'],
  ['NPU Requires_grad', 'text'],
  ['Bench Requires_grad', 'text'],
  ['Requires_grad Consistent', 'text'],
  ['NPU MD5', 'text'],
  ['BENCH MD5', 'text'],
]);
const WIDTHS = { name: 340, long: 280, text: 130, number: 120, level: 96 };

/** {graph, step, rank, results, name, sort, descending} from a query string. */
export function parseTableState(search) {
  const params = new URLSearchParams(search);
  const wanted = new Set(params.getAll('result'));
  const sort = params.get('sort') || null;
  return {
    graph: params.get('graph') || null,
    step: indexParam(params.get('step')),
    rank: indexParam(params.get('rank')),
    results: RESULTS.filter((result) => wanted.has(result)),
    name: params.get('name') ?? '',
    sort,
    descending: sort !== null && params.get('descending') === '1',
  };
}

/** The query string of a view; what is not filtered or sorted is left out. */
export function buildTableSearch(state) {
  const params = new URLSearchParams();
  if (state.graph) params.set('graph', state.graph);
  if (state.step !== null && state.step !== undefined) params.set('step', String(state.step));
  if (state.rank !== null && state.rank !== undefined) params.set('rank', String(state.rank));
  for (const result of state.results ?? []) params.append('result', result);
  if (state.name) params.set('name', state.name);
  if (state.sort) {
    params.set('sort', state.sort);
    if (state.descending) params.set('descending', '1');
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** The parameters of /table and /table-export for a view (the same filters and sort). */
export function tableParams(state) {
  const name = (state.name ?? '').trim() ? state.name : null;
  return {
    step: state.step,
    rank: state.rank,
    result: [...(state.results ?? [])],
    name,
    sort: state.sort ?? null,
    descending: Boolean(state.sort && state.descending),
  };
}

/** The sort after a click on `column`'s header: ascending, descending, then the table's own
 * order (msprobe's row order) again. */
export function nextSort(state, column) {
  if (state.sort !== column) return { sort: column, descending: false };
  if (!state.descending) return { sort: column, descending: true };
  return { sort: null, descending: false };
}

/** How a column is drawn: 'name', 'level' (a verdict, coloured), 'long', 'text' or 'number'. */
export function columnKind(column) {
  return KINDS.get(column) ?? 'number';
}

// What the page is read for comes first, after the NPU Name: the verdict and its reason,
// then the relative errors (msprobe's summary verdict reads them, and a verdict's worst
// metric ranks them first). In msprobe's order they sat ~4,000 px to the right, past the
// names, dtypes, shapes and absolute differences. The downloads keep msprobe's order.
const VERDICT_COLUMNS = ['Result', 'Divergence Starts Here', 'Err_message'];
const isRelativeError = (column) => column.endsWith('RelativeErr');

/** The order columns are shown in: indices into `columns` (the API's, msprobe's order). */
export function displayOrder(columns) {
  const lead = columns.length ? [0] : []; // the NPU Name, pinned at the left
  const verdict = VERDICT_COLUMNS.map((name) => columns.indexOf(name)).filter((index) => index > 0);
  const relative = columns.map((name, index) => (index > 0 && isRelativeError(name) ? index : -1)).filter((index) => index > 0);
  const first = [...lead, ...verdict, ...relative];
  const placed = new Set(first);
  return [...first, ...columns.map((_name, index) => index).filter((index) => !placed.has(index))];
}

/** Each shown column's name, kind and width (in display order, with `order` mapping a shown
 * column to its index in a row's cells), as one CSS grid template the header and rows share. */
export function columnLayout(columns) {
  const order = displayOrder(columns);
  const shown = order.map((index) => columns[index]);
  const kinds = shown.map(columnKind);
  const widths = kinds.map((kind) => WIDTHS[kind]);
  return {
    columns: shown,
    order,
    kinds,
    widths,
    template: widths.map((width) => `${width}px`).join(' '),
    width: widths.reduce((sum, width) => sum + width, 0),
  };
}

/** The viewer's address of a row's node, on the table's step and rank. */
export function nodeHref(state, node) {
  return `/${buildUrlSearch({ graph: state.graph, step: state.step, rank: state.rank, node })}`;
}
