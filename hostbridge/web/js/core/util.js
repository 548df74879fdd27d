// Small helpers every module uses: shape checks for what the runtime sends (the Shell re-checks
// every frame it renders), and one way to build an element (never innerHTML).

export const isObject = (value) =>
  typeof value === "object" && value !== null && !Array.isArray(value);
export const isId = (value) => typeof value === "string" && value.length > 0 && value.length <= 200;
export const isOrder = (value) => Number.isSafeInteger(value) && value >= 0;
export const isText = (value, max) =>
  typeof value === "string" && value.length > 0 && value.length <= max;

// An element with a class and, optionally, a test id and its text (as text, always).
export function el(tag, className, testId, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (testId) element.setAttribute("data-testid", testId);
  if (text !== undefined) element.textContent = text;
  return element;
}

export const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);

export const isShown = (element) =>
  document.contains(element) && element.closest("[hidden]") === null;

// Unique ids for label/aria wiring (a card shows in several places at once).
let nextId = 0;
export const uniqueId = (prefix) => `${prefix}-${(nextId += 1)}`;

// Put `next` where `previous` is; if focus was inside `previous`, move it to `focusTarget`
// (or `next` itself), so re-rendering a component never drops the keyboard to <body>.
export function swap(previous, next, focusTarget) {
  const hadFocus = previous.contains(document.activeElement);
  previous.replaceWith(next);
  if (hadFocus) (focusTarget ?? next).focus();
}

export function storageGet(key) {
  try {
    return window.sessionStorage.getItem(key);
  } catch {
    return null; // storage disabled: the token then lives only as long as the page
  }
}

export function storageSet(key, value) {
  try {
    window.sessionStorage.setItem(key, value);
  } catch {
    // See storageGet.
  }
}

// Reorder `parent`'s children into `elements` moving only what must move.
export function replaceKeeping(parent, elements) {
  let cursor = parent.firstChild;
  for (const element of elements) {
    if (element === cursor) cursor = cursor.nextSibling;
    else parent.insertBefore(element, cursor);
  }
  while (cursor) {
    const following = cursor.nextSibling;
    cursor.remove();
    cursor = following;
  }
}
