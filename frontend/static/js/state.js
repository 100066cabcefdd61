// One small observable store for what the whole page shares (file, step, rank, selection,
// theme, language...). Modules subscribe to the keys they draw; nothing else is global.

export function createStore(initial) {
  let state = { ...initial };
  const listeners = new Set();
  return {
    get: () => state,
    /** Merge `patch`; listeners hear which keys really changed. */
    set(patch) {
      const changed = Object.keys(patch).filter((key) => !Object.is(state[key], patch[key]));
      if (!changed.length) return;
      state = { ...state, ...patch };
      const keys = new Set(changed);
      for (const listener of [...listeners]) listener(state, keys);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
