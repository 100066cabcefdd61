// Following a background build, without the DOM: polling with back-off, the requests the
// Build page sends, and what it shows of a job and a verdict.

export const FIRST_POLL_MS = 300;
export const MAX_POLL_MS = 3000;
const FINISHED = new Set(['done', 'failed']);

const defaultSleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function isFinished(job) {
  return FINISHED.has(job?.status);
}

/** The next polling delay: quick at first (small builds end in a second), then slower. */
export function nextDelay(delay) {
  return Math.min(MAX_POLL_MS, Math.round(delay * 1.5));
}

/** Poll the job until it ends; onUpdate(job) after every answer. Resolves with the last
 * state; stops quietly (resolving null) once `signal` is aborted. */
export async function followJob(api, id, { onUpdate = () => {}, sleep = defaultSleep, signal } = {}) {
  let delay = FIRST_POLL_MS;
  for (;;) {
    if (signal?.aborted) return null;
    const job = await api.job(id, { signal });
    if (signal?.aborted) return null;
    onUpdate(job);
    if (isFinished(job)) return job;
    await sleep(delay);
    delay = nextDelay(delay);
  }
}

/** POST /api/jobs body from the folder form: empty choices left out. */
export function jobRequest({ target, golden = '', layerMapping = '', noiseReference = '', fuzzyMatch = false, overflowCheck = false }) {
  const body = { target, fuzzy_match: Boolean(fuzzyMatch), overflow_check: Boolean(overflowCheck) };
  if (golden) body.golden = golden;
  if (layerMapping) body.layer_mapping = layerMapping;
  if (noiseReference) body.noise_reference = noiseReference; // graph_build -nr
  return body;
}

/** The multipart form of POST /api/uploads. */
export function uploadForm(
  { target, golden = null, layerMapping = null, fuzzyMatch = false, overflowCheck = false },
  FormDataImpl = globalThis.FormData,
) {
  const form = new FormDataImpl();
  form.append('target', target);
  if (golden) form.append('golden', golden);
  if (layerMapping) form.append('layer_mapping', layerMapping);
  form.append('fuzzy_match', String(Boolean(fuzzyMatch)));
  form.append('overflow_check', String(Boolean(overflowCheck)));
  return form;
}

/** Select options for the dump folders: buildable ones, then the others, disabled, with
 * the reason as their title (so an empty list never goes unexplained). */
export function dumpOptions(folders, t) {
  const describe = (folder) =>
    folder.kind === 'rank'
      ? t('build.kindRank', { step: folder.steps[0] ?? 0, rank: folder.ranks[0] ?? 0 })
      : t('build.kindMany', { steps: folder.steps.length, ranks: folder.ranks.length });
  const good = folders.filter((folder) => !folder.error);
  const bad = folders.filter((folder) => folder.error);
  return [
    ...good.map((folder) => ({ value: folder.path, label: `${folder.path} (${describe(folder)})`, disabled: false, title: '' })),
    ...bad.map((folder) => ({
      value: folder.path,
      label: `${folder.path} (${t('build.invalid')})`,
      disabled: true,
      title: folder.error,
    })),
  ];
}

/** "running 40% · 2/5 step 0 rank 1", for the live line. */
export function progressText(job, t) {
  const status = t(`build.status.${job.status}`);
  const parts = [status, `${job.progress}%`];
  if (job.parts_total) parts.push(t('build.parts', { done: job.parts_done, total: job.parts_total }));
  if (job.message && job.status !== 'failed') parts.push(job.message);
  return parts.join(' · ');
}

/** The verdict as label/value rows. */
export function verdictRows(verdict, t) {
  const { counts, overflow } = verdict;
  const rows = [
    [t('build.nodes'), t('build.countsLine', { pass: counts.pass, warning: counts.warning, error: counts.error, unmatched: counts.unmatched })],
    [t('build.overflowCounts'), t('build.overflowLine', overflow)],
  ];
  const first = verdict.first_error;
  if (first) {
    let text = t('build.firstErrorLine', { name: first.name, step: first.step, rank: first.rank });
    const worst = first.worst_metric;
    if (worst?.metric) text += ` · ${worst.parameter} ${worst.metric} = ${worst.shown}`;
    if (worst?.message) text += ` · ${worst.message}`;
    rows.push([t(first.level === 'error' ? 'build.firstError' : 'build.firstWarning'), text]);
  } else {
    rows.push([t('build.firstError'), t('build.noError')]);
  }
  return rows;
}

/** A monitor job's verdict (kind monitor) as label/value rows: the summary line and the first
 * departure. */
export function monitorVerdictRows(verdict, t) {
  const first = verdict.first_departure;
  return [
    [t('build.summary'), verdict.summary],
    [t('build.firstDeparture'), first ? t('build.firstDepartureLine', first) : t('build.noDeparture')],
  ];
}

/** Select options for the monitor runs under the data dir. */
export function monitorRunOptions(runs) {
  return runs.map((run) => ({ value: run.path, label: run.path, disabled: false, title: '' }));
}
