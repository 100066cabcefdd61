// The target-vs-golden statistics chart (plotly.js, served from the plotly Python package).
// plotly is 4.8 MB, so it is loaded on the first chart, not with the page.

import { statsSeries } from './stats_series.js';

let plotlyPromise = null;

export function loadPlotly(url) {
  if (globalThis.Plotly) return Promise.resolve(globalThis.Plotly);
  if (!url) return Promise.reject(new Error('plotly is not available'));
  if (!plotlyPromise) {
    // Under the server's CSP (style-src 'self') plotly may not inject <style> elements; this
    // marker tells it so, and the rules it needs are in app.css.
    if (!document.getElementById('plotly.js-style-global')) {
      const marker = document.createElement('meta');
      marker.id = 'plotly.js-style-global';
      marker.className = 'no-inline-styles';
      document.head.append(marker);
    }
    plotlyPromise = new Promise((resolve, reject) => {
      const script = document.createElement('script');
      script.src = url;
      script.async = true;
      script.onload = () => resolve(globalThis.Plotly);
      script.onerror = () => {
        plotlyPromise = null;
        reject(new Error(`could not load ${url}`));
      };
      document.head.append(script);
    });
  }
  return plotlyPromise;
}

/** A CSS custom property of the page as the theme sets it, or `fallback`. */
export function cssVar(name, fallback) {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value || fallback;
}

/** Draw (or redraw) the chart for a node's rows into `host`; resolves to false when there is
 * nothing numeric to plot. */
export async function renderStatsChart(host, rows, { plotlyUrl, labels }) {
  const { stats, sides, empty } = statsSeries(rows);
  if (empty) return false;
  const Plotly = await loadPlotly(plotlyUrl);
  const text = cssVar('--text', '#222');
  const grid = cssVar('--border', '#ddd');
  const colors = { target: cssVar('--target', '#d9534f'), golden: cssVar('--golden', '#3a7bd5') };
  const shown = stats.filter((series) => series.keys.length);
  const traces = [];
  const layout = {
    grid: { rows: 1, columns: shown.length, pattern: 'independent' },
    barmode: 'group',
    margin: { l: 50, r: 10, t: 44, b: 60 },
    height: 260,
    paper_bgcolor: 'rgba(0,0,0,0)',
    plot_bgcolor: 'rgba(0,0,0,0)',
    font: { color: text, size: 11 },
    showlegend: true, // plotly hides a one-trace legend; it still says which side this is
    legend: { orientation: 'h', y: 1.3, x: 1, xanchor: 'right' },
    annotations: [],
  };
  shown.forEach((series, index) => {
    const axis = index === 0 ? '' : String(index + 1);
    // A trace (and legend entry) per side that has numbers: none named "Golden" for a node
    // without one.
    for (const side of sides) {
      traces.push({ type: 'bar', name: labels[side], x: series.keys, y: series[side], xaxis: `x${axis}`, yaxis: `y${axis}`, marker: { color: colors[side] }, legendgroup: side, showlegend: index === 0 });
    }
    layout[`xaxis${axis}`] = { gridcolor: grid, tickangle: -30, automargin: true };
    layout[`yaxis${axis}`] = { gridcolor: grid, zerolinecolor: grid, exponentformat: 'e' };
    layout.annotations.push({ text: series.stat, showarrow: false, xref: `x${axis} domain`, yref: `y${axis} domain`, x: 0.5, y: 1.08, font: { size: 12 } });
  });
  await Plotly.react(host, traces, layout, { displayModeBar: false, responsive: true });
  return true;
}

export function purgeChart(host) {
  if (globalThis.Plotly && host) globalThis.Plotly.purge(host);
}
