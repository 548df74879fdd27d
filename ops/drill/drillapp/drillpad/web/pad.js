"use strict";
// The drill pad in a real Shell: the handshake, its session data, its size. The drill itself
// speaks the same bridge requests on the Shell's socket, as this page would.
(async () => {
  const bridge = window.LineUpBridge;
  await bridge.initialize({ name: "lineup-drill-pad", version: "1.0.0" });
  await bridge.request("lineup/session-data/subscribe", {});
  bridge.trackSize();
})();
