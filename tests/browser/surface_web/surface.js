// A minimal Surface for the browser tests (tests/browser/test_surface_render.py): a tiny
// JSON-RPC client over postMessage that the test drives from inside the frame
// (`frame.evaluate`). A classic script: a sandboxed frame's origin is opaque, and a module
// script would be a CORS load its CSP-ed server does not allow.
(function () {
  "use strict";
  let nextId = 1;
  const pending = new Map();
  window.__received = []; // every message the host sent, in order
  window.__holdTeardown = false; // true: do not answer ui/resource-teardown

  window.post = function (message) {
    window.parent.postMessage(message, "*");
  };
  window.rpc = function (method, params) {
    const id = nextId++;
    const message = { jsonrpc: "2.0", id: id, method: method };
    if (params !== undefined) message.params = params;
    return new Promise(function (resolve) {
      pending.set(id, resolve);
      window.post(message);
    });
  };
  window.notify = function (method, params) {
    const message = { jsonrpc: "2.0", method: method };
    if (params !== undefined) message.params = params;
    window.post(message);
  };
  window.handshake = async function () {
    const answer = await window.rpc("ui/initialize", { protocolVersion: "2026-01-26" });
    window.notify("ui/notifications/initialized", {});
    return answer;
  };
  window.addEventListener("message", function (event) {
    if (event.source !== window.parent) return;
    const message = event.data;
    window.__received.push(message);
    if (message && message.method === undefined && pending.has(message.id)) {
      pending.get(message.id)(message);
      pending.delete(message.id);
    }
    if (message && message.method === "ui/resource-teardown") {
      console.log("surface-teardown:" + message.params.reason); // the test reads the console
      if (!window.__holdTeardown) window.post({ jsonrpc: "2.0", id: message.id, result: {} });
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.getElementById("status").textContent = "ready";
    document.body.setAttribute("data-ready", "1");
  });
})();
