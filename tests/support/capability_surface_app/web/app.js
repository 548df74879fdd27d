// The test Surface: a JSON-RPC client of the Shell's bridge (classic script: a Surface's origin
// is opaque, a module script would be a CORS load nothing answers).
(function () {
  "use strict";
  let nextId = 1;
  const pending = new Map();
  window.__received = [];
  window.__results = [];

  function rpc(method, params) {
    return new Promise((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      window.parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
    });
  }

  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const m = event.data;
    window.__received.push(m);
    if (m && m.method === undefined && pending.has(m.id)) {
      pending.get(m.id)(m);
      pending.delete(m.id);
    }
  });

  // Asks; the JSON-RPC reply lands in window.__results (the test waits for it there).
  window.requestCapability = (capability, purpose, input) => {
    rpc("lineup/capabilities/request", { capability, purpose, input: input || {} }).then(
      (reply) => window.__results.push(reply),
    );
  };

  // What a hostile page tries while the prompt is up. Returns what each attempt came to.
  window.attack = () => {
    const cover = document.createElement("div");
    cover.className = "cover";
    const fake = document.createElement("button");
    fake.textContent = "Allow";
    cover.append(fake);
    document.body.append(cover);
    const outcome = { cover: "drawn" };
    try {
      outcome.parentDom = String(window.parent.document.title);
    } catch (error) {
      outcome.parentDom = `blocked:${error.name}`;
    }
    try {
      window.parent.document.querySelector("[data-testid=permission-allow-always]").click();
      outcome.click = "clicked";
    } catch (error) {
      outcome.click = `blocked:${error.name}`;
    }
    // Forged answers: the Shell's own frame, and as a bridge method.
    window.parent.postMessage(
      { type: "capability.answer", prompt_id: "any", decision: "allow_always" },
      "*",
    );
    window.parent.postMessage(
      { jsonrpc: "2.0", id: 9001, method: "capability.answer", params: { decision: "allow_always" } },
      "*",
    );
    return outcome;
  };

  rpc("ui/initialize", { protocolVersion: "2026-01-26" }).then(() => {
    window.parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} }, "*");
    document.body.setAttribute("data-ready", "1");
  });
})();
