// An artifact's card (issue 13): what an app made (a PNG of a board, a JSON of it), shown in
// the chat: in its instance's sub-session group if there is one, else in the timeline at its
// `created_at` (main.js placement). Its name, type and size are text; "Open" and "Download"
// are links the Shell builds itself from the artifact's id and ticket
// (`/artifacts/<id>?ticket=<hex>`, hostbridge/_artifacts.py), never a URL from the runtime.
// An image (a PNG) also shows as a thumbnail from that same address (issue 28): the name is
// the app's (the Whiteboard's names say the board's title and the action that made it).

import { el, isId } from "../core/util.js";

const TICKET = /^[0-9a-f]{32}$/;
const THUMBNAIL_TYPES = new Set(["image/png"]); // what the hostbridge serves inline
const TYPE_NAMES = {
  "image/png": "PNG image",
  "application/json": "JSON",
  "text/plain": "Text",
  "text/markdown": "Markdown",
  "text/csv": "CSV",
};

export function formatSize(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

export function artifactCard(artifact, headingLevel = 3) {
  const card = el("article", "artifact-card", "artifact-card");
  card.setAttribute("data-artifact-id", artifact.artifact_id);
  const name = String(artifact.name).slice(0, 128);
  const heading = el(`h${headingLevel}`, "artifact-name", "artifact-name", name);
  const type = TYPE_NAMES[artifact.media_type] ?? "File";
  const meta = el(
    "p",
    "artifact-meta",
    "artifact-meta",
    `${type} · ${formatSize(artifact.size)}`,
  );
  card.append(el("p", "artifact-eyebrow", "", "Artifact"), heading, meta);
  if (isId(artifact.artifact_id) && TICKET.test(artifact.ticket)) {
    const base = `/artifacts/${encodeURIComponent(artifact.artifact_id)}?ticket=${artifact.ticket}`;
    if (THUMBNAIL_TYPES.has(artifact.media_type)) card.append(thumbnail(base, name));
    const open = el("a", "artifact-link", "artifact-open", "Open");
    open.href = base;
    open.target = "_blank";
    open.rel = "noopener noreferrer";
    open.setAttribute("aria-label", `Open ${name}`);
    const download = el("a", "artifact-link", "artifact-download", "Download");
    download.href = `${base}&download=1`;
    download.setAttribute("download", "");
    download.rel = "noopener noreferrer";
    download.setAttribute("aria-label", `Download ${name}`);
    const links = el("div", "artifact-links");
    links.append(open, download);
    card.append(links);
  }
  return card;
}

// A small picture of the image, fitted into a fixed box (no layout shift as it loads); gone
// if it cannot be loaded (the artifact's own links still say what went wrong).
function thumbnail(src, name) {
  const image = el("img", "artifact-thumbnail", "artifact-thumbnail");
  image.alt = `Preview of ${name}`;
  image.width = 240;
  image.height = 150;
  image.decoding = "async";
  image.addEventListener("error", () => image.remove(), { once: true });
  image.src = src;
  return image;
}

// Cards kept by artifact id (an artifact never changes: built once).
export class ArtifactCards {
  constructor(headingLevel = 3) {
    this.cards = new Map();
    this.headingLevel = headingLevel;
  }

  element(artifact) {
    let card = this.cards.get(artifact.artifact_id);
    if (card === undefined) {
      card = artifactCard(artifact, this.headingLevel);
      this.cards.set(artifact.artifact_id, card);
    }
    return card;
  }

  keep(ids) {
    for (const id of this.cards.keys()) if (!ids.has(id)) this.cards.delete(id);
  }
}
