// The HTTP API of graphboard's server (see /docs), one function per call. Graph ids may hold
// '/', so each segment is encoded on its own. Errors arrive as {error: {code, message}}.

import { save, saved } from './storage.js';

export class ApiError extends Error {
  constructor(status, code, message, details = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

function graphPath(graph) {
  return graph.split('/').map(encodeURIComponent).join('/');
}

function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === null || value === undefined || value === false) continue;
    for (const item of Array.isArray(value) ? value : [value]) search.append(name, String(item));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

// The bearer token that the Build page saves (from `graphboard token create`), or that the
// URL `graphboard serve` prints brings (/?token=...): writes to graph files need it, uploads
// and jobs too, and reads when the server protects them.
export const TOKEN_KEY = 'graphboard.token';
let urlToken = null; // the URL's token, for this page only when storage is disabled

export function storedToken() {
  return saved(TOKEN_KEY) || urlToken;
}

/** Keep the token the page's URL brings, and take it out of the address bar (so a bookmark
 * or a shared link does not carry it). Each page's main.js calls it before anything reads
 * the URL. */
export function adoptUrlToken(location = globalThis.location, history = globalThis.history) {
  const url = new URL(location.href);
  const token = url.searchParams.get('token');
  if (token === null) return;
  if (token) {
    urlToken = token;
    save(TOKEN_KEY, token);
  }
  url.searchParams.delete('token');
  history.replaceState(history.state, '', `${url.pathname}${url.search}${url.hash}`);
}

/** @param {{base?: string, fetchImpl?: typeof fetch, token?: () => string | null}} options */
export function createApi({ base = '', fetchImpl = globalThis.fetch.bind(globalThis), token = storedToken } = {}) {
  async function request(method, path, { params = {}, body, signal } = {}) {
    const init = { method, signal, headers: { Accept: 'application/json' } };
    const bearer = token?.();
    if (bearer) init.headers.Authorization = `Bearer ${bearer}`;
    if (body instanceof FormData) {
      init.body = body; // multipart: the browser sets the boundary and streams the files
    } else if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers['Content-Type'] = 'application/json';
    }
    const response = await fetchImpl(`${base}${path}${query(params)}`, init);
    const text = await response.text();
    let payload = null;
    try {
      payload = text ? JSON.parse(text) : null;
    } catch {
      payload = null;
    }
    if (!response.ok) {
      const error = payload?.error ?? {};
      throw new ApiError(
        response.status,
        error.code ?? 'http_error',
        error.message ?? `${response.status} ${response.statusText}`,
        error.details ?? null,
      );
    }
    return payload;
  }

  const graphUrl = (graph, tail) => `/api/graphs/${graphPath(graph)}/${tail}`;
  const keyParams = (key) => ({ side: key.side, step: key.step, rank: key.rank });
  // The verdicts' rule set the viewer shows (the file's default or the switch's): the reads
  // whose answers carry verdicts (tree rows, badges, filter, first error) name it, so every
  // answer is under the one the switch says; none named: the server's default for the file.
  let rulesOf = () => null;
  const ruled = (params) => {
    const rules = rulesOf();
    return rules ? { ...params, rules } : params;
  };

  return {
    listGraphs: (options) => request('GET', '/api/graphs', options),
    graphConfig: (graph, options) => request('GET', graphUrl(graph, 'config'), options),
    /** Name the rule set the verdicts are read under: `() => 'msprobe' | 'dtype-aware' | null`. */
    setRules: (getter) => {
      rulesOf = getter;
    },
    children: (graph, key, { parent = null, cursor = null, limit = null, microStep = null } = {}, options = {}) =>
      request('GET', graphUrl(graph, 'children'), {
        ...options,
        params: ruled({ ...keyParams(key), parent, cursor, limit, micro_step: microStep }),
      }),
    node: (graph, key, name, options = {}) =>
      request('GET', graphUrl(graph, 'node'), { ...options, params: { ...keyParams(key), name } }),
    path: (graph, key, name, options = {}) =>
      request('GET', graphUrl(graph, 'path'), { ...options, params: ruled({ ...keyParams(key), name }) }),
    // graphboard diagnose's answer: where inf/NaN was born, the first non-deterministic op
    diagnosis: (graph, options = {}) => request('GET', graphUrl(graph, 'diagnosis'), options),
    firstError: (graph, key, options = {}) =>
      request('GET', graphUrl(graph, 'first-error'), { ...options, params: ruled(keyParams(key)) }),
    worst: (graph, key, name, options = {}) =>
      request('GET', graphUrl(graph, 'worst'), { ...options, params: ruled({ ...keyParams(key), name }) }),
    // Why a target node has its dtype-aware verdict: per parameter, the band beside d.
    ruleVerdict: (graph, key, name, options = {}) =>
      request('GET', graphUrl(graph, 'rule-verdict'), { ...options, params: { ...keyParams(key), name } }),
    peers: (graph, key, name, options = {}) =>
      request('GET', graphUrl(graph, 'peers'), { ...options, params: { ...keyParams(key), name } }),
    search: (graph, key, { q, regex = false, cursor = null, limit = null }, options = {}) =>
      request('GET', graphUrl(graph, 'search'), {
        ...options,
        params: ruled({ ...keyParams(key), q, regex, cursor, limit }),
      }),
    filter: (graph, key, { precision = [], overflow = [], unmatched = false, leavesOnly = false, cursor = null, limit = null }, options = {}) =>
      request('GET', graphUrl(graph, 'filter'), {
        ...options,
        params: ruled({ ...keyParams(key), precision, overflow, unmatched, leaves_only: leavesOnly, cursor, limit }),
      }),
    heatmap: (graph, params, options = {}) => request('GET', graphUrl(graph, 'heatmap'), { ...options, params }),
    // The compare table: `params` {step, rank, result: [...], name, sort, descending} (+ cursor, limit).
    table: (graph, params, options = {}) => request('GET', graphUrl(graph, 'table'), { ...options, params }),
    tableExportUrl: (graph, params, format) => `${base}${graphUrl(graph, 'table-export')}${query({ ...params, format })}`,
    match: (graph, body) => request('POST', graphUrl(graph, 'matches'), { body }),
    unmatch: (graph, { step, rank, target, golden, descendants = false }) =>
      request('DELETE', graphUrl(graph, 'matches'), {
        params: { step, rank, target, golden, descendants },
      }),
    undo: (graph, { step, rank }) =>
      request('POST', graphUrl(graph, 'matches/undo'), { params: { step, rank } }),
    exportConfigUrl: (graph, { step, rank }) =>
      `${base}${graphUrl(graph, 'matches/vis-config')}${query({ step, rank })}`,
    importConfig: (graph, { step, rank, descendants = false }, config) =>
      request('POST', graphUrl(graph, 'matches/vis-config'), {
        params: { step, rank, descendants },
        body: config,
      }),
    // Assisted matching: proposals for the grey nodes, accepted as manual matches or rejected.
    suggestions: (graph, { step, rank, minConfidence = null, under = null }) =>
      request('GET', graphUrl(graph, 'suggestions'), { params: { step, rank, min_confidence: minConfidence, under } }),
    acceptSuggestion: (graph, body) => request('POST', graphUrl(graph, 'suggestions/accept'), { body }),
    acceptAllSuggestions: (graph, body) => request('POST', graphUrl(graph, 'suggestions/accept-all'), { body }),
    rejectSuggestion: (graph, body) => request('POST', graphUrl(graph, 'suggestions/reject'), { body }),
    // Background builds (the Build page, CI): token-protected.
    listDumps: (options) => request('GET', '/api/dumps', options),
    listJobs: ({ limit = 20 } = {}, options = {}) => request('GET', '/api/jobs', { ...options, params: { limit } }),
    job: (id, options) => request('GET', `/api/jobs/${encodeURIComponent(id)}`, options),
    verdict: (id, options) => request('GET', `/api/jobs/${encodeURIComponent(id)}/verdict`, options),
    startJob: (body) => request('POST', '/api/jobs', { body }),
    upload: (formData) => request('POST', '/api/uploads', { body: formData }),
    // Monitor compares (graphboard monitor) as jobs: the runs under the data dir, and a start.
    listMonitorRuns: (options) => request('GET', '/api/monitor/runs', options),
    startMonitorJob: (body) => request('POST', '/api/monitor/jobs', { body }),
  };
}
