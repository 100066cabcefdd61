// Turning stored values into text: numbers, percentages, short node labels.
// msprobe stores statistics as display strings ("1.76", "0.001451%", "N/A", "inf"), so every
// helper here accepts strings and numbers alike.

const SPECIAL = new Map([
  ['nan', NaN],
  ['inf', Infinity],
  ['+inf', Infinity],
  ['-inf', -Infinity],
  ['infinity', Infinity],
  ['-infinity', -Infinity],
]);

/** A number from a stored value, or null when it holds none ("N/A", "", null, "True"). A
 * trailing % is dropped: the value stays in percent. */
export function parseNumber(value) {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string') return null;
  let text = value.trim();
  if (text.endsWith('%')) text = text.slice(0, -1);
  const lowered = text.toLowerCase();
  if (SPECIAL.has(lowered)) return SPECIAL.get(lowered);
  if (text === '' || !/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(text)) return null;
  return Number(text);
}

/** A statistic as the node view types it (`stats` of a parameter: server/param_stats.py): a
 * number, "nan" / "inf" / "-inf" (JSON holds neither), or null for no number. */
export function statNumber(value) {
  if (typeof value === 'number') return value;
  if (value === 'nan') return NaN;
  if (value === 'inf') return Infinity;
  if (value === '-inf') return -Infinity;
  return null;
}

/** A compact number: 6 significant digits, exponent form when very large or small. */
export function formatNumber(value) {
  const number = parseNumber(value);
  if (number === null) return value === null || value === undefined || value === '' ? '–' : String(value);
  if (Number.isNaN(number)) return 'NaN';
  if (!Number.isFinite(number)) return number > 0 ? '+Inf' : '-Inf';
  const isPercent = typeof value === 'string' && value.trim().endsWith('%');
  const magnitude = Math.abs(number);
  let text;
  if (number === 0) text = '0';
  else if (magnitude >= 1e6 || magnitude < 1e-4) text = number.toExponential(3);
  else text = String(Number(number.toPrecision(6)));
  return isPercent ? `${text}%` : text;
}

/** 12345 -> "12,345"; large counts stay readable in both languages. */
export function formatCount(count) {
  return Number(count ?? 0).toLocaleString('en-US');
}

/** What a tree row shows. Module names repeat their whole path
 * (Module.layers.0.mlp.linear_fc1.ColumnParallelLinear.forward.0); under a parent the last
 * segments say enough: the attribute, class, direction and call. API names are short. */
export function shortLabel(name, depth) {
  if (depth <= 1 || !name.startsWith('Module.')) return name;
  const segments = name.split('.');
  let keep = 4;
  if (segments.length > keep && /^\d+$/.test(segments[segments.length - keep])) keep += 1;
  if (segments.length <= keep + 1) return name;
  return segments.slice(-keep).join('.');
}

/** "input.0" from "Functional.conv2d.0.forward.input.0" (the node name dropped). */
export function paramKey(fullName, nodeName) {
  return fullName.startsWith(`${nodeName}.`) ? fullName.slice(nodeName.length + 1) : fullName;
}
