// Run `fn` once input has been quiet for `wait` ms (search as you type).
export function debounce(fn, wait) {
  let timer = null;
  const debounced = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      fn(...args);
    }, wait);
  };
  debounced.cancel = () => clearTimeout(timer);
  return debounced;
}
