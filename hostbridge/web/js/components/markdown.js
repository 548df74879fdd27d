// hostbridge's Markdown token tree (hostbridge/_markdown.py documents its shapes) → DOM, with
// createElement/textContent/setAttribute only. Re-checked here anyway: unknown nodes keep only
// their text, links only safe protocols, and past the depth cap containers are flattened. A
// code block gets a copy button.

import { el } from "../core/util.js";

const MAX_RENDER_DEPTH = 32;
const SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);
const CONTAINER_TAGS = new Set(["p", "strong", "em", "del", "blockquote", "ul", "ol", "li"]);
const TABLE_TAGS = new Set(["table", "thead", "tbody", "tr", "th", "td"]);
const ALIGNS = new Set(["left", "center", "right"]);
const HEADING_LEVELS = { h1: 1, h2: 2, h3: 3, h4: 4, h5: 5, h6: 6 };
const COPIED_MS = 2000;

const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);

export function renderNodes(nodes, parent, depth = 0) {
  if (!Array.isArray(nodes)) return;
  for (const node of nodes) if (isObject(node)) renderNode(node, parent, depth);
}

function renderNode(node, parent, depth) {
  const t = node.t;
  if (t === "text") {
    parent.append(document.createTextNode(String(node.v ?? "")));
  } else if (t === "br" || t === "hr") {
    parent.append(document.createElement(t));
  } else if (t === "code") {
    parent.append(el("code", "", "", String(node.v ?? "")));
  } else if (t === "pre") {
    parent.append(codeBlock(String(node.v ?? ""), node.lang));
  } else if (depth >= MAX_RENDER_DEPTH) {
    renderNodes(node.c, parent, depth);
  } else if (t === "a") {
    const href = safeHref(node.href);
    const link = document.createElement(href === null ? "span" : "a");
    if (href !== null) {
      link.setAttribute("href", href);
      link.setAttribute("rel", "noopener noreferrer");
      link.setAttribute("target", "_blank");
    }
    renderNodes(node.c, link, depth + 1);
    parent.append(link);
  } else if (CONTAINER_TAGS.has(t)) {
    const element = document.createElement(t);
    if (t === "ol" && Number.isInteger(node.start) && node.start >= 0) {
      element.setAttribute("start", String(node.start));
    }
    renderNodes(node.c, element, depth + 1);
    parent.append(element);
  } else if (TABLE_TAGS.has(t)) {
    parent.append(tablePart(node, depth));
  } else if (t in HEADING_LEVELS) {
    // The page owns h1/h2: a message's headings sit below them (h3…h6).
    const level = Math.min(6, HEADING_LEVELS[t] + 2);
    const heading = document.createElement(`h${level}`);
    heading.className = `md-${t}`;
    renderNodes(node.c, heading, depth + 1);
    parent.append(heading);
  } else {
    renderNodes(node.c, parent, depth);
  }
}

// A GFM table, scrolling sideways inside its own box rather than widening the bubble.
function tablePart(node, depth) {
  const element = document.createElement(node.t);
  if ((node.t === "th" || node.t === "td") && ALIGNS.has(node.align)) {
    element.className = `align-${node.align}`; // a class: the CSP allows no inline style
  }
  if (node.t === "th") element.setAttribute("scope", "col");
  renderNodes(node.c, element, depth + 1);
  if (node.t !== "table") return element;
  const scroller = el("div", "table-scroll");
  scroller.setAttribute("tabindex", "0"); // a wide table scrolls by keyboard too
  scroller.setAttribute("role", "region");
  scroller.setAttribute("aria-label", "Table");
  scroller.append(element);
  return scroller;
}

function codeBlock(text, lang) {
  const box = el("div", "code-block");
  const pre = document.createElement("pre");
  const code = el("code", "", "", text);
  if (typeof lang === "string" && /^[\w+#.-]{1,32}$/.test(lang)) pre.setAttribute("data-lang", lang);
  pre.append(code);
  const copy = el("button", "copy-code", "copy-code", "Copy");
  copy.type = "button";
  copy.setAttribute("aria-label", "Copy code");
  const said = el("span", "copy-status visually-hidden", "", "");
  said.setAttribute("role", "status");
  let timer = null;
  copy.addEventListener("click", async () => {
    const done = await copyText(text, pre);
    copy.textContent = done ? "Copied" : "Select and copy";
    copy.setAttribute("data-copied", done ? "true" : "false");
    said.textContent = done ? "Copied to the clipboard" : "Copy by hand: the code is selected";
    window.clearTimeout(timer);
    timer = window.setTimeout(() => {
      copy.textContent = "Copy";
      copy.removeAttribute("data-copied");
      said.textContent = "";
    }, COPIED_MS);
  });
  box.append(copy, said, pre);
  return box;
}

// navigator.clipboard where the browser offers it (a secure context: 127.0.0.1 is one);
// otherwise the code is selected for the user to copy.
async function copyText(text, pre) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Refused (no permission, or the page not focused): fall back to a selection.
  }
  const range = document.createRange();
  range.selectNodeContents(pre);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  return false;
}

export function safeHref(href) {
  if (typeof href !== "string") return null;
  try {
    const url = new URL(href);
    return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
  } catch {
    return null; // relative or malformed: not a link
  }
}
