// Colours of nodes: precision from the file's own colour table (node_colors, msprobe's
// format), overflow from a fixed light-to-dark blue scale, and a readable text colour on each.
// The tables are made for a light page: the dark theme dims their near-white fills.

export const LEVELS = ['pass', 'warning', 'error'];
export const OVERFLOW_LEVELS = ['medium', 'high', 'critical'];
export const OVERFLOW_COLORS = { medium: '#E6F3FE', high: '#8DC5F8', critical: '#1668DC' };
const DEFAULT_LEVEL_COLORS = {
  pass: '#FFFCF3',
  warning: '#FFDC7F',
  error: '#FF704D',
  unmatched: '#C7C7C7',
};

function levelOfEntry(color, entry, index) {
  const named = String(entry?.accuracy_level ?? '').toLowerCase();
  if (named.startsWith('unmatched') || (Array.isArray(entry?.value) && entry.value.length === 0)) {
    return 'unmatched';
  }
  if (LEVELS.includes(named)) return named;
  // msprobe's own table has no accuracy_level: its ranges are in ascending order.
  return LEVELS[index] ?? null;
}

/** The legend of a file: [{level, color, range, description}] in pass, warning, error,
 * unmatched order; the defaults when the file has no table (a build). */
export function legendEntries(nodeColors) {
  const found = new Map();
  const entries = Object.entries(nodeColors ?? {});
  const ranged = entries.filter(([, entry]) => Array.isArray(entry?.value) && entry.value.length);
  ranged.sort((a, b) => Number(a[1].value[0]) - Number(b[1].value[0]));
  const ordered = [...ranged, ...entries.filter((item) => !ranged.includes(item))];
  ordered.forEach(([color, entry], index) => {
    const level = levelOfEntry(color, entry, index);
    if (level && !found.has(level)) {
      found.set(level, {
        level,
        color,
        range: Array.isArray(entry?.value) ? entry.value : [],
        description: entry?.description ?? '',
      });
    }
  });
  return [...LEVELS, 'unmatched'].map(
    (level) =>
      found.get(level) ?? { level, color: DEFAULT_LEVEL_COLORS[level], range: [], description: '' },
  );
}

/** level -> colour for chips and badges, as drawn in `theme`. */
export function levelColors(nodeColors, theme = 'light') {
  return Object.fromEntries(legendEntries(nodeColors).map((entry) => [entry.level, themedFill(entry.color, theme)]));
}

/** overflow level -> colour, as drawn in `theme`. */
export function overflowColors(theme = 'light') {
  return Object.fromEntries(OVERFLOW_LEVELS.map((level) => [level, themedFill(OVERFLOW_COLORS[level], theme)]));
}

/** The fill of a node: its server-computed colour in precision mode (the server applies the
 * file's table), its overflow level's colour in overflow mode; null for plain. */
export function nodeFill(node, mode) {
  if (!node) return null;
  if (mode === 'overflow') return OVERFLOW_COLORS[node.overflow] ?? null;
  return node.color ?? null;
}

// The dark theme's panel (app.css, --panel there): a glaring fill is mixed into it.
const DARK_PANEL = [0x1e, 0x21, 0x26];
const GLARE = 0.9; // a fill brighter than this reads as white on a dark page
const DARK_SHARE = 0.3; // how much of the fill's own colour the dimmed fill keeps

function rgbOf(hex) {
  const match = /^#?([0-9a-f]{6})$/i.exec(hex ?? '');
  if (!match) return null;
  const value = parseInt(match[1], 16);
  return [(value >> 16) & 255, (value >> 8) & 255, value & 255];
}

function luminance([r, g, b]) {
  return (0.299 * r + 0.587 * g + 0.114 * b) / 255;
}

/** The fill to draw for `hex` in `theme`: the colour itself, except that on the dark theme a
 * near-white one (pass #FFFCF3, overflow medium) becomes a dim tint of itself over the
 * panel, so the nodes that are fine do not glare brighter than the ones that are not. */
export function themedFill(hex, theme) {
  if (theme !== 'dark') return hex;
  const rgb = rgbOf(hex);
  if (!rgb || luminance(rgb) <= GLARE) return hex;
  const mixed = rgb.map((part, index) => Math.round(part * DARK_SHARE + DARK_PANEL[index] * (1 - DARK_SHARE)));
  return `#${mixed.map((part) => part.toString(16).padStart(2, '0')).join('')}`;
}

/** Black or white text, whichever reads better on `hex`. */
export function textOn(hex) {
  const rgb = rgbOf(hex);
  if (!rgb) return null;
  return luminance(rgb) < 0.55 ? '#ffffff' : '#1a1a1a';
}
