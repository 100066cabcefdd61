// Building elements. Text goes in through textContent only, never innerHTML, so node names,
// stacks and messages from a file can never become markup.

/** el('div', {className: 'row', title: name, onclick}, 'text', child, ...) */
export function el(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'dataset') Object.assign(element.dataset, value);
    else if (name.startsWith('on') && typeof value === 'function') {
      element.addEventListener(name.slice(2), value);
    } else if (name === 'className' || name === 'textContent' || name === 'title' || name === 'value' || name === 'checked' || name === 'disabled' || name === 'hidden' || name === 'type' || name === 'id' || name === 'htmlFor' || name === 'tabIndex') {
      element[name] = value;
    } else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace all children of `element`. */
export function setChildren(element, ...children) {
  element.replaceChildren();
  append(element, children);
}
