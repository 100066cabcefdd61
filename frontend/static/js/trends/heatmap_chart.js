// One heatmap answer (/api/graphs/{graph}/heatmap) drawn with plotly: the figure is built by
// pure functions (tested in the browser test through the page), the drawing reuses the
// statistics chart's lazy plotly loader.

import { cssVar, loadPlotly } from '../charts/stats_chart.js';
import { parseNumber } from '../format.js';

const LEVEL_SCALE = [
  [0, '#4caf50'], [0.333, '#4caf50'],
  [0.333, '#f5c342'], [0.666, '#f5c342'],
  [0.666, '#e5533d'], [1, '#e5533d'],
];

/** The text of a cell's value for hovering. */
export function formatValue(value, statistic, t) {
  if (value === null) return t('trends.noValue');
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? '∞' : '−∞';
  if (statistic === 'level') return t(`level.${['pass', 'warning', 'error'][value] ?? 'pass'}`);
  if (statistic === 'error') return `${(value * 100).toPrecision(4)}%`;
  if (statistic === 'excess') return `${value.toPrecision(3)} × band`;
  return Math.abs(value) >= 1e4 || (value !== 0 && Math.abs(value) < 1e-3)
    ? value.toExponential(4)
    : value.toPrecision(6);
}

/** A module row's label: without the framework's "Module." / "Cell." prefix. */
export function rowLabel(row) {
  return typeof row === 'string' ? row.replace(/^(Module|Cell)\./, '') : String(row);
}

/** {z, text, scale, zmin, zmax, zmid} of a heatmap answer. Non-finite numbers (an overflow,
 * an error against zero) are the worst there is: drawn at the top of the scale, named in the
 * hover text. */
export function heatmapCells(answer, statistic, t) {
  // "Infinity" / "NaN" arrive as strings (JSON has neither): parseNumber reads them
  const values = answer.values.map((row) => row.map(parseNumber));
  const finite = values.flat().filter((value) => value !== null && Number.isFinite(value));
  let zmax = finite.length ? Math.max(...finite) : 1;
  let zmin = finite.length ? Math.min(...finite) : 0;
  const z = values.map((row) =>
    row.map((value) => (value === null ? null : Number.isFinite(value) ? value : value < 0 ? zmin : zmax)),
  );
  const text = values.map((row) => row.map((value) => formatValue(value, statistic, t)));
  if (statistic === 'level') return { z, text, scale: LEVEL_SCALE, zmin: 0, zmax: 2, zmid: undefined };
  if (statistic === 'error') {
    return { z, text, scale: 'YlOrRd', reverse: true, zmin: 0, zmax: Math.max(zmax, 1e-12), zmid: undefined };
  }
  if (statistic === 'excess') {
    // at most 1 is within the band: the scale reaches at least 2 so that a run where every
    // node is explained stays in its lower half, and an infinite excess (an argument) on top
    const top = Math.max(zmax, 2);
    const drawn = values.map((row) => row.map((value) => (value === null ? null : Number.isFinite(value) ? value : top)));
    return { z: drawn, text, scale: 'YlOrRd', reverse: true, zmin: 0, zmax: top, zmid: undefined };
  }
  const diverging = zmin < 0 && zmax > 0;
  if (diverging) {
    const bound = Math.max(-zmin, zmax);
    zmin = -bound;
    zmax = bound;
  }
  return { z, text, scale: diverging ? 'RdBu' : 'Viridis', zmin, zmax, zmid: diverging ? 0 : undefined };
}

/** Draw the answer into `host`; `onCell({row, col})` on a click. */
export async function renderHeatmap(host, answer, { plotlyUrl, statistic, axes, t, onCell }) {
  const Plotly = await loadPlotly(plotlyUrl);
  const { z, text, scale, reverse, zmin, zmax, zmid } = heatmapCells(answer, statistic, t);
  const colLabels = answer.cols.map((col) => (typeof col === 'string' ? t(`trends.pass.${col}`) : String(col)));
  const rowLabels = answer.rows.map(rowLabel);
  const nodes = answer.nodes.map((row) => row.map((name) => name ?? t('trends.noNode')));
  const textColor = cssVar('--text', '#222');
  const trace = {
    type: 'heatmap',
    z,
    x: colLabels,
    y: rowLabels,
    text,
    customdata: nodes,
    colorscale: scale,
    reversescale: Boolean(reverse), // plotly's YlOrRd runs dark to light: light is "no error"
    colorbar: statistic === 'error' ? { tickformat: '.2~%' } : undefined, // excess: plain numbers
    zmin,
    zmax,
    zmid,
    xgap: 1,
    ygap: 1,
    hoverongaps: false,
    showscale: statistic !== 'level',
    hovertemplate:
      `${t(`trends.axis.${axes.rows}`)}: %{y}<br>${t(`trends.axis.${axes.cols}`)}: %{x}<br>` +
      `${t('trends.value')}: %{text}<br>${t('trends.node')}: %{customdata}<extra></extra>`,
  };
  const layout = {
    margin: { l: 20, r: 20, t: 10, b: 60 },
    height: Math.max(320, Math.min(1600, 60 + 22 * rowLabels.length)),
    paper_bgcolor: 'rgba(0,0,0,0)',
    plot_bgcolor: 'rgba(0,0,0,0)',
    font: { color: textColor, size: 12 },
    xaxis: { type: 'category', automargin: true, title: { text: t(`trends.axis.${axes.cols}`) } },
    // module names are their own title (and a title would sit on the long tick labels)
    yaxis: { type: 'category', autorange: 'reversed', automargin: true },
  };
  await Plotly.react(host, [trace], layout, { displaylogo: false, responsive: true });
  host.removeAllListeners?.('plotly_click');
  host.on('plotly_click', (event) => {
    const point = event.points?.[0];
    if (!point || !Array.isArray(point.pointIndex)) return;
    const [row, col] = point.pointIndex;
    onCell({ row, col });
  });
}

/** The page coordinates of a cell's centre (for keyboard-less checks and the browser test). */
export function cellCenter(host, row, col) {
  const layout = host._fullLayout;
  const box = host.querySelector('.nsewdrag')?.getBoundingClientRect();
  if (!layout || !box) return null;
  const x = layout.xaxis.l2p(col) + box.left;
  const y = layout.yaxis.l2p(row) + box.top;
  return { x, y };
}
