// The navigator's Surface: it uses the SDK's bridge client (`_lineup/bridge.js`) for the
// Surface's share of its app's SDK, and keeps what each call got in `window.__got` (a value,
// or `!code` for a refusal), which the browser test reads.
(function () {
  "use strict";
  const bridge = window.LineUpBridge;
  window.__got = {};

  // Run `call` (a function of the bridge) and keep its outcome under `name`.
  window.attempt = function (name, call) {
    return Promise.resolve()
      .then(function () {
        return call(bridge);
      })
      .then(
        function (value) {
          window.__got[name] = value;
        },
        function (error) {
          window.__got[name] = "!" + (error && error.code ? error.code : "unknown");
        }
      );
  };

  bridge
    .initialize({ name: "navigator-panel", version: "1.0.0" })
    .then(function () {
      document.body.dataset.ready = "1";
    })
    .catch(function () {
      document.body.dataset.ready = "failed";
    });
})();
