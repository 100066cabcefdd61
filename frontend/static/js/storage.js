// What the pages remember in localStorage (theme, language, pane sync, the API token). Storage
// may be disabled (private windows, policies): reads then give null and writes are dropped, so
// a choice lasts for this page only.

export const STORAGE = { theme: 'graphboard.theme', lang: 'graphboard.lang', sync: 'graphboard.sync' };

export function saved(key) {
  try {
    return globalThis.localStorage?.getItem(key) ?? null;
  } catch {
    return null;
  }
}

/** Remember `value` under `key`; null forgets it. */
export function save(key, value) {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {
    /* storage disabled */
  }
}
