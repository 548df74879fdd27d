// The LineUp Shell: the browser side of hostbridge (DESIGN §7).
//
// Theory of operation: one WebSocket to `/ws?token=…` on the page's own host. The server sends
// whole snapshots (runtime state, the app list, one view per instance); the Shell keeps the
// latest of each and re-renders from them, so a reconnect or a reload needs nothing but the
// next snapshot. The chat's messages come as items (`shell.items`, a bounded batch a frame, kept
// by id, shown by order), the newest page at a greeting and older pages when the user asks
// (`shell.page` says whether there are more), so no frame grows with the timeline. Every DOM node is built with createElement/textContent/setAttribute: no
// innerHTML, no inline script or style, no eval, no external load, so a strict CSP holds and
// nothing in a message can become markup. Markdown arrives as hostbridge's token tree
// (hostbridge/_markdown.py documents its shapes); this file re-checks it anyway.
"use strict";

(() => {
  const TOKEN_KEY = "lineup.token";
  const BACKOFF_MIN_MS = 250;
  const BACKOFF_MAX_MS = 5000;
  const MAX_FRAME_CHARS = 4 * 1024 * 1024; // largest frame accepted from the runtime
  const MAX_SEND_BYTES = 60 * 1024; // hostbridge closes the socket on a Shell frame over 64 KiB
  const MAX_RENDER_DEPTH = 32;
  const MAX_NOTICES = 5;
  const MAX_ITEMS = 1000; // timeline items kept; the oldest go first (they can be asked again)
  const INFO_NOTICE_MS = 8000;
  const NEAR_BOTTOM_PX = 64;
  // Close codes after which retrying cannot help (hostbridge/_server.py): the token is from
  // an earlier run (4401), or the page was refused (4403). The Shell stops and says why.
  const FATAL_CLOSES = new Map([
    [
      4401,
      "This tab's access token is from an earlier run of the runtime, and the runtime refused " +
        "it. Open the new link that `lineup run` printed.",
    ],
    [4403, "The runtime refused this page. Open the link that `lineup run` printed."],
  ]);
  const SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);
  const CONTAINER_TAGS = new Set(["p", "strong", "em", "del", "blockquote", "ul", "ol", "li"]);
  const HEADING_LEVELS = { h1: 1, h2: 2, h3: 3, h4: 4, h5: 5, h6: 6 };

  const RUNTIME_STATES = {
    created: { label: "Starting…", tone: "busy" },
    restoring: { label: "Restoring…", tone: "busy" },
    authenticating: { label: "Signing in…", tone: "busy" },
    synchronizing: { label: "Syncing…", tone: "busy" },
    online: { label: "Online", tone: "ok" },
    reconnecting: {
      label: "Reconnecting — messages will be sent when the connection returns",
      tone: "warn",
    },
    offline_degraded: {
      label: "Offline — messages will be sent when the connection returns",
      tone: "warn",
    },
    stopping: { label: "Stopping…", tone: "off" },
    stopped: { label: "Stopped", tone: "off" },
  };
  const LOCAL_STATES = {
    unknown: { label: "Connecting…", tone: "busy" },
    disconnected: { label: "Not connected", tone: "off" },
  };
  // Why the link to the AppServer is down (the transport's appserver_* codes), in words.
  const LINK_REASONS = {
    appserver_unreachable: "the AppServer cannot be reached",
    appserver_timeout: "the AppServer stopped answering",
    appserver_unavailable: "the AppServer reports an error",
    appserver_unauthorized: "the AppServer refused this account",
    appserver_protocol_error: "the network answers with something that is not the AppServer",
  };
  const AUTHORS = { agent: "Agent", user: "You" };
  // Instance states that are gone or going: such an instance gets no switcher button.
  const ENDED_STATES = new Set(["stopping", "stopped", "failed"]);
  const TASK_STATUSES = { todo: "To do", doing: "In progress", done: "Done" };
  // The Task Dashboard's actions, by the name its view lists them under.
  const TASK_ACTIONS = {
    finish: { label: "Mark done", event: "task.finish", testId: "task-finish", tone: "primary" },
    close: { label: "Close", event: "task.close", testId: "task-close", tone: "secondary" },
  };

  const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);
  const ui = {
    runtime: byTestId("runtime-state"),
    banner: byTestId("connection-banner"),
    switcher: byTestId("app-switcher"),
    appList: document.querySelector(".app-list"),
    chat: byTestId("chat"),
    timeline: byTestId("timeline"),
    earlier: byTestId("timeline-earlier"),
    empty: byTestId("timeline-empty"),
    composer: byTestId("composer"),
    input: byTestId("composer-input"),
    send: byTestId("composer-send"),
    placeholder: byTestId("app-placeholder"),
    appView: byTestId("app-view"),
    skipLink: document.querySelector(".skip-link"),
    notices: byTestId("notices"),
  };

  const shell = {
    token: null,
    socket: null,
    connected: false,
    attempt: 0,
    retryTimer: null,
    gaveUp: false,
    foreground: null, // instance_id from the last shell.apps
    instances: [], // from the last shell.apps
    views: new Map(), // instance_id → {appScope, view}: the last snapshot of each
    chatInstance: null, // the chat instance whose view the timeline shows
    composerEnabled: false,
    rendered: new Map(), // message id → {key, element}, to keep unchanged DOM nodes
    items: new Map(), // message id → {item, version}: the chat's timeline items
    itemsVersion: 0, // bumped by every item frame, so the timeline re-renders
    moreItems: false, // older items than the oldest held remain (the last shell.page said)
    renderedItems: -1, // the itemsVersion the timeline shows
    chatView: undefined, // the chat view the timeline shows
    chatScroll: null, // {top, atBottom} of the timeline when another app came in front
    dashboard: null, // the Task Dashboard on screen: {instanceId, appScope, root, …parts}
    resuming: new Set(), // suspended instances the user opened, until their view arrives
  };

  // ---------------------------------------------------------------- token

  function storageGet(key) {
    try {
      return window.sessionStorage.getItem(key);
    } catch {
      return null; // storage disabled: the token then lives only as long as the page
    }
  }

  function storageSet(key, value) {
    try {
      window.sessionStorage.setItem(key, value);
    } catch {
      // See storageGet.
    }
  }

  // The token comes in the URL fragment (never sent to a server, so never in its logs); it is
  // kept in sessionStorage for reloads and stripped from the address bar and history.
  function readToken() {
    const params = new URLSearchParams(window.location.hash.slice(1));
    const fromFragment = params.get("token");
    if (fromFragment) {
      storageSet(TOKEN_KEY, fromFragment);
      params.delete("token");
      const rest = params.toString();
      const url = window.location.pathname + window.location.search + (rest ? `#${rest}` : "");
      window.history.replaceState(window.history.state, "", url);
      return fromFragment;
    }
    return storageGet(TOKEN_KEY);
  }

  // ---------------------------------------------------------------- connection

  function socketUrl() {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${window.location.host}/ws?token=${encodeURIComponent(shell.token)}`;
  }

  function connect() {
    shell.retryTimer = null;
    let socket;
    try {
      socket = new WebSocket(socketUrl());
    } catch {
      scheduleReconnect();
      return;
    }
    shell.socket = socket;
    socket.addEventListener("open", () => {
      if (shell.socket !== socket) return;
      shell.connected = true;
      shell.attempt = 0;
      showBanner(null);
      send({ type: "shell.ready" });
      updateComposer();
    });
    socket.addEventListener("message", (event) => {
      if (shell.socket === socket) receive(event.data);
    });
    socket.addEventListener("close", (event) => {
      if (shell.socket !== socket) return;
      shell.socket = null;
      shell.connected = false;
      setRuntimeState("disconnected");
      updateComposer();
      if (FATAL_CLOSES.has(event.code)) {
        shell.gaveUp = true;
        showBanner(FATAL_CLOSES.get(event.code));
        ui.banner.setAttribute("data-reason", "refused");
        return;
      }
      scheduleReconnect();
    });
  }

  function scheduleReconnect() {
    if (shell.gaveUp || shell.retryTimer !== null) return;
    const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** shell.attempt);
    const delay = Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
    shell.attempt = Math.min(shell.attempt + 1, 16);
    showBanner(`Disconnected from the runtime. Reconnecting in ${Math.ceil(delay / 1000)} s…`);
    shell.retryTimer = window.setTimeout(connect, delay);
  }

  function send(frame) {
    const socket = shell.socket;
    if (!shell.connected || socket === null || socket.readyState !== WebSocket.OPEN) return false;
    const text = JSON.stringify(frame);
    if (new Blob([text]).size > MAX_SEND_BYTES) {
      addNotice("error", "This message is too long to send. Please shorten it.");
      return false;
    }
    socket.send(text);
    return true;
  }

  function showBanner(text) {
    ui.banner.removeAttribute("data-reason");
    ui.banner.hidden = text === null;
    ui.banner.textContent = text ?? "";
    document.body.classList.toggle("is-disconnected", text !== null);
  }

  // ---------------------------------------------------------------- frames from the runtime

  const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
  const isId = (value) => typeof value === "string" && value.length > 0 && value.length <= 200;

  function receive(data) {
    if (typeof data !== "string" || data.length > MAX_FRAME_CHARS) return;
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      return;
    }
    if (!isObject(frame)) return;
    switch (frame.type) {
      case "shell.hello":
        // A greeting follows; its page of items merges into what this Shell holds (an item
        // frame sent meanwhile may be newer than the page: `rev` decides).
        shell.moreItems = false;
        shell.itemsVersion += 1;
        if (isObject(frame.runtime)) setRuntimeState(frame.runtime.state, frame.runtime.reason);
        break;
      case "shell.runtime":
        setRuntimeState(frame.state, frame.reason);
        break;
      case "shell.view":
        onView(frame);
        break;
      case "shell.items":
        onItems(frame);
        break;
      case "shell.page":
        onPage(frame);
        break;
      case "shell.apps":
        onApps(frame);
        break;
      case "shell.notice":
        addNotice(frame.level === "error" ? "error" : "info", frame.text);
        break;
      default:
        break; // a newer runtime may send more; ignoring keeps this Shell working
    }
  }

  function setRuntimeState(state, reason) {
    const known = RUNTIME_STATES[state] ?? LOCAL_STATES[state];
    const { label, tone } = known ?? { label: "Unknown state", tone: "busy" };
    const why = Object.hasOwn(LINK_REASONS, reason) ? LINK_REASONS[reason] : null;
    const down = state === "reconnecting" || state === "offline_degraded";
    ui.runtime.setAttribute("data-state", typeof state === "string" ? state : "unknown");
    ui.runtime.setAttribute("data-tone", tone);
    if (down && why) ui.runtime.setAttribute("data-reason", reason);
    else ui.runtime.removeAttribute("data-reason");
    ui.runtime.textContent = down && why ? `${label}: ${why}` : label;
  }

  function onView(frame) {
    if (!isId(frame.instance_id) || typeof frame.app_scope !== "string") return;
    if (!isObject(frame.view)) return;
    shell.views.set(frame.instance_id, { appScope: frame.app_scope, view: frame.view });
    shell.resuming.delete(frame.instance_id);
    if (frame.app_scope === "chat") shell.chatInstance = frame.instance_id;
    render();
  }

  // Items belong to the chat's timeline (the only trusted component that shows them).
  const isOrder = (value) => Number.isSafeInteger(value) && value >= 0;
  const itemBefore = (a, b) => a.order < b.order || (a.order === b.order && a.id < b.id);

  function onItems(frame) {
    if (!isId(frame.instance_id) || frame.app_scope !== "chat") return;
    if (!Array.isArray(frame.items)) return;
    if (shell.chatInstance === null) shell.chatInstance = frame.instance_id;
    if (frame.instance_id !== shell.chatInstance) return;
    for (const item of frame.items) {
      if (!isObject(item) || !isId(item.id) || !isOrder(item.order) || !isOrder(item.rev)) continue;
      const held = shell.items.get(item.id);
      if (held !== undefined && held.item.rev > item.rev) continue; // an older version
      shell.itemsVersion += 1;
      shell.items.set(item.id, { item, version: shell.itemsVersion });
    }
    if (shell.items.size > MAX_ITEMS) {
      for (const oldest of sortedItems().slice(0, shell.items.size - MAX_ITEMS)) {
        shell.items.delete(oldest.id);
      }
      shell.moreItems = true;
    }
    render();
  }

  function onPage(frame) {
    if (!isId(frame.instance_id) || frame.instance_id !== shell.chatInstance) return;
    shell.moreItems = frame.more === true;
    shell.itemsVersion += 1;
    render();
  }

  function sortedItems() {
    const items = [...shell.items.values()].map((entry) => entry.item);
    return items.sort((a, b) => (itemBefore(a, b) ? -1 : itemBefore(b, a) ? 1 : 0));
  }

  function askEarlier() {
    const oldest = sortedItems()[0];
    if (shell.chatInstance === null || oldest === undefined) return;
    const sent = send({
      type: "ui.event",
      app_scope: "chat",
      instance_id: shell.chatInstance,
      event: { kind: "timeline.earlier", before_order: oldest.order, before_id: oldest.id },
    });
    if (sent) ui.earlier.disabled = true; // until the page arrives
  }

  function onApps(frame) {
    const instances = Array.isArray(frame.instances) ? frame.instances : [];
    shell.instances = instances.filter(
      (i) => isObject(i) && isId(i.instance_id) && !ENDED_STATES.has(i.state),
    );
    shell.foreground = isId(frame.foreground) ? frame.foreground : null;
    const live = new Set(shell.instances.map((i) => i.instance_id));
    for (const id of shell.views.keys()) if (!live.has(id)) shell.views.delete(id);
    for (const id of shell.resuming) if (!live.has(id)) shell.resuming.delete(id);
    if (shell.chatInstance !== null && !live.has(shell.chatInstance)) shell.chatInstance = null;
    const chat = shell.instances.find((i) => i.app_scope === "chat");
    if (shell.chatInstance === null && chat) shell.chatInstance = chat.instance_id;
    renderSwitcher();
    render();
  }

  // ---------------------------------------------------------------- rendering

  const instanceTitle = (instance) =>
    typeof instance.title === "string" && instance.title
      ? instance.title
      : String(instance.app_scope);

  // The stage shows one thing: the chat (timeline and composer), the trusted component for the
  // foreground instance's view, or a placeholder. The chat is only hidden, never cleared, so
  // its timeline, scroll position and draft are as they were when it comes back in front.
  function render() {
    const front = shell.instances.find((i) => i.instance_id === shell.foreground);
    const chatInFront = !front || front.app_scope === "chat";
    const entry = chatInFront ? undefined : shell.views.get(front.instance_id);
    const dashboard = entry !== undefined && entry.view.kind === "task.dashboard";
    const focused = document.activeElement;
    const chatWasShown = !ui.chat.hidden;

    if (chatWasShown && !chatInFront) shell.chatScroll = timelineScroll();
    ui.chat.hidden = !chatInFront;
    ui.skipLink.hidden = !chatInFront;
    ui.appView.hidden = !dashboard;
    ui.placeholder.hidden = chatInFront || dashboard;
    if (dashboard) {
      renderTaskDashboard(front.instance_id, entry.appScope, entry.view);
    } else {
      dropDashboard();
    }
    if (!chatInFront && !dashboard) {
      const title = instanceTitle(front);
      ui.placeholder.querySelector("p").textContent =
        entry === undefined && shell.resuming.has(front.instance_id)
          ? `Resuming ${title}…`
          : entry === undefined && front.state === "starting"
            ? `Opening ${title}…`
            : `${title} is in front. This Shell cannot show its view yet; ` +
              "switch back to the conversation with the bar above.";
    }

    const chat = shell.chatInstance === null ? undefined : shell.views.get(shell.chatInstance);
    const chatView = chat && chat.view.kind === "chat.timeline" ? chat.view : null;
    // Only a new chat snapshot or item re-renders the timeline (and re-enables Retry).
    if (chatView !== shell.chatView || shell.renderedItems !== shell.itemsVersion) {
      shell.chatView = chatView;
      shell.renderedItems = shell.itemsVersion;
      renderChat(chatView);
    }
    if (!chatWasShown && chatInFront) restoreTimelineScroll();

    // Focus that was on something now hidden or gone moves to what took its place.
    const now = document.activeElement;
    if (focused && focused !== document.body && (!now || now === document.body || !isShown(now))) {
      focusFront(chatInFront);
    }
  }

  const isShown = (element) => document.contains(element) && element.closest("[hidden]") === null;

  function focusFront(chatInFront) {
    if (chatInFront) {
      (ui.input.disabled ? ui.timeline : ui.input).focus();
    } else if (shell.dashboard !== null) {
      shell.dashboard.heading.focus();
    }
  }

  function timelineScroll() {
    const t = ui.timeline;
    const atBottom = t.scrollHeight - t.scrollTop - t.clientHeight < NEAR_BOTTOM_PX;
    return { top: t.scrollTop, atBottom };
  }

  function restoreTimelineScroll() {
    const saved = shell.chatScroll;
    shell.chatScroll = null;
    const t = ui.timeline;
    t.scrollTop = saved === null || saved.atBottom ? t.scrollHeight : saved.top;
  }

  function renderChat(view) {
    const items = view ? sortedItems() : [];
    const timeline = ui.timeline;
    const distance = timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight;
    const stickToBottom = distance < NEAR_BOTTOM_PX;

    const next = new Map();
    const elements = [];
    for (const item of items) {
      if (!isId(item.id) || next.has(item.id)) continue;
      const key = shell.items.get(item.id).version;
      const old = shell.rendered.get(item.id);
      const element = old && old.key === key ? old.element : renderMessage(item);
      const retry = element.querySelector('[data-testid="retry"]');
      if (retry) retry.disabled = false;
      next.set(item.id, { key, element });
      elements.push(element);
    }
    // Move only what changed, so unchanged messages are not re-announced by the live region.
    let cursor = timeline.firstChild;
    for (const element of elements) {
      if (element === cursor) {
        cursor = cursor.nextSibling;
      } else {
        timeline.insertBefore(element, cursor);
      }
    }
    while (cursor) {
      const following = cursor.nextSibling;
      cursor.remove();
      cursor = following;
    }
    shell.rendered = next;
    ui.empty.hidden = elements.length > 0;
    ui.earlier.hidden = !(view && shell.moreItems && elements.length > 0);
    ui.earlier.disabled = false;
    shell.composerEnabled = Boolean(view && isObject(view.composer) && view.composer.enabled === true);
    updateComposer();
    if (stickToBottom) timeline.scrollTop = timeline.scrollHeight;
  }

  function renderMessage(item) {
    const author = item.author === "user" ? "user" : "agent";
    const state = ["received", "pending", "sent", "failed"].includes(item.state)
      ? item.state
      : "received";
    const li = document.createElement("li");
    li.className = `message from-${author}`;
    li.setAttribute("data-testid", "message");
    li.setAttribute("data-author", author);
    li.setAttribute("data-state", state);
    li.setAttribute("data-message-id", item.id);

    const who = document.createElement("span");
    who.className = "visually-hidden";
    who.textContent = `${AUTHORS[author]}: `;
    li.append(who);

    const bubble = document.createElement("div");
    bubble.className = "bubble";
    bubble.setAttribute("data-testid", "message-body");
    renderNodes(item.tree, bubble, 0);
    li.append(bubble);

    const meta = document.createElement("div");
    meta.className = "meta";
    const at = Number(item.at);
    if (Number.isFinite(at) && at > 0) {
      const date = new Date(at * 1000);
      const time = document.createElement("time");
      time.setAttribute("datetime", date.toISOString());
      time.setAttribute("title", date.toLocaleString());
      time.textContent = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
      meta.append(time);
    }
    if (state === "pending") {
      const status = document.createElement("span");
      status.className = "status status-pending";
      status.setAttribute("data-testid", "message-status");
      status.textContent = "sending…";
      meta.append(status);
    } else if (state === "failed") {
      const status = document.createElement("span");
      status.className = "status status-failed";
      status.setAttribute("data-testid", "message-status");
      status.textContent = "Not sent";
      const retry = document.createElement("button");
      retry.type = "button";
      retry.className = "retry";
      retry.setAttribute("data-testid", "retry");
      retry.setAttribute("aria-label", "Retry sending this message");
      retry.textContent = "Retry";
      retry.addEventListener("click", () => {
        const instanceId = shell.chatInstance;
        if (instanceId === null) return;
        const sent = send({
          type: "ui.event",
          app_scope: "chat",
          instance_id: instanceId,
          event: { kind: "message.retry", message_id: item.id },
        });
        if (sent) retry.disabled = true; // until the next snapshot says what became of it
      });
      meta.append(status, retry);
    }
    li.append(meta);
    return li;
  }

  // The Markdown token tree → DOM. Unknown nodes keep only their text; past the depth cap,
  // containers are flattened into their parent.
  function renderNodes(nodes, parent, depth) {
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
      const code = document.createElement("code");
      code.textContent = String(node.v ?? "");
      parent.append(code);
    } else if (t === "pre") {
      const pre = document.createElement("pre");
      const code = document.createElement("code");
      code.textContent = String(node.v ?? "");
      if (typeof node.lang === "string" && /^[\w+#.-]{1,32}$/.test(node.lang)) {
        pre.setAttribute("data-lang", node.lang);
      }
      pre.append(code);
      parent.append(pre);
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

  function safeHref(href) {
    if (typeof href !== "string") return null;
    try {
      const url = new URL(href);
      return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
    } catch {
      return null; // relative or malformed: not a link
    }
  }

  // ---------------------------------------------------------------- task dashboard

  // The Task Dashboard's trusted component: built once per instance, then updated in place
  // from each snapshot, so a progress update neither rebuilds the buttons nor moves focus.
  function renderTaskDashboard(instanceId, appScope, view) {
    if (shell.dashboard === null || shell.dashboard.instanceId !== instanceId) {
      shell.dashboard = buildTaskDashboard(instanceId);
      ui.appView.replaceChildren(shell.dashboard.root);
    }
    const dash = shell.dashboard;
    if (dash.view === view) return; // not a new snapshot: nothing to update
    dash.view = view;
    dash.appScope = appScope;
    const task = isObject(view.task) ? view.task : {};
    const title = typeof task.title === "string" && task.title.trim() ? task.title : "Untitled";
    dash.heading.textContent = title.slice(0, 500);
    dash.root.setAttribute("data-task-id", isId(task.task_id) ? task.task_id : "");

    const progress = Number.isFinite(task.progress)
      ? Math.min(100, Math.max(0, Math.round(task.progress)))
      : 0;
    dash.bar.setAttribute("value", String(progress));
    dash.bar.setAttribute("data-progress", String(progress));
    dash.percent.textContent = `${progress}%`;

    const status = Object.hasOwn(TASK_STATUSES, task.status) ? task.status : "unknown";
    dash.root.setAttribute("data-status", status);
    dash.status.setAttribute("data-status", status);
    dash.status.textContent = TASK_STATUSES[status] ?? "Unknown";

    const names = [];
    for (const name of Array.isArray(view.actions) ? view.actions : []) {
      if (Object.hasOwn(TASK_ACTIONS, name) && !names.includes(name)) names.push(name);
    }
    const key = names.join(" ");
    if (key === dash.actionsKey) {
      // A new snapshot answers whatever was clicked: the buttons work again.
      for (const button of dash.actions.children) button.removeAttribute("aria-disabled");
    } else {
      const hadFocus = dash.actions.contains(document.activeElement);
      dash.actions.replaceChildren(...names.map((name) => taskActionButton(dash, name)));
      dash.actions.hidden = names.length === 0;
      dash.actionsKey = key;
      if (hadFocus) (dash.actions.firstElementChild ?? dash.heading).focus();
    }
  }

  function buildTaskDashboard(instanceId) {
    const make = (tag, className, testId) => {
      const element = document.createElement(tag);
      element.className = className;
      if (testId) element.setAttribute("data-testid", testId);
      return element;
    };
    const root = make("article", "task-dashboard", "task-dashboard");
    root.setAttribute("data-instance-id", instanceId);
    root.setAttribute("aria-labelledby", "task-title");

    const header = make("div", "task-header");
    const eyebrow = make("p", "task-eyebrow");
    eyebrow.textContent = "Task";
    const status = make("span", "task-status", "task-status");
    status.setAttribute("role", "status"); // a changed state is announced
    header.append(eyebrow, status);

    const heading = make("h2", "task-title", "task-title");
    heading.id = "task-title";
    heading.setAttribute("tabindex", "-1");

    const progress = make("div", "task-progress");
    const labels = make("div", "task-progress-labels");
    const label = make("span", "task-progress-label");
    label.id = "task-progress-label";
    label.textContent = "Progress";
    const percent = make("span", "task-progress-value", "task-progress-value");
    percent.setAttribute("aria-hidden", "true"); // the bar itself tells assistive technology
    labels.append(label, percent);
    const bar = make("progress", "task-progress-bar", "task-progress");
    bar.setAttribute("max", "100");
    bar.setAttribute("aria-labelledby", "task-progress-label");
    progress.append(labels, bar);

    const actions = make("div", "task-actions");
    actions.setAttribute("role", "group");
    actions.setAttribute("aria-label", "Task actions");

    root.append(header, heading, progress, actions);
    const parts = { root, heading, status, bar, percent, actions };
    return { instanceId, appScope: "", view: null, actionsKey: null, ...parts };
  }

  function taskActionButton(dash, name) {
    const action = TASK_ACTIONS[name];
    const button = document.createElement("button");
    button.type = "button";
    button.className = `task-action task-action-${action.tone}`;
    button.setAttribute("data-testid", action.testId);
    button.textContent = action.label;
    button.addEventListener("click", () => {
      if (button.getAttribute("aria-disabled") === "true") return;
      const sent = send({
        type: "ui.event",
        app_scope: dash.appScope,
        instance_id: dash.instanceId,
        event: { kind: action.event },
      });
      // aria-disabled, not disabled: the button keeps focus until the next snapshot.
      if (sent) button.setAttribute("aria-disabled", "true");
    });
    return button;
  }

  function dropDashboard() {
    if (shell.dashboard === null) return;
    shell.dashboard = null;
    ui.appView.replaceChildren();
  }

  // ---------------------------------------------------------------- app switcher

  // One button per live instance, in focus-stack order (bottom first), the foreground marked;
  // every non-chat instance also gets a close button. Rebuilt from each shell.apps, keeping
  // keyboard focus on the same instance's button.
  function renderSwitcher() {
    const active = document.activeElement;
    const refocus =
      active && ui.appList.contains(active)
        ? [active.getAttribute("data-testid"), active.getAttribute("data-instance-id")]
        : null;
    ui.switcher.hidden = shell.instances.length === 0;
    const items = shell.instances.map((instance) => {
      const li = document.createElement("li");
      li.className = "app";
      const inFront = instance.instance_id === shell.foreground;
      const title = instanceTitle(instance);
      const tab = document.createElement("button");
      tab.type = "button";
      tab.className = "app-tab";
      tab.setAttribute("data-testid", "app-tab");
      tab.setAttribute("data-instance-id", instance.instance_id);
      tab.setAttribute("data-app-scope", String(instance.app_scope));
      // The latest shell.apps decides what is in front, whatever an instance's own state says.
      const state = String(instance.state ?? "background");
      const shown = inFront ? "foreground" : state === "foreground" ? "background" : state;
      tab.setAttribute("data-state", shown);
      if (inFront) tab.setAttribute("aria-current", "page");
      tab.textContent = title;
      // A suspended instance has no process since the runtime restarted: opening it resumes it.
      if (shown === "suspended") {
        const note = document.createElement("span");
        note.className = "app-tab-note";
        note.setAttribute("data-testid", "app-tab-note");
        note.textContent = " · Suspended — open to resume";
        tab.append(note);
        tab.setAttribute("title", `${title} is suspended; open it to resume it`);
      }
      tab.addEventListener("click", () => {
        if (instance.instance_id !== shell.foreground) {
          const sent = send({
            type: "ui.intent",
            intent: "focus",
            instance_id: instance.instance_id,
          });
          if (sent && shown === "suspended") shell.resuming.add(instance.instance_id);
        }
      });
      li.append(tab);
      if (instance.app_scope !== "chat") {
        const close = document.createElement("button");
        close.type = "button";
        close.className = "app-close";
        close.setAttribute("data-testid", "app-close");
        close.setAttribute("data-instance-id", instance.instance_id);
        close.setAttribute("aria-label", `Close ${title}`);
        close.setAttribute("title", `Close ${title}`);
        close.textContent = "×";
        close.addEventListener("click", () => {
          send({ type: "ui.intent", intent: "close", instance_id: instance.instance_id });
        });
        li.append(close);
      }
      return li;
    });
    ui.appList.replaceChildren(...items);
    if (refocus !== null) {
      const buttons = [...ui.appList.querySelectorAll("button")];
      const same = buttons.find(
        (b) =>
          b.getAttribute("data-testid") === refocus[0] &&
          b.getAttribute("data-instance-id") === refocus[1],
      );
      const target = same ?? buttons.find((b) => b.getAttribute("aria-current") === "page");
      if (target) target.focus();
    }
  }

  function addNotice(level, text) {
    if (typeof text !== "string" || !text) return;
    const notice = document.createElement("div");
    notice.className = `notice notice-${level}`;
    notice.setAttribute("data-testid", "notice");
    notice.setAttribute("data-level", level);
    notice.setAttribute("role", level === "error" ? "alert" : "status");
    const body = document.createElement("span");
    body.className = "notice-text";
    body.textContent = text.slice(0, 2000);
    const dismiss = document.createElement("button");
    dismiss.type = "button";
    dismiss.className = "notice-dismiss";
    dismiss.setAttribute("aria-label", "Dismiss notification");
    dismiss.textContent = "×";
    dismiss.addEventListener("click", () => notice.remove());
    notice.append(body, dismiss);
    ui.notices.append(notice);
    while (ui.notices.children.length > MAX_NOTICES) ui.notices.firstElementChild.remove();
    if (level === "info") window.setTimeout(() => notice.remove(), INFO_NOTICE_MS);
  }

  // ---------------------------------------------------------------- composer

  function canSend() {
    return shell.connected && shell.composerEnabled && shell.chatInstance !== null;
  }

  function updateComposer() {
    // The text stays editable while the socket is down (a draft survives a reconnect); the
    // chat app's own "composer.enabled: false" disables it outright.
    ui.input.disabled = !shell.composerEnabled;
    ui.send.disabled = !canSend();
  }

  function submit() {
    const text = ui.input.value;
    if (!text.trim() || !canSend()) return;
    const sent = send({
      type: "ui.event",
      app_scope: "chat",
      instance_id: shell.chatInstance,
      // The id makes a resubmit after a lost connection harmless: the chat keeps one message.
      event: { kind: "composer.submit", text, client_id: crypto.randomUUID() },
    });
    if (sent) {
      ui.input.value = "";
      ui.input.focus();
    }
  }

  ui.earlier.addEventListener("click", askEarlier);
  ui.composer.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  ui.input.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    submit();
  });

  // The new link opened in this same tab changes only the fragment, which reloads nothing:
  // the Shell takes the new token itself and connects again, even after it gave up.
  window.addEventListener("hashchange", () => {
    if (!new URLSearchParams(window.location.hash.slice(1)).get("token")) return;
    const token = readToken();
    if (token === shell.token && !shell.gaveUp) return;
    shell.token = token;
    shell.gaveUp = false;
    shell.items.clear(); // another run's link: its messages are its own
    shell.itemsVersion += 1;
    shell.attempt = 0;
    if (shell.retryTimer !== null) {
      window.clearTimeout(shell.retryTimer);
      shell.retryTimer = null;
    }
    const previous = shell.socket;
    shell.socket = null; // its close event is then ignored
    shell.connected = false;
    if (previous !== null) previous.close();
    connect();
  });

  // ---------------------------------------------------------------- start

  shell.token = readToken();
  setRuntimeState("unknown");
  if (shell.token) {
    connect();
  } else {
    setRuntimeState("disconnected");
    showBanner("No access token. Open the address printed by `lineup run`.");
  }
})();
