// The two sides of a compare as the viewer and the API name them: the target (-tp) and the
// golden (-gp). msprobe's files and viewer call them NPU and Bench; graphboard's API answers
// in its own words and still accepts msprobe's, and so do the viewer's addresses (links made
// before the rename say side=Bench).

export const TARGET = 'target';
export const GOLDEN = 'golden';
export const SIDES = [TARGET, GOLDEN];
export const OTHER = { [TARGET]: GOLDEN, [GOLDEN]: TARGET };

const NAMES = { target: TARGET, golden: GOLDEN, NPU: TARGET, Bench: GOLDEN };

/** The side a word names (target, golden, or msprobe's NPU, Bench), else null. */
export function parseSide(word) {
  return Object.hasOwn(NAMES, word ?? '') ? NAMES[word] : null;
}
