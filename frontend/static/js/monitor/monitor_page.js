// The Monitor trends page: two runs' training-state monitor data from a `graphboard monitor`
// file (/api/monitor/...). A heatmap of one metric's targets x steps (either run, their
// difference or the noise score) with the first departure and the spikes marked; a click
// shows that target's lines over steps for both runs and its ranks x steps. The heatmap's
// colours and hover text reuse the Trends page's (trends/heatmap_chart.js).

import { loadPlotly, cssVar } from '../charts/stats_chart.js';
import { Page } from '../page.js';
import { cellCenter, heatmapCells, formatValue } from '../trends/heatmap_chart.js';

async function getJson(url) {
  const response = await fetch(url);
  const body = await response.json();
  if (!response.ok) throw new Error(body?.detail ?? body?.message ?? response.statusText);
  return body;
}

/** Vertical markers (plotly shapes) at the first departure's step and at the spikes' steps. */
export function stepMarkers(report, metricKind, steps) {
  const shapes = [];
  const at = (step) => steps.indexOf(step);
  const first = report.first_departure;
  if (first && at(first.step) >= 0) {
    shapes.push({ type: 'line', xref: 'x', yref: 'paper', x0: at(first.step), x1: at(first.step), y0: 0, y1: 1, line: { color: '#e5533d', width: 2 } });
  }
  for (const spike of report.spikes?.target ?? []) {
    if (at(spike.step) < 0) continue;
    shapes.push({ type: 'line', xref: 'x', yref: 'paper', x0: at(spike.step), x1: at(spike.step), y0: 0, y1: 1, line: { color: '#f5a142', width: 2, dash: 'dot' } });
  }
  return shapes;
}

/** Cells of a score grid: |target - golden| / noise, 1 the departure line. Non-finite scores
 * (a NaN or infinity on one side only) and scores past the largest finite one are drawn at
 * the top of the scale, which starts at 0 and reaches at least 2 so that 1 sits mid-scale. */
export function scoreCells(values) {
  const numbers = values.map((row) => row.map((v) => (typeof v === 'number' ? v : v === null ? null : Infinity)));
  const finite = numbers.flat().filter((v) => v !== null && Number.isFinite(v));
  const top = Math.max(2, ...finite);
  const z = numbers.map((row) => row.map((v) => (v === null ? null : Number.isFinite(v) ? v : top)));
  const text = numbers.map((row) => row.map((v) => (v === null ? '—' : Number.isFinite(v) ? v.toPrecision(4) : 'not finite on one side')));
  return { z, text, scale: 'YlOrRd', reverse: true, zmin: 0, zmax: top, zmid: undefined };
}

/** Links to the .vis.db files showing the first departure's step (/api/monitor/{file}/graphs):
 * those of the run first (match "step and run"), then those matched on the step alone. */
export function graphLinks(doc, answer) {
  return answer.graphs.map((graph) => {
    const link = doc.createElement('a');
    link.href = graph.url;
    link.className = 'button-link';
    link.dataset.match = graph.match;
    link.title = graph.match === 'step' ? 'holds that step and rank (the dump folders it was built from are not recorded)' : 'holds that step and rank, built from this run\'s dump';
    link.textContent = `step ${answer.step}: ${graph.graph}.vis.db`;
    return link;
  });
}

export function summaryText(report) {
  return report.summary ?? '';
}

export class MonitorPage extends Page {
  constructor(doc) {
    super(doc);
    this.el = (id) => doc.getElementById(id);
    this.say = (key) => this.t(key);
    this.plotlyUrl = doc.body.dataset.plotlyUrl;
    this.state = { file: null, report: null, series: [], statistics: [] };
  }

  async start() {
    this.applyLook();
    this.listenToLook(() => this.state.file && this.drawHeatmap());
    this.doc.body.dataset.ready = 'false';
    const { files } = await getJson('/api/monitor');
    const select = this.el('monitor-file');
    select.replaceChildren(...files.map((f) => new Option(f.id, f.id)));
    const wanted = new URLSearchParams(location.search).get('file');
    if (wanted) select.value = wanted;
    select.addEventListener('change', () => this.loadFile());
    for (const id of ['monitor-metric', 'monitor-statistic', 'monitor-side', 'monitor-rank']) {
      this.el(id).addEventListener('change', () => this.drawHeatmap());
    }
    if (files.length) await this.loadFile();
    else this.el('monitor-summary').textContent = 'No graphboard monitor files (*.trend.db) under the data dir.';
    this.doc.body.dataset.ready = 'true';
  }

  base() {
    return `/api/monitor/${this.state.file.split('/').map(encodeURIComponent).join('/')}`;
  }

  async loadFile() {
    this.state.file = this.el('monitor-file').value;
    const answer = await getJson(`${this.base()}/report`);
    Object.assign(this.state, { report: answer.report, series: answer.series, statistics: answer.statistics });
    const metrics = [...new Set(answer.series.map((s) => s.metric))];
    this.el('monitor-metric').replaceChildren(...metrics.map((m) => new Option(m, m)));
    const first = answer.report.first_departure;
    if (first && metrics.includes(first.metric)) this.el('monitor-metric').value = first.metric;
    this.el('monitor-statistic').replaceChildren(...answer.statistics.map((s) => new Option(s, s)));
    this.el('monitor-rank').replaceChildren(...answer.report.ranks.map((r) => new Option(String(r), String(r))));
    if (first) this.el('monitor-rank').value = String(first.rank);
    const link = this.el('monitor-dump-config');
    link.hidden = !first;
    link.href = `${this.base()}/dump-config`;
    this.el('monitor-summary').textContent = summaryText(answer.report);
    const graphs = first ? await getJson(`${this.base()}/graphs`) : { graphs: [] };
    this.el('monitor-graphs').replaceChildren(...graphLinks(this.doc, graphs));
    await this.drawHeatmap();
    await this.drawGradNorm();
  }

  async drawHeatmap() {
    const metric = this.el('monitor-metric').value;
    const statistic = this.el('monitor-statistic').value;
    const side = this.el('monitor-side').value;
    const rank = this.el('monitor-rank').value;
    const query = new URLSearchParams({ metric, statistic, side, rank });
    const grid = await getJson(`${this.base()}/heatmap?${query}`);
    this.grid = grid;
    const Plotly = await loadPlotly(this.plotlyUrl);
    const cells = side === 'score' ? scoreCells(grid.values) : heatmapCells({ ...grid, nodes: [] }, statistic, this.say);
    const host = this.el('monitor-heatmap');
    const trace = {
      type: 'heatmap', z: cells.z, x: grid.cols.map(String), y: grid.rows, text: cells.text,
      colorscale: cells.scale, reversescale: Boolean(cells.reverse), zmin: cells.zmin, zmax: cells.zmax, zmid: cells.zmid,
      hovertemplate: 'step %{x}<br>%{y}<br>%{text}<extra></extra>', xgap: 1, ygap: 1, hoverongaps: false,
    };
    const layout = {
      margin: { l: 20, r: 20, t: 10, b: 50 },
      height: Math.max(320, Math.min(1600, 60 + 18 * grid.rows.length)),
      paper_bgcolor: 'rgba(0,0,0,0)', plot_bgcolor: 'rgba(0,0,0,0)',
      font: { color: cssVar('--text', '#222'), size: 11 },
      xaxis: { type: 'category', title: { text: 'step' } },
      yaxis: { type: 'category', autorange: 'reversed', automargin: true },
      shapes: stepMarkers(this.state.report, metric, grid.cols),
    };
    await Plotly.react(host, [trace], layout, { displaylogo: false, responsive: true });
    host.removeAllListeners?.('plotly_click');
    host.on('plotly_click', (event) => {
      const point = event.points?.[0];
      if (point && Array.isArray(point.pointIndex)) this.showSeries(grid.series[point.pointIndex[0]], grid.rows[point.pointIndex[0]]);
    });
  }

  async showSeries(seriesId, name) {
    const statistic = this.el('monitor-statistic').value;
    const rank = this.el('monitor-rank').value;
    const side = this.el('monitor-side').value;
    const Plotly = await loadPlotly(this.plotlyUrl);
    const lines = await getJson(`${this.base()}/lines?${new URLSearchParams({ series: seriesId, statistic, rank })}`);
    const number = (v) => (typeof v === 'number' ? v : null);
    await Plotly.react(this.el('monitor-lines'), [
      { type: 'scatter', mode: 'lines', name: 'target', x: lines.steps, y: lines.target.map(number) },
      { type: 'scatter', mode: 'lines', name: 'golden', x: lines.steps, y: lines.golden.map(number), line: { dash: 'dash' } },
    ], { title: { text: `${name}: ${statistic}, rank ${rank}` }, height: 320, margin: { t: 40, b: 40 }, xaxis: { title: { text: 'step' } } },
    { displaylogo: false, responsive: true });
    const ranks = await getJson(`${this.base()}/ranks?${new URLSearchParams({ series: seriesId, statistic, side })}`);
    const cells = side === 'score' ? scoreCells(ranks.values) : heatmapCells({ ...ranks, nodes: [] }, 'norm', this.say);
    await Plotly.react(this.el('monitor-ranks'), [
      { type: 'heatmap', z: cells.z, x: ranks.cols.map(String), y: ranks.rows.map((r) => `rank ${r}`), text: cells.text,
        colorscale: cells.scale, reversescale: Boolean(cells.reverse), zmin: cells.zmin, zmax: cells.zmax, zmid: cells.zmid, hovertemplate: 'step %{x}<br>%{y}<br>%{text}<extra></extra>' },
    ], { title: { text: `${name}: ranks × steps (${side})` }, height: 80 + 30 * ranks.rows.length, margin: { t: 40, b: 40 },
      xaxis: { type: 'category' }, yaxis: { type: 'category', autorange: 'reversed' } }, { displaylogo: false, responsive: true });
    this.doc.body.dataset.series = name; // the lines shown (for the browser tests)
  }

  /** The heatmap cell's centre on the screen (row, column indexes), for the browser tests. */
  cellCenter(row, col) {
    return cellCenter(this.el('monitor-heatmap'), row, col);
  }

  async drawGradNorm() {
    const rank = this.el('monitor-rank').value;
    const norms = await getJson(`${this.base()}/grad-norm?${new URLSearchParams({ rank })}`);
    if (!norms.target_steps.length) return;
    const Plotly = await loadPlotly(this.plotlyUrl);
    const number = (v) => (typeof v === 'number' ? v : null);
    await Plotly.react(this.el('monitor-grad-norm'), [
      { type: 'scatter', mode: 'lines', name: 'target', x: norms.target_steps, y: norms.target.map(number) },
      { type: 'scatter', mode: 'lines', name: 'golden', x: norms.golden_steps, y: norms.golden.map(number), line: { dash: 'dash' } },
    ], { title: { text: `global gradient norm, rank ${rank}` }, height: 300, margin: { t: 40, b: 40 }, yaxis: { type: 'log' } },
    { displaylogo: false, responsive: true });
  }
}

export { formatValue };
