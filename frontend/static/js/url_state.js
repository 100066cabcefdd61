// The view in the address bar: ?graph=<file id>&step=&rank=&node=[&side=][&micro=][&rules=]
// so that a reload or a shared link lands on the same view.

function intOr(value, fallback) {
  if (value === null || value === '' || !/^-?\d+$/.test(value)) return fallback;
  return Number(value);
}

/** A step, rank or depth from a query string: a non-negative integer, else null (the
 * Trends and Table pages' parameters; the viewer's own go through intOr above). */
export function indexParam(value) {
  return value !== null && /^\d+$/.test(value) ? Number(value) : null;
}

/** {graph, step, rank, node, side, micro} from a query string; missing parts are null. */
export function parseUrlState(search) {
  const params = new URLSearchParams(search);
  const side = params.get('side');
  return {
    graph: params.get('graph') || null,
    step: intOr(params.get('step'), null),
    rank: intOr(params.get('rank'), null),
    node: params.get('node') || null,
    side: side === 'Bench' ? 'Bench' : side === 'NPU' ? 'NPU' : null,
    micro: intOr(params.get('micro'), null),
  };
}

/** The verdicts' rule set a query string names: 'dtype-aware', else msprobe's. */
export function rulesParam(search) {
  return new URLSearchParams(search).get('rules') === 'dtype-aware' ? 'dtype-aware' : 'msprobe';
}

/** The query string of a view; the defaults (side NPU, all micro-steps, msprobe's rules)
 * are left out. */
export function buildUrlSearch({ graph, step, rank, node, side, micro, rules }) {
  const params = new URLSearchParams();
  if (graph) params.set('graph', graph);
  if (step !== null && step !== undefined) params.set('step', String(step));
  if (rank !== null && rank !== undefined) params.set('rank', String(rank));
  if (node) params.set('node', node);
  if (side === 'Bench') params.set('side', side);
  if (micro !== null && micro !== undefined && micro >= 0) params.set('micro', String(micro));
  if (rules === 'dtype-aware') params.set('rules', rules);
  const text = params.toString();
  return text ? `?${text}` : '';
}
