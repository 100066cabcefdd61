// The view in the address bar: ?graph=<file id>&step=&rank=&node=[&side=][&micro=][&rules=]
// so that a reload or a shared link lands on the same view.

import { GOLDEN, parseSide } from './sides.js';

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
    side: parseSide(side), // target/golden, or msprobe's NPU/Bench of an older link
    micro: intOr(params.get('micro'), null),
  };
}

/** The verdicts' rule set a query string names ('dtype-aware' or 'msprobe'), else null:
 * the file's default. */
export function rulesParam(search) {
  const rules = new URLSearchParams(search).get('rules');
  return rules === 'dtype-aware' || rules === 'msprobe' ? rules : null;
}

/** The rule set a file is read under: the one asked for where the file holds it, else the
 * file's default (the listing's default_rules: graphboard's dtype-aware where the file holds
 * those verdicts, msprobe's for msprobe's files, builds and md5 mode). */
export function rulesFor(wanted, file) {
  const fallback = file?.default_rules === 'dtype-aware' ? 'dtype-aware' : 'msprobe';
  return wanted === 'msprobe' ? 'msprobe' : fallback;
}

/** The query string of a view; the defaults (the target side, all micro-steps, the file's rule set:
 * the caller passes rules null) are left out. */
export function buildUrlSearch({ graph, step, rank, node, side, micro, rules }) {
  const params = new URLSearchParams();
  if (graph) params.set('graph', graph);
  if (step !== null && step !== undefined) params.set('step', String(step));
  if (rank !== null && rank !== undefined) params.set('rank', String(rank));
  if (node) params.set('node', node);
  if (side === GOLDEN) params.set('side', side);
  if (micro !== null && micro !== undefined && micro >= 0) params.set('micro', String(micro));
  if (rules === 'dtype-aware' || rules === 'msprobe') params.set('rules', rules);
  const text = params.toString();
  return text ? `?${text}` : '';
}
