// A page of our own on the published ext-apps `App` class (its `app-with-deps.js`, copied from
// npm beside this file by the test): every host method it has, called as the class calls them,
// each answer checked by the class's own schemas. What the host said and did is kept for the
// test (`window.__seen`); `window.call(method, params)` runs one `App` method.
import { App, PostMessageTransport } from "./app-with-deps.js";

const seen = { toolinput: [], toolresult: [], toolcancelled: [], contexts: [], teardowns: 0 };
window.__seen = seen;

const app = new App({ name: "lineup-ext-apps-page", version: "1.0.0" }, {}, { autoResize: true });
app.ontoolinput = (params) => {
  seen.toolinput.push(params);
  document.getElementById("input").textContent = JSON.stringify(params.arguments);
};
app.ontoolresult = (params) => {
  seen.toolresult.push(params);
  document.getElementById("result").textContent = JSON.stringify(params.structuredContent);
};
app.ontoolcancelled = (params) => seen.toolcancelled.push(params);
app.onhostcontextchanged = (params) => seen.contexts.push(params);
app.onteardown = async () => {
  seen.teardowns += 1;
  console.log("teardown answered"); // what the test hears: the frame is gone right after
  return {};
};

// One `App` method, its answer or its error as data.
window.call = async (method, params) => {
  try {
    return { result: (await app[method](params)) ?? null };
  } catch (error) {
    return { error: { message: String(error?.message ?? error), code: error?.code ?? null } };
  }
};

await app.connect(new PostMessageTransport(window.parent, window.parent));
seen.host = {
  version: app.getHostVersion(),
  capabilities: app.getHostCapabilities(),
  context: app.getHostContext(),
};
document.body.dataset.state = "ready";
